package deltatest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Recreated checks that a kept Table (a warm process's) tells a table deleted and written
// again from scratch under the same path from the one it knew, as a new process would:
// the warm Table commits versions 0..4 (its kept snapshot at 4), and a reader opens it
// once (its first open: the log store learns version 4 from the reader's listing); the table is deleted
// (wipe: every object under the table, and whatever the log store keeps elsewhere, such
// as DynamoDB's entries) and another writer writes it again with fewer versions (3),
// as many (5) or more (8), other files and another txn; then the warm Table's Snapshot
// must equal a fresh read (version, files, txns), and its next commit must follow the
// new table's newest version with the new table's files: no gap, nothing of the old one.
// The reader's Snapshot too must equal a fresh read, and a transaction begun on the old
// table's snapshot must be refused (*deltalog.ConcurrentModificationError).
//
// open is called for each Table (the warm one, the other writer, the fresh readers) and
// must return handles on the same table; wipe deletes it. The cases run one after the
// other on that table.
func Recreated(t *testing.T, open func() (storage.Store, logstore.LogStore), wipe func(t *testing.T)) {
	for _, n := range []int{3, 5, 8} {
		t.Run(fmt.Sprintf("recreated-with-%d-versions", n), func(t *testing.T) {
			ctx := context.Background()
			wipe(t)
			s, l := open()
			warm := deltalog.Open(s, l, deltalog.Options{})
			for v := int64(1); v <= 5; v++ {
				if _, err := appendOnce(ctx, warm, warm, "old", v, fmt.Sprintf("old-%d.parquet", v)); err != nil {
					t.Fatalf("old table, append %d: %v", v, err)
				}
			}
			if snap, err := warm.Snapshot(ctx); err != nil || snap.Version() != 4 {
				t.Fatalf("old table: %v, %v; want version 4", snap, err)
			}
			// A reader that opened the old table once (a first open: logstore.Lister).
			rs, rl := open()
			reader := deltalog.Open(rs, rl, deltalog.Options{})
			if snap, err := reader.Snapshot(ctx); err != nil || snap.Version() != 4 {
				t.Fatalf("old table, reader: %v, %v; want version 4", snap, err)
			}
			old := warm.Known()
			wipe(t)
			s2, l2 := open()
			other := deltalog.Open(s2, l2, deltalog.Options{})
			for v := int64(1); v <= int64(n); v++ {
				if _, err := appendOnce(ctx, other, other, "new", v, fmt.Sprintf("new-%d.parquet", v)); err != nil {
					t.Fatalf("new table, append %d: %v", v, err)
				}
			}
			fresh := func() *deltalog.Snapshot {
				t.Helper()
				s, l := open()
				snap, err := deltalog.Open(s, l, deltalog.Options{}).Snapshot(ctx)
				if err != nil {
					t.Fatalf("fresh read: %v", err)
				}
				return snap
			}
			for name, tbl := range map[string]*deltalog.Table{"warm": warm, "reader": reader} {
				got, err := tbl.Snapshot(ctx)
				if err != nil {
					t.Fatalf("%s Snapshot of the new table: %v", name, err)
				}
				if g, w := state(got), state(fresh()); g != w {
					t.Errorf("%s Snapshot of the new table:\n%s\nwant what a fresh read sees:\n%s", name, g, w)
				}
			}
			// A transaction begun on the old table's snapshot is refused, not committed
			// into the new table.
			tx := warm.Begin(old)
			tx.Add(fakeAdd("stale.parquet"))
			var cme *deltalog.ConcurrentModificationError
			if _, err := tx.Commit(ctx); !errors.As(err, &cme) {
				t.Errorf("commit on the old table's snapshot: %v, want *ConcurrentModificationError", err)
			}
			if k := warm.Known(); k == nil || k.Version() != int64(n-1) {
				t.Errorf("Known after the Snapshot of the new table: %v, want version %d", k, n-1)
			}
			res, err := appendOnce(ctx, warm, warm, "warm", 1, "warm-1.parquet")
			if err != nil {
				t.Fatalf("warm commit on the new table: %v", err)
			}
			if res.Version != int64(n) {
				t.Errorf("warm commit on the new table at version %d, want %d (after the new table's %d versions)", res.Version, n, n)
			}
			after := fresh()
			want := fmt.Sprintf("version %d files %v txns [new=%d warm=1]", n, append(newFiles(n), "warm-1.parquet"), n)
			if g := state(after); g != want {
				t.Errorf("the new table after the warm commit:\n%s\nwant\n%s", g, want)
			}
		})
	}
}

// state is what Recreated compares of a snapshot: version, live files, txns.
func state(s *deltalog.Snapshot) string {
	var files []string
	for _, f := range s.Files() {
		files = append(files, f.Path)
	}
	slices.Sort(files)
	var txns []string
	for _, x := range s.Txns() {
		txns = append(txns, fmt.Sprintf("%s=%d", x.AppID, x.Version))
	}
	return fmt.Sprintf("version %d files %v txns %v", s.Version(), files, txns)
}

func newFiles(n int) []string {
	var out []string
	for v := 1; v <= n; v++ {
		out = append(out, fmt.Sprintf("new-%d.parquet", v))
	}
	slices.Sort(out)
	return out
}
