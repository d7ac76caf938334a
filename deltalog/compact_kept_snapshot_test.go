package deltalog

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// A stream's Table keeps its snapshot between batches; the maintain function compacts the
// same table from another process (its own Table). The stream's next blind append, begun
// from its kept snapshot from before the compaction, commits without a conflict; the
// Table's kept state then holds the compaction as what it is — the small files removed
// and one file added, both with dataChange false — and equals a fresh read. A second
// compaction is picked up by the kept snapshot's one-commit advance, and the append after
// it commits too. Rows and their order survive both.
func TestKeptSnapshotSeesCompaction(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	calls := &logCalls{LogStore: &memLogStore{s: s}}
	stream := Open(s, calls, Options{RetryBaseDelay: 1})
	maint := Open(s, &memLogStore{s: s}, Options{RetryBaseDelay: 1})
	opts := CompactOptions{Writer: parquetio.WriterOptions{TempDir: t.TempDir()}}

	appendBatches(t, stream, 0, 4) // versions 0..3, 40 rows
	kept := snapshot(t, stream)
	small := livePaths(kept)
	var want []string // in log order: file i holds 10i..10i+9
	for v := range 40 {
		want = append(want, strconv.Itoa(v))
	}
	if got := scanStrings(t, kept, "v"); !sameRows(got, want) {
		t.Fatalf("before: rows %v", got)
	}

	res, err := maint.Compact(ctx, opts)
	if err != nil || res.Commits != 1 || res.FilesRemoved != 4 || res.FilesAdded != 1 {
		t.Fatalf("compact: %+v, %v", res, err)
	}
	compaction := res.Version

	// The stream appends from its snapshot of before the compaction, as a batch begun
	// from the kept state does: a blind append, which the compaction does not conflict with.
	add := writeFile(t, stream, scanSchema, []scanRow{{app: "a", op: 2, v: 999}}, nil)
	got, err := commitAt(t, stream, kept, func(tx *Transaction) {
		tx.SetAppTxn("stream", 1)
		tx.Add(add)
	})
	if err != nil || got.Skipped || got.Version != compaction+1 {
		t.Fatalf("append over the compaction: %+v, %v; want version %d", got, err, compaction+1)
	}

	calls.reads.Store(0)
	after := snapshot(t, stream)
	if after.Version() != compaction+1 || calls.reads.Load() != 0 {
		t.Fatalf("kept snapshot at %d after %d commit reads, want %d from memory", after.Version(), calls.reads.Load(), compaction+1)
	}
	checkCompactedState(t, stream, after, small, want, append(slices.Clone(want), "999"))
	if ci, ok := after.CommitInfo(compaction); !ok || ci.Operation != "OPTIMIZE" {
		t.Fatalf("commitInfo of %d: %+v, %v", compaction, ci, ok)
	}

	// Compacted again (the big file and the appended one), then the kept snapshot advances
	// by reading that one commit, and the next append from it lands.
	small = livePaths(after)
	if res, err = maint.Compact(ctx, opts); err != nil || res.Commits != 1 || res.FilesRemoved != 2 {
		t.Fatalf("second compact: %+v, %v", res, err)
	}
	calls.reads.Store(0)
	advanced := snapshot(t, stream)
	if advanced.Version() != res.Version || calls.reads.Load() != 1 {
		t.Fatalf("advanced to %d reading %d commits, want %d reading 1", advanced.Version(), calls.reads.Load(), res.Version)
	}
	withAppend := append(slices.Clone(want), "999")
	checkCompactedState(t, stream, advanced, small, withAppend, withAppend)
	add = writeFile(t, stream, scanSchema, []scanRow{{app: "a", op: 2, v: 1000}}, nil)
	if got, err := commitAt(t, stream, advanced, func(tx *Transaction) {
		tx.SetAppTxn("stream", 2)
		tx.Add(add)
	}); err != nil || got.Skipped || got.Version != res.Version+1 {
		t.Fatalf("append after the second compaction: %+v, %v", got, err)
	}
	rows := scanStrings(t, snapshot(t, reopen(stream)), "v")
	if w := append(withAppend, "1000"); !sameRows(rows, w) {
		t.Fatalf("rows %v, want %v in any order", rows, w)
	}
}

// checkCompactedState checks snapshot s of tbl after a compaction that removed the files
// at paths small: none of them is live, each is a tombstone with dataChange false, the one
// file added by the compaction has dataChange false and holds compacted (column v, in
// order), s holds rows (in any order: a scan goes by path), and the state equals a fresh
// read's (tombstones included).
func checkCompactedState(t *testing.T, tbl *Table, s *Snapshot, small, compacted, rows []string) {
	t.Helper()
	live := livePaths(s)
	tombs := map[string]Remove{}
	for _, r := range tombstonesOf(t, s) {
		tombs[r.Path] = r
	}
	for _, p := range small {
		if slices.Contains(live, p) {
			t.Errorf("%s still live", p)
		}
		if r, ok := tombs[p]; !ok || r.DataChange {
			t.Errorf("%s: tombstone %+v, %v; want one with dataChange false", p, r, ok)
		}
	}
	var packed []Add
	for _, a := range s.Files() {
		if !a.DataChange {
			packed = append(packed, a)
		}
	}
	if len(packed) != 1 {
		t.Fatalf("%d live files with dataChange false, want the compacted one", len(packed))
	}
	if got := fileValues(t, tbl, packed[0]); !slices.Equal(got, compacted) {
		t.Errorf("compacted file holds %v, want %v", got, compacted)
	}
	if got := scanStrings(t, s, "v"); !sameRows(got, rows) {
		t.Errorf("rows %v, want %v in any order", got, rows)
	}
	fresh := snapshot(t, reopen(tbl))
	if g, w := snapState(t, s), snapState(t, fresh); g != w {
		t.Fatalf("kept\n%s\nfresh read\n%s", g, w)
	}
	if g, w := tombstonePaths(tombstonesOf(t, s)), tombstonePaths(tombstonesOf(t, fresh)); !slices.Equal(g, w) {
		t.Fatalf("kept tombstones %v, fresh read's %v", g, w)
	}
}

func tombstonePaths(rs []Remove) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Path
	}
	return out
}

// sameRows reports whether a and b hold the same rows, ignoring order.
func sameRows(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
