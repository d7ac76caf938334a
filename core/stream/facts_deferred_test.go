package stream

import (
	"slices"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// Batch rows wait in the checkpoint's commit files and reach the facts table together
// (docs/decisions/0013-facts-rows-deferred.md): the first batch's row at once, then every
// FactsEvery-th batch with the waiting ones, earlier when the oldest has waited
// FactsMaxDelay, and at once with a batch that has event rows. Each batch's row is in the
// facts table or waiting, exactly once, in a new process (cold) as in a warm one.
func TestFactsRowsDeferred(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 41})
	opts := Options{FactsEvery: 3, FactsMaxDelay: time.Hour, MaxBatches: 1}
	deps := e.deps() // a warm process keeps its connections
	batch := func(id int, d Deps) {
		t.Helper()
		e.exec(insert(id, id))
		o := opts
		o.Now = e.db.Now
		if res, err := Run(t.Context(), e.spec, d, o); err != nil || res.Batches != 1 {
			t.Fatalf("batch of row %d: %+v %v", id, res, err)
		}
	}
	// inTable are the batch ids of the facts table's batch rows; waiting those of the
	// commit files' rows not in it yet.
	check := func(name string, inTable, waiting []int64) {
		t.Helper()
		rows, through := e.tableFactsRows()
		var got []int64
		for _, r := range rows {
			if r.Event == "" {
				got = append(got, *r.BatchID)
			}
		}
		slices.Sort(got)
		var pend []int64
		for _, r := range e.pendingFactsRows(through) {
			if r.Event == "" {
				pend = append(pend, *r.BatchID)
			}
		}
		if !slices.Equal(got, inTable) || !slices.Equal(pend, waiting) {
			t.Fatalf("%s: facts table holds batches %v, waiting %v; want %v and %v", name, got, pend, inTable, waiting)
		}
	}
	batch(1, deps)
	check("first batch", []int64{0}, nil)
	batch(2, deps)
	batch(3, deps)
	check("two waiting", []int64{0}, []int64{1, 2})
	batch(4, deps)
	check("third since the last commit", []int64{0, 1, 2, 3}, nil)

	// A new process (nothing remembered) finds the waiting rows in the commit files.
	batch(5, deps)
	batch(6, e.deps())
	check("cold, two waiting", []int64{0, 1, 2, 3}, []int64{4, 5})
	batch(7, e.deps())
	check("cold, third", []int64{0, 1, 2, 3, 4, 5, 6}, nil)

	// The oldest waiting row ages past FactsMaxDelay.
	batch(8, deps)
	e.db.Advance(2 * time.Hour)
	batch(9, deps)
	check("aged", []int64{0, 1, 2, 3, 4, 5, 6, 7, 8}, nil)

	// An event row goes at once, with the waiting batch rows.
	batch(10, deps)
	if _, err := e.db.AddColumn("orders", source.Column{Name: "extra", DataType: "int", Nullable: true}); err != nil {
		t.Fatal(err)
	}
	batch(11, deps)
	check("event", []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, nil)
	n := 0
	for _, r := range e.factsRows() {
		if r.Event == facts.EventSchemaChange {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d schema_change rows, want 1", n)
	}
	e.assertConverged()
}

// A loss that opens the next generation (on_data_loss "resnapshot") first commits the
// batch rows still waiting in the old generation's commit files: no later batch of that
// generation will, and the facts table must hold one row per batch it streamed. A rerun
// (the attempt open, the stream waiting) writes none of them twice.
func TestResnapshotCommitsWaitingFactsRows(t *testing.T) {
	forBackends(t, func(t *testing.T, backend testlake.Backend) {
		e := newEnvOn(t, backend, cdcsim.Config{Seed: 43})
		e.spec.OnDataLoss = config.OnDataLossResnapshot
		for i := 1; i <= 4; i++ {
			e.exec(insert(i, i))
			if res, err := e.run(Options{MaxBatches: 1}); err != nil || res.Batches != 1 {
				t.Fatalf("batch of row %d: %+v %v", i, res, err)
			}
		}
		batchIDs := func() []int64 {
			rows, _ := e.tableFactsRows()
			var got []int64
			for _, r := range rows {
				if r.Event == "" {
					got = append(got, *r.BatchID)
				}
			}
			slices.Sort(got)
			return got
		}
		if got := batchIDs(); !slices.Equal(got, []int64{0}) {
			t.Fatalf("before the loss the facts table holds batches %v, want [0] (1..3 waiting)", got)
		}
		e.purgeGap()
		e.exec(insert(7, 7))
		for range 2 {
			res, err := e.run(Options{})
			if err != nil || res.Outcome != OutcomeResnapshotRequired {
				t.Fatalf("run after the purge: %+v, %v", res, err)
			}
			if got := batchIDs(); !slices.Equal(got, []int64{0, 1, 2, 3}) {
				t.Fatalf("after the loss the facts table holds batches %v, want [0 1 2 3]", got)
			}
		}
	})
}

// The first facts rows wait only for a stream that starts at a whole snapshot: with
// chunked snapshots the backfill's headroom pause needs the stream's first batch row, and
// a stream from startingLsn shows its first row at once (docs/decisions/0013).
func TestFirstFactsRowWaitsOnlyAfterAWholeSnapshot(t *testing.T) {
	for _, c := range []struct {
		bootstrap bool
		snapshot  string
		gen       int
		want      bool
	}{
		{true, config.SnapshotFull, 0, true},
		{false, config.SnapshotFull, 1, true},
		{false, config.SnapshotFull, 0, false},
		{true, config.SnapshotChunked, 0, false},
		{false, config.SnapshotChunked, 2, false},
	} {
		spec := config.Spec{Bootstrap: c.bootstrap, Snapshot: c.snapshot}
		if got := firstRowWaits(spec, c.gen); got != c.want {
			t.Errorf("bootstrap %v, snapshot %q, generation %d: first row waits %v, want %v", c.bootstrap, c.snapshot, c.gen, got, c.want)
		}
	}
}
