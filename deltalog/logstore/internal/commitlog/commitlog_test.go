package commitlog

import (
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

func TestNames(t *testing.T) {
	if got := Key(12); got != "_delta_log/00000000000000000012.json" {
		t.Fatalf("Key = %q", got)
	}
	for name, want := range map[string]int64{"00000000000000000012.json": 12, "00000000000000000000.json": 0} {
		if v, ok := ParseFileName(name); !ok || v != want {
			t.Errorf("ParseFileName(%q) = %d, %v", name, v, ok)
		}
	}
	for _, bad := range []string{"12.json", "00000000000000000012.checkpoint.parquet", "0000000000000000001x.json", "_last_checkpoint", "00000000000000000012.json.tmp"} {
		if _, ok := ParseFileName(bad); ok {
			t.Errorf("ParseFileName(%q) accepted", bad)
		}
	}
}

func TestLatest(t *testing.T) {
	s, err := localstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if v, err := Latest(ctx, s, -1); err != nil || v != -1 {
		t.Fatalf("empty log: %d, %v", v, err)
	}
	for _, k := range []string{Key(0), Key(1), Key(2), "_delta_log/00000000000000000002.checkpoint.parquet", "_delta_log/.tmp/00000000000000000003.json.u", Key(3)} {
		if err := s.PutIfAbsent(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, hint := range []int64{-1, 0, 2, 3, 7} {
		if v, err := Latest(ctx, s, hint); err != nil || v != 3 {
			t.Errorf("Latest(hint %d) = %d, %v; want 3", hint, v, err)
		}
	}
	if err := s.Put(ctx, Dir+"_last_checkpoint", strings.NewReader(`{"version":2,"size":4}`), -1); err != nil {
		t.Fatal(err)
	}
	if v, err := Latest(ctx, s, -1); err != nil || v != 3 {
		t.Errorf("with _last_checkpoint: %d, %v", v, err)
	}
}
