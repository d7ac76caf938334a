package deltalog

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// Temporary commit files of decided versions (or versions log clean-up removed) and the
// store's own unfinished writes are deleted once older than the minimum age; a temporary
// file of a version with no commit file yet is kept whatever its age (recovery may
// complete it), and so is anything younger.
func TestCleanupTempFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tbl := Open(st, plainLogStore{st}, Options{Now: func() time.Time { return now }})
	write := func(rel string, age time.Duration) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	old, young := 48*time.Hour, time.Hour
	write("_delta_log/00000000000000000003.json", old) // log clean-up left 3 and 4
	write("_delta_log/00000000000000000004.json", old)
	write("_delta_log/.tmp/00000000000000000001.json.aaa", old)   // below the oldest commit: delete
	write("_delta_log/.tmp/00000000000000000004.json.bbb", old)   // version committed: delete
	write("_delta_log/.tmp/00000000000000000004.json.ccc", young) // too young: keep
	write("_delta_log/.tmp/00000000000000000005.json.ddd", old)   // not committed: keep
	write("_delta_log/_commit_0f1e.json.tmp", old)                // delta-rs: delete
	write("_delta_log/.localstore-123.tmp", old)                  // unfinished write: delete
	write("part-1.parquet", old)
	write(".localstore-456.tmp", old)   // delete
	write(".localstore-789.tmp", young) // keep

	want := []string{"_delta_log/.tmp/00000000000000000001.json.aaa", "_delta_log/.tmp/00000000000000000004.json.bbb",
		"_delta_log/_commit_0f1e.json.tmp", ".localstore-456.tmp", "_delta_log/.localstore-123.tmp"}
	got, err := tbl.CleanupTempFiles(ctx, TempFileOptions{DryRun: true})
	if err != nil || !slices.Equal(got.Deleted, want) {
		t.Fatalf("dry run %v, %v\nwant %v", got, err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, ".localstore-456.tmp")); err != nil {
		t.Fatalf("dry run deleted: %v", err)
	}
	got, err = tbl.CleanupTempFiles(ctx, TempFileOptions{})
	if err != nil || !slices.Equal(got.Deleted, want) {
		t.Fatalf("run %v, %v", got, err)
	}
	for _, k := range want {
		if _, err := os.Stat(filepath.Join(dir, k)); !os.IsNotExist(err) {
			t.Fatalf("%s not deleted: %v", k, err)
		}
	}
	for _, k := range []string{"_delta_log/.tmp/00000000000000000004.json.ccc", "_delta_log/.tmp/00000000000000000005.json.ddd",
		"part-1.parquet", ".localstore-789.tmp", "_delta_log/00000000000000000003.json"} {
		if _, err := os.Stat(filepath.Join(dir, k)); err != nil {
			t.Fatalf("%s deleted: %v", k, err)
		}
	}
	if got, err := tbl.CleanupTempFiles(ctx, TempFileOptions{}); err != nil || len(got.Deleted) != 0 {
		t.Fatalf("second run %v, %v", got, err)
	}
}
