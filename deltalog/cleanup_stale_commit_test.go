package deltalog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Was a hole (main 652655f): a transaction on a snapshot older than the log's clean-up
// wrote its commit into the cleaned range. The snapshot is at version 5; the table goes
// on to 24 and CleanupLog deletes commits 0..9 (checkpoint 10); the transaction's
// conditional put of 6.json succeeded, since the file was gone, and Commit reported
// version 6: a commit no reader sees (they start at checkpoint 10), its rows lost. Now the
// Table, knowing a newer version than the snapshot's, does not write version 6 (it is
// known taken) but checks the commits since, finds 6 missing and refuses with
// *ConcurrentModificationError, nothing written.
func TestStaleSnapshotCommitAfterCleanupRefused(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{CheckpointInterval: 10})
	var old *Snapshot
	for i := range 15 { // versions 0..14 on day 0; checkpoint at 10
		c.t = day0.Add(time.Duration(i) * time.Minute)
		appendFile(t, tbl, fmt.Sprint(i))
		if i == 5 {
			old = snapshot(t, tbl)
		}
	}
	day40 := day0.Add(40 * 24 * time.Hour)
	for i := 15; i < 25; i++ { // versions 15..24 on day 40
		c.t = day40.Add(time.Duration(i) * time.Minute)
		appendFile(t, tbl, fmt.Sprint(i))
	}
	if res, err := tbl.CleanupLog(ctx, CleanupOptions{}); err != nil || res.Checkpoint != 10 {
		t.Fatalf("precondition: cleanup %+v %v, want commits below checkpoint 10 deleted", res, err)
	}
	if old.Version() != 5 {
		t.Fatalf("precondition: old snapshot at %d, want 5", old.Version())
	}
	tx := tbl.Begin(old)
	tx.Add(testAdd("late"))
	res, err := tx.Commit(ctx)
	var cme *ConcurrentModificationError
	if !errors.As(err, &cme) {
		t.Fatalf("Commit on a snapshot older than the clean-up: %+v %v; want *ConcurrentModificationError", res, err)
	}
	if _, err := s.Head(ctx, CommitFileKey(6)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("6.json written into the cleaned range (%v)", err)
	}
	if snap := snapshot(t, tbl); snap.Version() != 24 || len(snap.Files()) != 25 {
		t.Errorf("latest: version %d, %d files; want 24 and 25", snap.Version(), len(snap.Files()))
	}
}
