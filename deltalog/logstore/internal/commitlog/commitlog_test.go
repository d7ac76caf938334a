package commitlog

import (
	"fmt"
	"os"
	"path/filepath"
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
	for _, bad := range []string{"12.json", "00000000000000000012.checkpoint.parquet", "0000000000000000001x.json", "_last_checkpoint", "00000000000000000012.json.tmp",
		"+0000000000000000012.json", "-0000000000000000012.json", "0000000000000000012.json", "99999999999999999999.json"} {
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
	// "+" and 19 digits is no commit file of version 4 (docs/reference/delta-protocol.md
	// §1.1: exactly 20 digits), though strconv.ParseInt reads it as 4.
	if err := s.PutIfAbsent(ctx, Dir+"+0000000000000000004.json", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if v, ok := ParseKey(Dir + "+0000000000000000004.json"); ok {
		t.Errorf("ParseKey took the sign-prefixed name for version %d", v)
	}
	for _, hint := range []int64{-1, 0, 3} {
		if v, err := Latest(ctx, s, hint); err != nil || v != 3 {
			t.Errorf("with a sign-prefixed name, Latest(hint %d) = %d, %v; want 3", hint, v, err)
		}
	}
	if err := s.Put(ctx, Dir+"_last_checkpoint", strings.NewReader(`{"version":2,"size":4}`), -1); err != nil {
		t.Fatal(err)
	}
	if v, err := Latest(ctx, s, -1); err != nil || v != 3 {
		t.Errorf("with _last_checkpoint: %d, %v", v, err)
	}
}

// LatestFrom lists from the known version's own commit file: the file there with the
// known ETag is the log known; gone, or with another ETag, the log was replaced.
func TestLatestFrom(t *testing.T) {
	dir := t.TempDir()
	s, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	tags := map[int64]string{}
	for v := range int64(4) {
		if tags[v], err = s.PutIfAbsentTag(ctx, Key(v), []byte(fmt.Sprintf("old %d", v))); err != nil {
			t.Fatal(err)
		}
	}
	for _, known := range []int64{0, 2, 3} {
		if l, err := LatestFrom(ctx, s, known, tags[known]); err != nil || l.Version != 3 || l.Replaced || l.ETag != tags[3] {
			t.Errorf("LatestFrom(%d, its tag) = %+v, %v; want 3, not replaced", known, l, err)
		}
		if l, err := LatestFrom(ctx, s, known, ""); err != nil || l.Version != 3 || l.Replaced {
			t.Errorf("LatestFrom(%d, no tag) = %+v, %v; want 3, not replaced", known, l, err)
		}
	}
	if l, err := LatestFrom(ctx, s, 3, "another"); err != nil || l.Version != 3 || !l.Replaced {
		t.Errorf("LatestFrom(3, another tag) = %+v, %v; want 3, replaced", l, err)
	}
	if l, err := LatestFrom(ctx, s, 5, ""); err != nil || l.Version != 3 || !l.Replaced {
		t.Errorf("LatestFrom(5) on a log of 4 = %+v, %v; want 3 (the whole log listed), replaced", l, err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "_delta_log")); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{0, 1} {
		if err := s.PutIfAbsent(ctx, Key(v), []byte(fmt.Sprintf("new %d", v))); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := LatestFrom(ctx, s, 1, tags[1]); err != nil || l.Version != 1 || !l.Replaced {
		t.Errorf("LatestFrom(1) on a new log = %+v, %v; want 1, replaced", l, err)
	}
	if l, err := LatestFrom(ctx, s, 3, tags[3]); err != nil || l.Version != 1 || !l.Replaced {
		t.Errorf("LatestFrom(3) on a new log of 2 = %+v, %v; want 1, replaced", l, err)
	}
}
