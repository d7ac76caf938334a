package deltalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
)

// A Table's first open through a log store whose Latest is a listing (conditional put,
// local disk) reads _last_checkpoint once and lists the log once: the latest version comes
// from its own listing (logstore.Lister), not from a Latest that would read and list
// again. The next open lists from what the first saw, and an empty log, once listed, is
// listed again without reading _last_checkpoint. Each snapshot equals the one a Table
// that asks Latest first reads.
func TestFirstOpenReadsTheLogOnce(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		commits int
		// commitGets are the commit files the first open reads (after the checkpoint).
		commitGets int
	}{
		{"no checkpoint", 4, 4},
		{"after checkpoint 10", 13, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			deltatest.AppendIDs(t, openCondPut(t, dir, &deltatest.Faults{}), 0, tc.commits)
			f := &deltatest.Faults{}
			tbl := openCondPut(t, dir, f)
			snap, err := tbl.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Version() != int64(tc.commits-1) || snap.NumFiles() != tc.commits {
				t.Fatalf("version %d with %d files, want %d with %d", snap.Version(), snap.NumFiles(), tc.commits-1, tc.commits)
			}
			var lc, lists, commits int
			for _, op := range f.Ops() {
				switch {
				case strings.HasSuffix(op, "_last_checkpoint"):
					lc++
				case strings.HasPrefix(op, "store.List"):
					lists++
				case strings.HasSuffix(op, ".json"):
					commits++
				}
			}
			if lc != 1 || lists != 1 || commits != tc.commitGets {
				t.Errorf("first open: %d reads of _last_checkpoint, %d listings, %d commit reads; want 1, 1, %d: %q",
					lc, lists, commits, tc.commitGets, f.Ops())
			}
			n := len(f.Ops())
			if again, err := tbl.Snapshot(ctx); err != nil || again.Version() != snap.Version() {
				t.Fatalf("second open: %v, %v", again, err)
			}
			if ops := f.Ops()[n:]; len(ops) != 1 || !strings.HasPrefix(ops[0], "store.List") {
				t.Errorf("second open: %q, want one listing", ops)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		f := &deltatest.Faults{}
		tbl := openCondPut(t, t.TempDir(), f)
		for i, want := range []int{2, 1, 1} {
			n := len(f.Ops())
			snap, err := tbl.Snapshot(ctx)
			if err != nil || snap.Version() != -1 {
				t.Fatalf("open %d: %v, %v", i, snap, err)
			}
			if ops := f.Ops()[n:]; len(ops) != want {
				t.Errorf("open %d of an empty table: %q, want %d requests", i, ops, want)
			}
		}
		deltatest.AppendIDs(t, tbl, 0, 1)
		if snap, err := deltalog.Open(tbl.Store(), tbl.LogStore(), deltalog.Options{}).Snapshot(ctx); err != nil || snap.Version() != 0 {
			t.Fatalf("after the first commit: %v, %v", snap, err)
		}
	})
}
