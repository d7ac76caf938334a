package snapshot_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// modeLockIn checks err is a *ModeLockError for snapshot s of mode, generation 0, whose
// message names the LSN and generation and says the way out in the words of
// docs/snapshots.md "One mode per run".
func modeLockIn(t *testing.T, err error, s lsn.LSN, mode string, wayOut ...string) {
	t.Helper()
	var ml *snapshot.ModeLockError
	if !errors.As(err, &ml) || ml.Snapshot != s || ml.Mode != mode || ml.Generation != 0 {
		t.Fatalf("got %v, want *ModeLockError for the %s snapshot %s, generation 0", err, mode, s)
	}
	for _, w := range append([]string{s.String(), "generation 0", "one snapshot mode per run"}, wayOut...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q lacks %q", err, w)
		}
	}
}

// A chunked snapshot the stream opened holds the mode: a full snapshot refuses to open
// until the backfill has returned done; then the full open finds nothing to refuse.
func TestModeLockChunkedRefusesFull(t *testing.T) {
	ctx := context.Background()
	e := chunkedEnv(t, testlake.Local, keyCases[0])
	s, err := snapshot.OpenChunked(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	_, err = snapshot.Open(ctx, e.deps())
	modeLockIn(t, err, s.LSN, "chunked", "a full one cannot open", "run the backfill", "until it returns done")
	// Half-way through the backfill it still holds.
	p := snapshot.ParamsOf(e.spec)
	p.MaxWaves = 1
	if st, err := snapshot.Backfill(ctx, e.deps(), p); err != nil || st.State != snapshot.StateRunning {
		t.Fatalf("one wave: %+v %v", st, err)
	}
	_, err = snapshot.Open(ctx, e.deps())
	modeLockIn(t, err, s.LSN, "chunked")
	if st, err := snapshot.Backfill(ctx, e.deps(), snapshot.ParamsOf(e.spec)); err != nil || st.State != snapshot.StateDone {
		t.Fatalf("the rest: %+v %v", st, err)
	}
	if _, err := snapshot.Open(ctx, e.deps()); err != nil {
		t.Fatalf("a full open after the chunked snapshot completed: %v", err)
	}
}

// A full snapshot still being read (its snapshot_open row, no bootstrap row) holds the
// mode: the stream's chunked open and a backfill call refuse it, saying to rerun the full
// bootstrap or wait for CDC cleanup to pass its LSN. Once cleanup has passed it, the full
// snapshot can never complete, so it no longer holds the mode and the chunked open goes on.
func TestModeLockFullRefusesChunked(t *testing.T) {
	ctx := context.Background()
	e := chunkedEnv(t, testlake.Local, keyCases[0])
	full := *e.spec
	full.Snapshot = "full"
	full.ChunkRows, full.MinHeadroomHours, full.TargetWaveSeconds = nil, nil, nil
	fd := e.deps()
	fd.Spec = &full
	open, err := snapshot.Open(ctx, fd)
	if err != nil || open.Status != snapshot.Opened {
		t.Fatalf("full open: %+v %v", open, err)
	}
	l := open.Snapshot.LSN
	wayOut := []string{"a chunked one cannot open", `rerun the bootstrap with snapshot "full"`, "wait until CDC cleanup passes its LSN"}
	_, err = snapshot.OpenChunked(ctx, e.deps())
	modeLockIn(t, err, l, "full", wayOut...)
	_, err = snapshot.Backfill(ctx, e.deps(), snapshot.ParamsOf(e.spec))
	modeLockIn(t, err, l, "full", wayOut...)
	if rows := planRows(t, e.deps(), snapshot.PlanEventOpen); len(rows) != 0 {
		t.Fatalf("a refused chunked open wrote the plans table: %+v", rows)
	}

	// Changes after L, then cleanup past L: the full snapshot can no longer complete.
	for i := 1000; i < 1003; i++ {
		e.commit(i)
	}
	max, err := e.db.MaxLSN(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.Cleanup(e.spec.Source.CaptureInstance, max); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.OpenChunked(ctx, e.deps())
	if err != nil {
		t.Fatalf("chunked open after cleanup passed the full snapshot's LSN: %v", err)
	}
	if !l.Less(s.LSN) {
		t.Fatalf("chunked S %s not after the abandoned full snapshot's L %s", s.LSN, l)
	}
	// And now the chunked snapshot holds the mode against a full one.
	_, err = snapshot.Open(ctx, fd)
	modeLockIn(t, err, s.LSN, "chunked")
}
