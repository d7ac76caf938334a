package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// A database restored to before a chunked snapshot's S (docs/reference/sqlserver-cdc.md
// §13.2) makes the backfill refuse with LSNRewoundError before it plans or reads a wave,
// writing nothing: chunks read from it would lack commits the stream, started at S, never
// reads. The same holds once new commits reuse S (S's recorded commit time, from the
// snapshot_open facts row, differs from the server's).
func TestBackfillRefusesARewoundSource(t *testing.T) {
	for _, c := range []struct {
		name  string
		waves int // waves read before the restore: 0, the plan refuses; 1, the next wave
		reuse bool
	}{
		{"plan, max_lsn below S", 0, false},
		{"plan, S reused by a later commit", 0, true},
		{"wave, max_lsn below S", 1, false},
		{"wave, S reused by a later commit", 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			e := chunkedEnv(t, testlake.Local, keyCases[0])
			e.commit(1001)
			backup, err := e.db.Backup()
			if err != nil {
				t.Fatal(err)
			}
			e.commit(1002)
			e.commit(1003)
			s, err := snapshot.OpenChunked(ctx, e.deps())
			if err != nil {
				t.Fatal(err)
			}
			for range c.waves {
				if err := oneWave(ctx, e.deps()); err != nil {
					t.Fatal(err)
				}
			}
			v0, plan0, chunks0 := e.version(), len(planRows(t, e.deps(), snapshot.PlanEventPlan)), len(planRows(t, e.deps(), snapshot.PlanEventChunk))
			if (c.waves > 0) != (plan0 > 0 && chunks0 > 0) {
				t.Fatalf("before the restore: %d plan rows, %d chunk rows after %d waves", plan0, chunks0, c.waves)
			}
			if err := e.db.Restore(backup); err != nil {
				t.Fatal(err)
			}
			if c.reuse {
				e.db.Advance(time.Hour)
				e.commit(2002)
				e.commit(2003)
				if m, _ := e.db.MaxLSN(ctx); m != s.LSN {
					t.Fatalf("the simulator did not reuse S: max_lsn %s, S %s", m, s.LSN)
				}
			}
			st, err := snapshot.Backfill(ctx, e.deps(), snapshot.ParamsOf(e.spec))
			var rw *source.LSNRewoundError
			if !errors.As(err, &rw) || rw.Recorded != s.LSN {
				t.Fatalf("backfill after the restore: %+v, %v; want *source.LSNRewoundError at S %s", st, err, s.LSN)
			}
			// Refused in a wave, the message says which (wave 1: wave 0 was read); refused
			// by the plan, that it is the backfill's plan, as the wave's says it is a wave
			// (not a full snapshot's bare "snapshot stamp").
			want := "backfill plan of chunked snapshot " + s.LSN.String() + ": snapshot stamp " + s.LSN.String() + ": "
			if c.waves > 0 {
				want = waveErrPrefix(1, s.LSN) + "snapshot stamp " + s.LSN.String() + ": "
			}
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q, want it to begin %q", err, want)
			}
			if v := e.version(); v != v0 {
				t.Fatalf("bronze moved from version %d to %d", v0, v)
			}
			if n, m := len(planRows(t, e.deps(), snapshot.PlanEventPlan)), len(planRows(t, e.deps(), snapshot.PlanEventChunk)); n != plan0 || m != chunks0 {
				t.Fatalf("plans table: %d plan rows and %d chunk rows, had %d and %d", n, m, plan0, chunks0)
			}
		})
	}
}

// restoreOnRead restores the database once, as the first chunk read of a wave starts
// (before: the read sees the table as it was before the wave's stamp L) or once its
// session has checked max_lsn (after: the read goes on, the restore lands under it).
type restoreOnRead struct {
	source.Source
	after   bool
	once    sync.Once
	restore func()
}

func (s *restoreOnRead) ReadTable(ctx context.Context, r source.TableRead) (source.Rows, error) {
	if !s.after {
		s.once.Do(s.restore)
		return s.Source.ReadTable(ctx, r)
	}
	rows, err := s.Source.ReadTable(ctx, r)
	s.once.Do(s.restore)
	return rows, err
}

// A restore between a wave's stamp L and its read is refused before the read (its session
// sees max_lsn below L: a transient ReplicaBehindError, since a lagging secondary looks
// the same), and a restore under a read that passed that check is refused at the wave's
// commit (LSNRewoundError at L): bronze, the plans table and the facts keep nothing of the
// wave. The rerun on the restored database refuses before it reads (S is gone too).
func TestWaveRefusesARestoreDuringItsRead(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(map[bool]string{false: "before the read", true: "under the read"}[after], func(t *testing.T) {
			ctx := context.Background()
			e := chunkedEnv(t, testlake.Local, keyCases[0])
			e.spec.Options.NumPartitions = 1 // a wave of one chunk: one read the restore follows
			backup, err := e.db.Backup()
			if err != nil {
				t.Fatal(err)
			}
			e.commit(1002)
			s, err := snapshot.OpenChunked(ctx, e.deps())
			if err != nil {
				t.Fatal(err)
			}
			e.commit(1003) // L above S
			v0 := e.version()
			d := e.deps()
			d.Source = &restoreOnRead{Source: e.db, after: after, restore: func() {
				if err := e.db.Restore(backup); err != nil {
					t.Error(err)
				}
			}}
			err = oneWave(ctx, d)
			var rw *source.LSNRewoundError
			var rb *source.ReplicaBehindError
			if after && (!errors.As(err, &rw) || !s.LSN.Less(rw.Recorded)) {
				t.Fatalf("wave whose read went on under a restore: %v; want *source.LSNRewoundError at the wave's stamp (above S %s)", err, s.LSN)
			}
			if !after && (!errors.As(err, &rb) || !source.IsTransient(err) || !s.LSN.Less(rb.To)) {
				t.Fatalf("wave whose read followed a restore: %v; want a transient *source.ReplicaBehindError at the wave's stamp", err)
			}
			// The message says it is wave 0 of the backfill, and names its stamp as the
			// wave's, not as a snapshot's (CheckStamp's format for a full snapshot's L).
			want := waveErrPrefix(0, s.LSN) + "read chunk "
			if after {
				want = waveErrPrefix(0, s.LSN) + "wave stamp " + rw.Recorded.String() + ": "
			}
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q, want it to begin %q", err, want)
			}
			// A wave's stamp gets the wave's advice, not the stream checkpoint's.
			if msg := err.Error(); after && (strings.Contains(msg, "the checkpoint passed") || !strings.Contains(msg, "the wave's chunks would lack commits its stamp claims")) {
				t.Errorf("message %q: want the wave stamp's advice, not the checkpoint's", msg)
			}
			if v := e.version(); v != v0 {
				t.Fatalf("bronze moved from version %d to %d", v0, v)
			}
			if rows := planRows(t, e.deps(), snapshot.PlanEventChunk); len(rows) != 0 {
				t.Fatalf("plans table has chunk rows of a refused wave: %+v", rows)
			}
			err = oneWave(ctx, e.deps())
			if !errors.As(err, &rw) || rw.Recorded != s.LSN {
				t.Fatalf("rerun on the restored database: %v; want *source.LSNRewoundError at S %s", err, s.LSN)
			}
			if want := waveErrPrefix(0, s.LSN) + "snapshot stamp " + s.LSN.String() + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("rerun: message %q, want it to begin %q", err, want)
			}
		})
	}
}

// waveErrPrefix is how the errors of wave w of the chunked snapshot s begin, so that an
// operator tells them from a full snapshot's (which share CheckStamp and the range reads).
func waveErrPrefix(w int, s lsn.LSN) string {
	return fmt.Sprintf("backfill wave %d of chunked snapshot %s: ", w, s)
}

// lowMaxAfterCheck makes max_lsn go back once, right after a continuity check (the call
// that follows CommitAtOrBefore), as a DSN served by a replica behind the primary would.
type lowMaxAfterCheck struct {
	source.Source
	mu      sync.Mutex
	checked bool
	low     lsn.LSN
}

func (s *lowMaxAfterCheck) CommitAtOrBefore(ctx context.Context, l lsn.LSN) (source.Commit, bool, error) {
	s.mu.Lock()
	s.checked = true
	s.mu.Unlock()
	return s.Source.CommitAtOrBefore(ctx, l)
}

func (s *lowMaxAfterCheck) MaxLSN(ctx context.Context) (lsn.LSN, error) {
	s.mu.Lock()
	low := s.checked
	s.checked = false
	s.mu.Unlock()
	if low {
		return s.low, nil
	}
	return s.Source.MaxLSN(ctx)
}

// A wave's stamp below S (max_lsn went back between the check of S and the stamp) is a
// StampBelowSnapshotError, and nothing is read or written.
func TestWaveStampBelowSIsRefused(t *testing.T) {
	ctx := context.Background()
	e := chunkedEnv(t, testlake.Local, keyCases[0])
	e.commit(1001)
	low, err := e.db.MaxLSN(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.commit(1002)
	s, err := snapshot.OpenChunked(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	if !low.Less(s.LSN) {
		t.Fatalf("max_lsn %s before S %s", low, s.LSN)
	}
	if err := oneWave(ctx, e.deps()); err != nil { // the plan and wave 0
		t.Fatal(err)
	}
	v0, chunks0 := e.version(), len(planRows(t, e.deps(), snapshot.PlanEventChunk))
	d := e.deps()
	d.Source = &lowMaxAfterCheck{Source: e.db, low: low}
	err = oneWave(ctx, d)
	var sb *snapshot.StampBelowSnapshotError
	if !errors.As(err, &sb) || sb.Stamp != low || sb.Snapshot != s.LSN || !strings.Contains(err.Error(), "then retry") {
		t.Fatalf("wave stamped at %s below S %s: %v; want *StampBelowSnapshotError", low, s.LSN, err)
	}
	if want := waveErrPrefix(1, s.LSN) + "wave stamp "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to begin %q", err, want)
	}
	if v, n := e.version(), len(planRows(t, e.deps(), snapshot.PlanEventChunk)); v != v0 || n != chunks0 {
		t.Fatalf("bronze version %d (was %d), %d chunk rows (were %d)", v, v0, n, chunks0)
	}
}

// A chunked snapshot's waves follow the one rule for computed columns (bronze.StoredColumns;
// docs/types.md "Computed columns"): the bronze table the first wave creates has no
// computed column.
func TestChunkedWavesLeaveComputedColumnsOut(t *testing.T) {
	ctx := context.Background()
	e := computedEnv(t, 30, true)
	e.spec.Snapshot = config.SnapshotChunked
	cr, zero := int64(10), 0.0
	e.spec.ChunkRows, e.spec.MinHeadroomHours = &cr, &zero
	e.spec.Defaults()
	if err := e.spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.OpenChunked(ctx, e.deps()); err != nil {
		t.Fatal(err)
	}
	st, err := snapshot.Backfill(ctx, e.deps(), snapshot.ParamsOf(e.spec))
	if err != nil || st.State != snapshot.StateDone || st.Rows != 30 || st.ChunksTotal < 2 {
		t.Fatalf("backfill: %+v, %v; want done, 30 rows in several chunks", st, err)
	}
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := snap.ArrowSchema()
	if err != nil {
		t.Fatal(err)
	}
	if names := fieldNames(s); strings.Contains(names, "twice") || !strings.Contains(names, ",v,") {
		t.Fatalf("bronze created by the waves has %s, want v and no computed twice", names)
	}
}

// A wave's chunk read routed to a secondary whose redo is behind the wave's stamp L is
// refused transiently (TableRead.AtLeast: a *source.ReplicaBehindError inside a
// *source.TransientError, which the backfill machine retries), before anything reaches
// bronze; the rerun reads the wave on the primary and the backfill completes with every
// row once.
func TestWaveReadOnALaggingSecondaryIsRetried(t *testing.T) {
	ctx := context.Background()
	e := chunkedEnv(t, testlake.Local, keyCases[0])
	e.commit(1001)
	s, err := snapshot.OpenChunked(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	e.commit(1002) // L above S
	v0 := e.version()
	e.db.LagReplica(s.LSN, 1)
	err = oneWave(ctx, e.deps())
	var rb *source.ReplicaBehindError
	if !errors.As(err, &rb) || !source.IsTransient(err) || !s.LSN.Less(rb.To) || rb.MaxLSN != s.LSN {
		t.Fatalf("wave read on a secondary at S: %v; want a transient *source.ReplicaBehindError", err)
	}
	if v := e.version(); v != v0 {
		t.Fatalf("bronze moved from version %d to %d", v0, v)
	}
	st, err := snapshot.Backfill(ctx, e.deps(), snapshot.ParamsOf(e.spec))
	if err != nil || st.State != snapshot.StateDone {
		t.Fatalf("rerun: %+v, %v", st, err)
	}
	if got := chunkedState(t, e); strings.Contains(got, "read 2 times") {
		t.Fatalf("a key read twice:\n%s", got)
	}
	e.stream()
	e.check()
}
