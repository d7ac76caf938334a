package deltalog

import (
	"context"
	"sync"
	"testing"
)

// Stats of files read from a checkpoint are filled in when Files is first called, for
// the snapshot and for the snapshots a commit derives from it, from any goroutine.
func TestLazyCheckpointStats(t *testing.T) {
	ctx := context.Background()
	tbl := lgBase(t)
	for v := int64(1); v <= 5; v++ {
		lgCommit(t, tbl, v, Action{Add: lgAdd(int(v))})
	}
	s, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckpoint(ctx, s); err != nil {
		t.Fatal(err)
	}
	fromCP, err := reopen(tbl).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fromCP.CheckpointVersion() != 5 || fromCP.lazy == nil || fromCP.NumFiles() != 5 {
		t.Fatalf("checkpoint %d, lazy %v, %d files", fromCP.CheckpointVersion(), fromCP.lazy != nil, fromCP.NumFiles())
	}
	tx := tbl.Begin(fromCP)
	tx.Add(*lgAdd(6))
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := tx.NextSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, snap := range []*Snapshot{fromCP, next, fromCP, next} {
		wg.Go(func() {
			for _, f := range snap.Files() {
				if n, ok := f.NumRecords(); !ok || n < 1 {
					t.Errorf("%s: stats %q", f.Path, f.Stats)
				}
			}
		})
	}
	wg.Wait()
	assertSameState(t, fromCP, s)
	if len(next.Files()) != 6 {
		t.Fatalf("%d files after the commit", len(next.Files()))
	}
}

func TestNumRecordsAnyOrder(t *testing.T) {
	for stats, want := range map[string]int64{
		`{"numRecords":42,"minValues":{}}`:     42,
		`{"numRecords":7}`:                     7,
		`{"minValues":{"a":1},"numRecords":9}`: 9,
		`{ "numRecords" : 3 }`:                 3,
	} {
		if n, ok := (&Add{Stats: stats}).NumRecords(); !ok || n != want {
			t.Errorf("%s: %d %v, want %d", stats, n, ok, want)
		}
	}
	if _, ok := (&Add{Stats: `{"minValues":{}}`}).NumRecords(); ok {
		t.Error("stats without numRecords gave a count")
	}
}
