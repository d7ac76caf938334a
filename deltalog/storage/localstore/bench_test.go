package localstore_test

import (
	"fmt"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// BenchmarkListLogTail lists the last commits of a 10,000-commit _delta_log, as a reader
// does after reading _last_checkpoint.
func BenchmarkListLogTail(b *testing.B) {
	s, err := localstore.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for v := range 10000 {
		if err := s.PutIfAbsent(b.Context(), fmt.Sprintf("_delta_log/%020d.json", v), []byte("{}\n")); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		n := 0
		for _, err := range s.List(b.Context(), "_delta_log/", "_delta_log/00000000000000009990") {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 10 {
			b.Fatalf("listed %d, want 10", n)
		}
	}
}
