package stream

import (
	"errors"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// insertOrders commits one insert per id, a second apart, and returns the commits' LSNs.
func (e *env) insertOrders(ids ...int) []lsn.LSN {
	e.t.Helper()
	var out []lsn.LSN
	for _, id := range ids {
		out = append(out, e.exec(func(tx *cdcsim.Txn) error {
			_, err := tx.Insert("orders", cdcsim.Row{"id": id, "amount": id})
			return err
		}))
	}
	return out
}

// After a database restore to a point before the checkpoint (docs/reference/sqlserver-cdc.md
// §13.2), the stream refuses to run with an *source.LSNRewoundError and
// writes nothing: without the check it called itself caught up while max_lsn was below the
// checkpoint, and then skipped for good every new commit whose LSN the checkpoint had
// already passed. It stays refused once new commits reuse the lost LSNs (the recorded
// commit time no longer matches).
func TestStreamRefusesRestoredDatabase(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 21})
	e.insertOrders(1, 2, 3)
	backup, err := e.db.Backup()
	if err != nil {
		t.Fatal(err)
	}
	e.insertOrders(4, 5, 6, 7)
	before := e.mustDrain(Options{})
	bronzeVersion := func() int64 {
		snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return snap.Version()
	}
	v0, facts0 := bronzeVersion(), len(e.factsRows())

	if err := e.db.Restore(backup); err != nil {
		t.Fatal(err)
	}
	refused := func(when string) *source.LSNRewoundError {
		t.Helper()
		res, err := e.run(Options{})
		var rw *source.LSNRewoundError
		if !errors.As(err, &rw) {
			t.Fatalf("%s: %+v, %v; want a *source.LSNRewoundError", when, res, err)
		}
		if res.Batches != 0 || res.CaughtUp {
			t.Fatalf("%s: the refused run reports %+v", when, res)
		}
		if v, n := bronzeVersion(), len(e.factsRows()); v != v0 || n != facts0 {
			t.Fatalf("%s: bronze version %d (was %d), facts rows %d (was %d): a refused run wrote", when, v, v0, n, facts0)
		}
		return rw
	}
	if rw := refused("max_lsn below the checkpoint"); !rw.MaxLSN.Less(before.Offset.LSN) || rw.Recorded != before.Offset.LSN {
		t.Fatalf("error fields %+v, checkpoint %s", rw, before.Offset.LSN)
	}
	// The lost commits' statements run again an hour later: the same LSNs, other commit times.
	e.db.Advance(time.Hour)
	again := e.insertOrders(14, 15, 16, 17)
	if again[len(again)-1] != before.Offset.LSN {
		t.Fatalf("the simulator did not reuse the checkpoint's LSN: %s vs %s", again[len(again)-1], before.Offset.LSN)
	}
	if rw := refused("the checkpoint's LSN reused by a later commit"); rw.Found.LSN != before.Offset.LSN || rw.Found.Time.Equal(before.Offset.CommitTS) {
		t.Fatalf("error fields %+v, checkpoint %+v", rw, before.Offset)
	}
}

// A pending batch (offsets written, no commit) planned before a restore is refused on the
// rerun too: its end, read against the database as it was, is checked.
func TestStreamRefusesRestoreUnderPendingBatch(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 22})
	e.insertOrders(1, 2)
	e.mustDrain(Options{})
	backup, err := e.db.Backup()
	if err != nil {
		t.Fatal(err)
	}
	ls := e.insertOrders(3, 4)
	// The batch's offsets are written, then the run dies before anything else.
	st, err := e.checkpointRaw().Resume(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	start := st.Last.End
	end, err := (&run{src: e.db}).offsetAt(t.Context(), ls[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := e.checkpointRaw().WriteOffsets(t.Context(), checkpoint.Batch{ID: st.Next, Start: start, End: end}); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Restore(backup); err != nil {
		t.Fatal(err)
	}
	e.insertOrders(5) // one commit after the restore: max_lsn above start, below end
	_, err = e.run(Options{})
	var rw *source.LSNRewoundError
	if !errors.As(err, &rw) || rw.Recorded != end.LSN {
		t.Fatalf("rerun of a batch planned before the restore: %v, want *LSNRewoundError at %s", err, end.LSN)
	}
}

// A fresh checkpoint with bootstrap=true starts after the snapshot's LSN; a database
// restored to before that LSN is refused before the first batch.
func TestStreamBootstrapRefusesSnapshotAboveMaxLSN(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 23})
	e.insertOrders(1, 2)
	backup, err := e.db.Backup()
	if err != nil {
		t.Fatal(err)
	}
	e.insertOrders(3, 4)
	if _, err := snapshot.Run(t.Context(), e.standaloneDeps()); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Restore(backup); err != nil {
		t.Fatal(err)
	}
	e.spec.Bootstrap = true
	_, err = e.run(Options{})
	var rw *source.LSNRewoundError
	if !errors.As(err, &rw) {
		t.Fatalf("stream from a snapshot above the restored max_lsn: %v, want *LSNRewoundError", err)
	}
}

// A change read that lands on a lagging secondary (read-only routing) is refused on its
// own session before it reads (a transient *source.ReplicaBehindError inside a
// *SourceUnavailableError, retried): nothing is committed, and the rerun reads the whole
// range. Without the per-session check the short read was committed as the whole batch.
func TestStreamLaggingSecondaryIsRetriedNotShort(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 24})
	ls := e.insertOrders(1, 2, 3, 4, 5, 6)
	e.db.LagReplica(ls[1], 1)
	res, err := e.run(Options{})
	var rb *source.ReplicaBehindError
	var su *SourceUnavailableError
	if !errors.As(err, &rb) || !errors.As(err, &su) || res.Batches != 0 {
		t.Fatalf("read on a lagging secondary: %+v, %v; want a retried *ReplicaBehindError and no batch", res, err)
	}
	if res := e.mustDrain(Options{}); res.Rows != 6 {
		t.Fatalf("rerun read %d rows, want 6", res.Rows)
	}
	e.assertConverged()
}
