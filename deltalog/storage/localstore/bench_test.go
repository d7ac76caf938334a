package localstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// BenchmarkListLogTail lists the last commits of a 10,000-commit _delta_log, as a reader
// does after reading _last_checkpoint: "quiet" when the log last changed seconds ago (a
// reader opening a table), "busy" when a commit landed just before each listing (a
// writer's own next commit), which defeats the listing cache.
func BenchmarkListLogTail(b *testing.B) {
	dir := b.TempDir()
	// The files are written directly: 10,000 synced PutIfAbsent calls take a minute on a
	// busy disk, and listing does not care how the files were made.
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		b.Fatal(err)
	}
	for v := range 10000 {
		if err := os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)), []byte("{}\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	list := func(b *testing.B, s *localstore.Store) {
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
	b.Run("quiet", func(b *testing.B) {
		s, err := localstore.New(dir)
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(2100 * time.Millisecond) // the log's last change is older than the cache's quiet time
		b.ResetTimer()
		for range b.N {
			list(b, s)
		}
	})
	b.Run("busy", func(b *testing.B) {
		s, err := localstore.New(dir)
		if err != nil {
			b.Fatal(err)
		}
		touch := filepath.Join(dir, "_delta_log", "_touch")
		for i := range b.N {
			b.StopTimer()
			if err := os.WriteFile(touch, fmt.Appendf(nil, "%d", i), 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.Remove(touch); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			list(b, s)
		}
	})
}
