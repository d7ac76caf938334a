package snapshot_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// A database restored to before the stamp L between the bootstrap machine's steps
// (docs/reference/sqlserver-cdc.md §13.2) makes every later step — plan, a range's read
// (or its rerun), commit — refuse with LSNRewoundError before it reads or
// writes: a read would see the table without commits L claims, and the stream, starting
// after L, would never read them. The same holds once new commits reuse L (another commit
// time at L).
func TestStepsAfterARestoreRefuseTheStamp(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		t.Run(map[bool]string{false: "max_lsn below L", true: "L reused by a later commit"}[reuse], func(t *testing.T) {
			e := newEnv(t, keyCases[0], 40)
			ctx := context.Background()
			e.commit(1001)
			backup, err := e.db.Backup()
			if err != nil {
				t.Fatal(err)
			}
			e.commit(1002)
			e.commit(1003)
			open, err := snapshot.Open(ctx, e.deps())
			if err != nil || open.Status != snapshot.Opened {
				t.Fatalf("open: %+v, %v", open, err)
			}
			plan, err := snapshot.Plan(ctx, e.deps(), open.Snapshot)
			if err != nil || len(plan.Ranges) == 0 {
				t.Fatalf("plan: %+v, %v", plan, err)
			}
			for _, r := range plan.Ranges {
				if _, err := snapshot.Read(ctx, e.deps(), open.Snapshot, r); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.db.Restore(backup); err != nil {
				t.Fatal(err)
			}
			if reuse {
				e.db.Advance(time.Hour)
				e.commit(2002)
				e.commit(2003)
				if m, _ := e.db.MaxLSN(ctx); m != open.Snapshot.LSN {
					t.Fatalf("the simulator did not reuse L: max_lsn %s, L %s", m, open.Snapshot.LSN)
				}
			}
			v0 := e.version()
			snap := open.Snapshot
			for _, ev := range []snapshot.Event{
				{Step: "plan", Snapshot: &snap},
				{Step: "read", Snapshot: &snap, Range: &plan.Ranges[0]},
				{Step: "commit", Snapshot: &snap},
			} {
				out, err := snapshot.Handle(ctx, e.deps(), ev)
				var rw *source.LSNRewoundError
				if !errors.As(err, &rw) || rw.Recorded != snap.LSN {
					t.Fatalf("%s after the restore: %v, %v; want *source.LSNRewoundError at %s", ev.Step, out, err, snap.LSN)
				}
			}
			if v := e.version(); v != v0 {
				t.Fatalf("bronze moved from version %d to %d", v0, v)
			}
		})
	}
}

// CheckStamp passes a stamp the database still holds, with or without its commit time,
// and the stamp of a capture instance capture has not reached (start_lsn − 1, no commit
// time); it refuses a stamp whose commit time differs from the one recorded.
func TestCheckStampPassesAHeldStamp(t *testing.T) {
	e := newEnv(t, keyCases[0], 3)
	ctx := context.Background()
	e.commit(1001)
	st := e.stamp()
	if err := snapshot.CheckStamp(ctx, e.db, st); err != nil {
		t.Fatalf("held stamp %+v: %v", st, err)
	}
	e.exec(func(tx *cdcsim.Txn) error { return nil })
	if err := snapshot.CheckStamp(ctx, e.db, st); err != nil {
		t.Fatalf("held stamp after later commits: %v", err)
	}
	bad := st
	bad.CommitTS = st.CommitTS.Add(time.Second)
	var rw *source.LSNRewoundError
	err := snapshot.CheckStamp(ctx, e.db, bad)
	if !errors.As(err, &rw) {
		t.Fatalf("stamp with another commit time: %v, want *LSNRewoundError", err)
	}
	// The advice is the snapshot's: its stamp, and a table started over; not the stream
	// checkpoint's ("the changes the checkpoint passed may never be read"), which a
	// snapshot's step does not have.
	if msg := err.Error(); strings.Contains(msg, "the checkpoint passed") || !strings.HasPrefix(msg, "snapshot stamp "+st.LSN.String()+": ") ||
		!strings.Contains(msg, "the snapshot would lack commits its stamp claims") {
		t.Errorf("message %q: want the snapshot stamp's advice, not the checkpoint's", msg)
	}
}

// A range read whose session is on a secondary behind the stamp L (read-only routing) is
// refused before it reads, as a transient *ReplicaBehindError that the machine retries,
// and stages nothing; the retry on a caught-up session reads the range.
func TestReadOnALaggingSecondaryIsRetried(t *testing.T) {
	e := newEnv(t, keyCases[0], 40)
	ctx := context.Background()
	e.commit(1001)
	before, err := e.db.MaxLSN(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.commit(1002)
	open, err := snapshot.Open(ctx, e.deps())
	if err != nil || open.Status != snapshot.Opened {
		t.Fatalf("open: %+v, %v", open, err)
	}
	plan, err := snapshot.Plan(ctx, e.deps(), open.Snapshot)
	if err != nil || len(plan.Ranges) == 0 {
		t.Fatalf("plan: %+v, %v", plan, err)
	}
	e.db.LagReplica(before, 1)
	_, err = snapshot.Read(ctx, e.deps(), open.Snapshot, plan.Ranges[0])
	var rb *source.ReplicaBehindError
	if !errors.As(err, &rb) || !source.IsTransient(err) || rb.To != open.Snapshot.LSN {
		t.Fatalf("read on a secondary at %s: %v, want a transient *ReplicaBehindError for %s", before, err, open.Snapshot.LSN)
	}
	res, err := snapshot.Read(ctx, e.deps(), open.Snapshot, plan.Ranges[0])
	if err != nil || res.Rows == 0 {
		t.Fatalf("read on the primary: %+v, %v", res, err)
	}
}
