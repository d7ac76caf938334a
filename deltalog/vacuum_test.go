package deltalog

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"
)

// An add may name its file by an absolute URI (docs/reference/delta-protocol.md §2.4:
// "relative to the table root, or absolute"; Spark writes them for clones and restores).
// Vacuum compares listed keys with the log's paths: an absolute path to a file under the
// table root is that file, live, and must never be deleted.
func TestVacuumKeepsLiveFilesNamedByAbsolutePaths(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{})
	for _, k := range []string{"part-abs.parquet", "sub dir/part-abs-escaped.parquet", "part-orphan.parquet"} {
		if err := s.Put(ctx, k, bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
	}
	tx := tbl.Begin(snapshot(t, tbl))
	if err := tx.SetSchema(testSchema); err != nil {
		t.Fatal(err)
	}
	tx.Add(
		Add{Path: s.URL() + "/part-abs.parquet", Size: 1, DataChange: true},
		Add{Path: s.URL() + "/sub%20dir/part-abs-escaped.parquet", Size: 1, DataChange: true},
	)
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c.t = day0.Add(30 * 24 * time.Hour)
	res, err := tbl.Vacuum(ctx, VacuumOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"part-orphan.parquet"}; !slices.Equal(res.Deleted, want) {
		t.Fatalf("deleted %v, want %v", res.Deleted, want)
	}
	if res.Protected != 2 {
		t.Fatalf("protected %d, want 2", res.Protected)
	}
}

func TestTableKey(t *testing.T) {
	for _, c := range []struct {
		root, path, key string
		ok              bool
	}{
		{"s3://b/t", "part-1.parquet", "part-1.parquet", true},
		{"s3://b/t", "p%3D1/a%20b.parquet", "p=1/a b.parquet", true},
		{"s3://b/t", "s3a://b/t/p=1/part-1.parquet", "p=1/part-1.parquet", true},
		{"s3://b/t", "s3://b/t/a%20b.parquet", "a b.parquet", true},
		{"s3://b/t", "s3://b/t2/part-1.parquet", "", false},
		{"s3://b/t", "s3://other/t/part-1.parquet", "", false},
		{"file:///data/t", "file:/data/t/part-1.parquet", "part-1.parquet", true},
		{"file:///data/t", "file:///data/t/part-1.parquet", "part-1.parquet", true},
		{"file:///data/t", "/data/t/part-1.parquet", "part-1.parquet", true},
		{"file:///data/t", "/data/other/part-1.parquet", "", false},
	} {
		root, err := url.Parse(c.root)
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := tableKey(root, c.path); k != c.key || ok != c.ok {
			t.Errorf("tableKey(%s, %s) = %q, %v; want %q, %v", c.root, c.path, k, ok, c.key, c.ok)
		}
	}
}

// Vacuum tells Progress how its listing goes, every ProgressEvery objects, with the
// result so far, so a CLI can show progress on a table of many files (issue 12 item 12).
func TestVacuumReportsProgress(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{})
	for i := range 6 {
		k := fmt.Sprintf("part-orphan-%d.parquet", i)
		if err := s.Put(ctx, k, bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
	}
	tx := tbl.Begin(snapshot(t, tbl))
	if err := tx.SetSchema(testSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c.t = day0.Add(30 * 24 * time.Hour)
	var calls []int
	last := VacuumResult{}
	res, err := tbl.Vacuum(ctx, VacuumOptions{DryRun: true, ProgressEvery: 2, Progress: func(listed int, so VacuumResult) {
		calls = append(calls, listed)
		last = so
	}})
	if err != nil {
		t.Fatal(err)
	}
	// 6 data files listed, reported at 2, 4 and 6; _delta_log/ (the commit) is not listed.
	if !slices.Equal(calls, []int{2, 4, 6}) {
		t.Fatalf("progress at %v, want [2 4 6]", calls)
	}
	if len(res.Deleted) != 6 || len(last.Deleted) > len(res.Deleted) || len(last.Deleted) < 5 {
		t.Fatalf("deleted %d, last progress %d so far", len(res.Deleted), len(last.Deleted))
	}
}
