package stream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// chunkedResnapshotEnv is a table of 30 rows written before CDC (only a snapshot has them)
// streamed with snapshot "chunked", bootstrap and on_data_loss "resnapshot": the stream's
// first run opens generation 0's chunked snapshot at S0 and is drained. With waves < 0 the
// backfill completes it; else it reads that many waves (chunks of chunkRows rows, one a
// wave). It returns S0.
func chunkedResnapshotEnv(t *testing.T, backend testlake.Backend, seed uint64, waves int, chunkRows int64) (*env, lsn.LSN) {
	t.Helper()
	e := newEnvOn(t, backend, cdcsim.Config{Seed: seed})
	e.exec(func(tx *cdcsim.Txn) error {
		for i := 100; i < 130; i++ {
			if err := insert(i, i)(tx); err != nil {
				return err
			}
		}
		return nil
	})
	e.spec.Bootstrap, e.spec.Snapshot, e.spec.OnDataLoss = true, config.SnapshotChunked, config.OnDataLossResnapshot
	e.spec.Options.StartingLsn = ""
	cr, zero, one := chunkRows, 0.0, 1
	e.spec.ChunkRows, e.spec.MinHeadroomHours, e.spec.TargetWaveSeconds = &cr, &zero, &zero
	e.spec.Options.NumPartitions = 1
	e.spec.MaxWaves = &one
	e.spec.Defaults()
	if err := e.spec.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		e.exec(insert(i, i))
	}
	e.mustDrain(Options{})
	s0 := e.liveGeneration().Snapshot.LSN
	if !s0.IsZero() {
		t.Fatalf("generation 0 has a generation state %+v", e.liveGeneration())
	}
	opens := e.plansRows(snapshot.PlanEventOpen)
	if len(opens) != 1 {
		t.Fatalf("plans table open rows %+v, want generation 0's", opens)
	}
	s0, err := lsn.Parse(opens[0].Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if waves < 0 {
		if st := e.backfillDone(); st.Snapshot != s0.String() {
			t.Fatalf("generation 0's backfill completed %s, want S0 %s", st.Snapshot, s0)
		}
	}
	for range max(waves, 0) {
		if st := e.backfill(); st.State != snapshot.StateRunning || st.Snapshot != s0.String() {
			t.Fatalf("a wave of generation 0: %+v", st)
		}
	}
	return e, s0
}

// backfillDeps are the backfill's connections (the backfill machine's).
func (e *env) backfillDeps() snapshot.Deps {
	return snapshot.Deps{Spec: e.spec, Source: e.lake.Source(e.db), Bronze: e.lake.Table(e.spec.Bronze),
		Facts: e.lake.Table(e.spec.FactsTable), Plans: e.lake.Table(e.spec.PlansTable()), Staging: e.lake.Store(e.spec.Checkpoint),
		Options: snapshot.Options{Now: e.db.Now}}
}

// backfill is one backfill call (max_waves from the spec).
func (e *env) backfill() snapshot.BackfillStatus {
	e.t.Helper()
	st, err := snapshot.Backfill(context.Background(), e.backfillDeps(), snapshot.ParamsOf(e.spec))
	if err != nil {
		e.t.Fatalf("backfill: %v", err)
	}
	return st
}

// backfillDone calls the backfill until done.
func (e *env) backfillDone() snapshot.BackfillStatus {
	e.t.Helper()
	for range 100 {
		if st := e.backfill(); st.State == snapshot.StateDone {
			return st
		} else if st.State != snapshot.StateRunning {
			e.t.Fatalf("backfill: %+v", st)
		}
	}
	e.t.Fatal("the backfill never completed")
	return snapshot.BackfillStatus{}
}

func (e *env) liveGeneration() checkpoint.GenerationState {
	e.t.Helper()
	g, err := e.checkpointRaw().Generations(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return g.Live
}

func (e *env) plansRows(event string) []snapshot.PlanRow {
	e.t.Helper()
	rows, err := snapshot.PlanRows(context.Background(), e.lake.RawTable(e.spec.PlansTable()), e.spec.AppID, event)
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

// rebuilt is bronze rebuilt from the newest complete snapshot, bronze's or the facts'
// (docs/bronze.md "The current table").
func (e *env) rebuilt() (*rebuild.State, *rebuild.Log) {
	e.t.Helper()
	ctx := context.Background()
	bsnap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	fsnap, err := e.lake.RawTable(e.spec.FactsTable).Snapshot(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	done, err := rebuild.FactsCompleted(ctx, fsnap, e.spec.Bronze)
	if err != nil {
		e.t.Fatal(err)
	}
	st, lg, err := rebuild.Rebuild(ctx, bsnap, []string{"id"}, rebuild.Options{Completed: done})
	if err != nil {
		e.t.Fatal(err)
	}
	return st, lg
}

// assertChunkedRecovered checks a table whose chunked re-snapshot of generation gen at s
// completed: bronze rebuilt from s equals the table (keys deleted in the gap gone), no
// change twice; generation gen's facts hold one snapshot_open (kind resnapshot, with the
// gap) and one resnapshot row at s with the gap, its batches from 0 once each; the plans
// table one open row per generation.
func (e *env) assertChunkedRecovered(gen int, s lsn.LSN) {
	e.t.Helper()
	st, lg := e.rebuilt()
	if lg.Duplicates != 0 {
		e.t.Errorf("bronze has %d duplicate changes", lg.Duplicates)
	}
	if lg.Newest != s.String() {
		e.t.Errorf("rebuild point %s, want generation %d's S %s", lg.Newest, gen, s)
	}
	if d := rebuild.Diff(e.sourceState(), st, 10); len(d) > 0 {
		e.t.Errorf("rebuilt state differs from the table:\n%s", joinLines(d))
	}
	app := checkpoint.GenerationAppID(e.spec.AppID, gen)
	var opens, resnaps []facts.Row
	batches := map[int64]int{}
	for _, r := range e.factsRowsOf(app) {
		switch r.Event {
		case facts.EventSnapshotOpen:
			opens = append(opens, r)
		case facts.EventResnapshot:
			resnaps = append(resnaps, r)
		case facts.EventBootstrap:
			e.t.Errorf("generation %d has a bootstrap row %+v", gen, r)
		case "":
			batches[*r.BatchID]++
		}
	}
	if len(opens) != 1 || !strings.Contains(opens[0].Detail, `"mode":"chunked"`) || !strings.Contains(opens[0].Detail, `"kind":"resnapshot"`) ||
		!strings.Contains(opens[0].Detail, `"lost_to_ts":"`) || opens[0].MaxLSN != s.String() || opens[0].LostToTS == nil {
		e.t.Errorf("generation %d's snapshot_open rows %+v, want one chunked resnapshot at %s with its gap", gen, opens, s)
	}
	if len(resnaps) != 1 || resnaps[0].MaxLSN != s.String() || resnaps[0].MinLSN != s.String() || resnaps[0].LostToTS == nil ||
		resnaps[0].Rows == nil {
		e.t.Errorf("generation %d's resnapshot rows %+v, want one at %s with its gap and rows", gen, resnaps, s)
	} else if opens[0].LostFromTS != nil && (resnaps[0].LostFromTS == nil || !resnaps[0].LostFromTS.Equal(*opens[0].LostFromTS)) {
		e.t.Errorf("resnapshot row's lost_from_ts %v, the open's %v", resnaps[0].LostFromTS, opens[0].LostFromTS)
	}
	for b := int64(0); b < int64(len(batches)); b++ {
		if batches[b] != 1 {
			e.t.Errorf("%s: batch %d has %d facts rows (%v)", app, b, batches[b], batches)
		}
	}
	gens := map[int32]int{}
	for _, r := range e.plansRows(snapshot.PlanEventOpen) {
		gens[r.Generation]++
		if r.SnapshotTS == nil && int(r.Generation) == gen {
			e.t.Errorf("generation %d's open row has no snapshot_commit_ts", gen)
		}
	}
	for n := 0; n <= gen; n++ {
		if gens[int32(n)] != 1 {
			e.t.Errorf("plans table: %d open rows of generation %d (%v)", gens[int32(n)], n, gens)
		}
	}
}

// A loss with snapshot "chunked": the stream opens generation 1 with a chunked open at S1
// (nothing read from the table), commits it and streams on from S1 in the same invocation;
// the backfill then reads generation 1's snapshot and writes its resnapshot row with the
// gap, and bronze rebuilds to the table from S1: the key deleted in the gap is gone though
// no delete row says so.
func TestChunkedResnapshotOpensGenerationOne(t *testing.T) {
	forBackends(t, func(t *testing.T, backend testlake.Backend) {
		e, s0 := chunkedResnapshotEnv(t, backend, 51, -1, 8)
		end0 := e.mustDrain(Options{}).Offset
		e.purgeGap()
		e.exec(insert(7, 7))
		before := e.bronzeVersion()
		res, err := e.run(Options{})
		if err != nil || res.Outcome != "" || res.Generation != 1 || !res.CaughtUp {
			t.Fatalf("run after the purge: %+v, %v; want generation 1, caught up", res, err)
		}
		live := e.liveGeneration()
		s1 := live.Snapshot.LSN
		if live.Generation != 1 || live.Mode != checkpoint.ModeChunked || !s0.Less(s1) || live.From != end0 ||
			live.LostToTS == nil || live.LostFromTS == nil || !live.LostFromTS.Equal(end0.CommitTS) {
			t.Fatalf("generation state %+v, want generation 1 chunked after S0 %s, from %s", live, s0, end0)
		}
		if v := e.bronzeVersion(); v != before {
			t.Errorf("the recovery committed to bronze (version %d -> %d): a chunked open reads nothing", before, v)
		}
		// Until generation 1's snapshot completes, the rebuild point is generation 0's.
		if _, lg := e.rebuilt(); lg.Newest != s0.String() {
			t.Errorf("rebuild point %s before generation 1 completed, want S0 %s", lg.Newest, s0)
		}
		st := e.backfillDone()
		if st.Snapshot != s1.String() {
			t.Fatalf("backfill completed %s, want S1 %s", st.Snapshot, s1)
		}
		e.exec(insert(11, 11))
		out := e.mustDrain(Options{})
		if out.Generation != 1 || out.Rows != 1 {
			t.Errorf("generation 1 drained %+v, want 1 row", out)
		}
		e.assertChunkedRecovered(1, s1)
		if again := e.backfill(); again.State != snapshot.StateDone || again.Snapshot != s1.String() {
			t.Errorf("a backfill call after completion: %+v", again)
		}
	})
}

// A loss while generation 0's chunked snapshot is open (one wave read) supersedes it: the
// mode lock does not stop generation 1's open, the backfill works on generation 1's
// snapshot only, generation 0's never completes, and the rebuild starts from generation 1's
// S once its resnapshot row exists, ignoring generation 0's waves.
func TestChunkedLossWhileOpenSupersedesIt(t *testing.T) {
	e, s0 := chunkedResnapshotEnv(t, testlake.Local, 52, 1, 8)
	e.purgeGap()
	res, err := e.run(Options{})
	if err != nil || res.Generation != 1 {
		t.Fatalf("run after the purge: %+v, %v; want generation 1", res, err)
	}
	s1 := e.liveGeneration().Snapshot.LSN
	st := e.backfill()
	if st.Snapshot != s1.String() || st.State != snapshot.StateRunning {
		t.Fatalf("backfill after the loss: %+v, want generation 1's snapshot %s", st, s1)
	}
	// Keys deleted before S1 are in generation 0's waves; the rebuild ignores them.
	e.exec(func(tx *cdcsim.Txn) error { return tx.Delete("orders", []any{101}) })
	e.backfillDone()
	e.mustDrain(Options{})
	e.assertChunkedRecovered(1, s1)
	for _, r := range e.factsRowsOf(e.spec.AppID) {
		if r.Event == facts.EventBootstrap {
			t.Errorf("generation 0's superseded snapshot %s completed: %+v", s0, r)
		}
	}
	if n := len(e.plansRows(snapshot.PlanEventPlan)); n == 0 {
		t.Fatal("no plan rows")
	}
	for _, r := range e.plansRows(snapshot.PlanEventChunk) {
		if r.Snapshot == s0.String() && r.Generation != 0 || r.Snapshot == s1.String() && r.Generation != 1 {
			t.Errorf("chunk row of snapshot %s in generation %d", r.Snapshot, r.Generation)
		}
	}
	// A full re-snapshot of a later generation is not held by either.
	full := *e.spec
	full.Snapshot, full.ChunkRows, full.MinHeadroomHours, full.TargetWaveSeconds, full.MaxWaves = config.SnapshotFull, nil, nil, nil, nil
	d := e.backfillDeps()
	d.Spec = &full
	d.Options.Recovery = &snapshot.Recovery{Generation: 2, AppID: checkpoint.GenerationAppID(e.spec.AppID, 2)}
	if _, err := snapshot.Open(context.Background(), d); err != nil {
		t.Errorf("a full open of generation 2: %v", err)
	}
}

// Kill the invocation that finds the loss (while generation 0's chunked snapshot is open)
// and opens generation 1 (chunked) at every external call, before it lands or after, its
// answer lost, then run the stream again: it finishes the same open (one open row per
// generation, one snapshot_open row of generation 1, the same S1 as a clean run), and after
// the backfill the tables converge (invariant 5).
func TestChunkedRecoveryKilledAtEveryCallConverges(t *testing.T) {
	clean := &deltatest.Faults{}
	e, _ := chunkedResnapshotEnv(t, testlake.Local, 53, 0, 100)
	e.purgeGap()
	e.lake.Faults = clean
	if res, err := e.run(Options{}); err != nil || res.Generation != 1 {
		t.Fatalf("clean recovery: %+v, %v", res, err)
	}
	e.lake.Faults = nil
	want := e.liveGeneration().Snapshot.LSN
	ops := clean.Ops()
	t.Logf("a clean recovery invocation makes %d external calls", len(ops))
	every := 1
	if testing.Short() {
		every = 3
	}
	for _, f := range testlake.KillPlans(ops, every) {
		e, _ := chunkedResnapshotEnv(t, testlake.Local, 53, 0, 100)
		e.purgeGap()
		e.lake.Faults = f
		_, err := e.run(Options{})
		e.lake.Faults = nil
		what := func() string { return ops[f.KillAt-1] }
		if f.Killed() && !errors.Is(err, deltatest.ErrKilled) {
			t.Fatalf("kill at %d (after=%v, %s): %v", f.KillAt, f.After, what(), err)
		}
		res, err := e.run(Options{})
		if err != nil || res.Generation != 1 {
			t.Fatalf("kill at %d (after=%v, %s): rerun: %+v, %v", f.KillAt, f.After, what(), res, err)
		}
		s1 := e.liveGeneration().Snapshot.LSN
		if s1 != want {
			t.Errorf("kill at %d (after=%v, %s): generation 1 at %s, a clean run's at %s", f.KillAt, f.After, what(), s1, want)
		}
		e.backfillDone()
		e.exec(insert(12, 12))
		e.mustDrain(Options{})
		e.assertChunkedRecovered(1, s1)
		if t.Failed() {
			t.Fatalf("kill at call %d (after=%v, %s) did not converge", f.KillAt, f.After, what())
		}
	}
}

// The anti-loop interval holds for chunked re-snapshots too: a second loss within
// resnapshot_interval_days of generation 1's commit is a DataLossError naming it, with no
// generation 2 opened and nothing written; a week later the same loss opens generation 2,
// which supersedes generation 1's snapshot if still open, and the backfill completes it.
func TestChunkedResnapshotInterval(t *testing.T) {
	e, _ := chunkedResnapshotEnv(t, testlake.Local, 54, -1, 8)
	e.purgeGap()
	if res, err := e.run(Options{}); err != nil || res.Generation != 1 {
		t.Fatalf("first loss: %+v, %v", res, err)
	}
	e.exec(insert(8, 8))
	e.mustDrain(Options{})
	e.exec(insert(9, 9))
	max, _ := e.db.MaxLSN(context.Background())
	if err := e.db.Cleanup("dbo_orders", max); err != nil {
		t.Fatal(err)
	}
	e.exec(insert(10, 10))
	opens := len(e.plansRows(snapshot.PlanEventOpen))
	_, err := e.run(Options{})
	var dl *DataLossError
	if !errors.As(err, &dl) || dl.Previous == nil || dl.Previous.Kind != "resnapshot" || dl.Previous.Generation != 1 {
		t.Fatalf("second loss within the interval: %v, want DataLossError naming generation 1", err)
	}
	if g := e.liveGeneration(); g.Generation != 1 || len(e.plansRows(snapshot.PlanEventOpen)) != opens {
		t.Fatalf("the refused loss opened something: generation %d, %d open rows (was %d)", g.Generation, len(e.plansRows(snapshot.PlanEventOpen)), opens)
	}
	e.db.Advance(7*24*time.Hour + time.Minute)
	res, err := e.run(Options{})
	if err != nil || res.Generation != 2 {
		t.Fatalf("after the interval: %+v, %v", res, err)
	}
	s2 := e.liveGeneration().Snapshot.LSN
	if st := e.backfillDone(); st.Snapshot != s2.String() {
		t.Fatalf("backfill completed %s, want generation 2's %s", st.Snapshot, s2)
	}
	e.mustDrain(Options{})
	e.assertChunkedRecovered(2, s2)
}
