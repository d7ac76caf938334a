package snapshot_test

import (
	"context"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// A full bootstrap after a chunked snapshot of the stream has completed finds it (its
// completion row in the facts table) and reads nothing: the full snapshot's Open returns
// Found at S and a whole Run appends nothing to bronze, for a table with rows and for an
// empty one, whose chunked snapshot has no rows in bronze at all (docs/snapshots.md
// "Chunked snapshots").
func TestFullBootstrapFindsCompletedChunked(t *testing.T) {
	for _, rows := range []int{40, 0} {
		t.Run(map[int]string{40: "rows", 0: "empty"}[rows], func(t *testing.T) {
			ctx := context.Background()
			e := chunkedEnv(t, testlake.Local, keyCases[0])
			if rows == 0 {
				e = newEnvOn(t, testlake.Local, keyCases[0], 0)
				e.spec.Snapshot = config.SnapshotChunked
				zero := 0.0
				e.spec.MinHeadroomHours = &zero
				e.spec.Defaults()
			}
			s, err := snapshot.OpenChunked(ctx, e.deps())
			if err != nil {
				t.Fatal(err)
			}
			if st, err := snapshot.Backfill(ctx, e.deps(), snapshot.ParamsOf(e.spec)); err != nil || st.State != snapshot.StateDone {
				t.Fatalf("backfill: %+v %v", st, err)
			}
			e.commit(1000) // a change after S: the full snapshot would stamp a newer L
			full := *e.spec
			full.Snapshot = config.SnapshotFull
			full.ChunkRows, full.MinHeadroomHours, full.TargetWaveSeconds, full.MaxWaves = nil, nil, nil, nil
			fd := e.deps()
			fd.Spec = &full
			before := e.version()
			open, err := snapshot.Open(ctx, fd)
			if err != nil || open.Status != snapshot.Found || open.Snapshot.LSN != s.LSN {
				t.Fatalf("full open after the chunked snapshot completed: %+v %v, want found at S %s", open, err, s.LSN)
			}
			got, err := snapshot.Run(ctx, fd)
			if err != nil || got.LSN != s.LSN {
				t.Fatalf("full run: %v %v, want S %s", got, err, s.LSN)
			}
			if v := e.version(); v != before {
				t.Fatalf("the full bootstrap committed to bronze (version %d -> %d): it read the table again", before, v)
			}
			if found, ok, err := snapshot.Find(ctx, fd.Source, fd.Bronze, fd.Facts, full.Bronze, full.Source.CaptureInstance); err != nil || !ok || found.LSN != s.LSN {
				t.Fatalf("Find: %v %v %v, want S %s", found, ok, err, s.LSN)
			}
		})
	}
}

// The plans table's open row records S's commit time (snapshot_commit_ts), the time the
// snapshot_open facts row carries too, so that a resumed open and every later check of S
// compare the source with the time recorded at the open.
func TestChunkedOpenRowRecordsCommitTime(t *testing.T) {
	ctx := context.Background()
	e := chunkedEnv(t, testlake.Local, keyCases[0])
	e.commit(1000) // S is a commit's LSN
	s, err := snapshot.OpenChunked(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	want, ok, err := e.db.CommitTime(ctx, s.LSN)
	if err != nil || !ok {
		t.Fatalf("commit time of S %s: %v %v", s.LSN, ok, err)
	}
	opens := planRows(t, e.deps(), snapshot.PlanEventOpen)
	if len(opens) != 1 || opens[0].SnapshotTS == nil {
		t.Fatalf("open rows %+v: want one with snapshot_commit_ts", opens)
	}
	if got := *opens[0].SnapshotTS; !got.Equal(want.Truncate(time.Microsecond)) {
		t.Fatalf("open row's snapshot_commit_ts %s, want S's commit time %s", got, want)
	}
	for _, r := range e.factsRows() {
		if r.Event == facts.EventSnapshotOpen {
			if p := r.Position(); p == nil || !p.Equal(*opens[0].SnapshotTS) {
				t.Fatalf("snapshot_open row's commit time %v, want the open row's %s", p, *opens[0].SnapshotTS)
			}
		}
	}
}
