package deltalog

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// Clean-up checks that the cutoff checkpoint reads back before deleting anything older.
// That check reads the checkpoint itself: a _last_checkpoint left behind at an older
// checkpoint (a failed update) made the snapshot start from the hint instead, and clean-up
// refused a readable checkpoint as "not readable".
func TestCleanupLogWithAStaleHint(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{CheckpointInterval: 5})
	for i := range 15 { // day 0: versions 0..14, checkpoints at 5 and 10
		c.t = day0.Add(time.Duration(i) * time.Minute)
		appendFile(t, tbl, fmt.Sprint(i))
	}
	day40 := day0.Add(40 * 24 * time.Hour)
	for i := 15; i < 25; i++ { // day 40: versions 15..24, checkpoints at 15 and 20
		c.t = day40.Add(time.Duration(i) * time.Minute)
		appendFile(t, tbl, fmt.Sprint(i))
	}
	stale := []byte(`{"version":5,"size":8}`)
	if err := s.Put(ctx, LastCheckpointKey, bytes.NewReader(stale), int64(len(stale))); err != nil {
		t.Fatal(err)
	}
	res, err := tbl.CleanupLog(ctx, CleanupOptions{})
	if err != nil || res.Checkpoint != 10 || len(res.Deleted) != 11 {
		t.Fatalf("cleanup with a stale hint: %+v, %v; want checkpoint 10, commits 0..9 and checkpoint 5 deleted", res, err)
	}
	if snap := snapshot(t, tbl); snap.Version() != 24 || len(snap.Files()) != 25 {
		t.Fatalf("after cleanup: version %d, %d files", snap.Version(), len(snap.Files()))
	}
}
