package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/reconcile"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// chunkedSwitchEnv is switchEnv's table with snapshot "chunked": rows 1..4, a chunked
// bootstrap the backfill completed, row 5, ADD COLUMN region (set on rows 5 and 6 before
// the newer instance exists, so only a snapshot brings it to bronze), then capture
// instance dbo_orders_v2 and row 7. The stream has not reached the newer instance yet. It
// returns S, the newer instance's start LSN.
func chunkedSwitchEnv(t *testing.T, backend testlake.Backend, seed uint64) (*env, lsn.LSN) {
	t.Helper()
	e := newEnvOn(t, backend, cdcsim.Config{Seed: seed})
	e.spec.Bootstrap, e.spec.Options.StartingLsn, e.spec.SnapshotOnSwitch = true, "", true
	e.spec.Snapshot = config.SnapshotChunked
	cr, zero, one := int64(3), 0.0, 1
	e.spec.ChunkRows, e.spec.MinHeadroomHours, e.spec.TargetWaveSeconds, e.spec.MaxWaves = &cr, &zero, &zero, &one
	e.spec.Options.NumPartitions = 1
	e.spec.Defaults()
	if err := e.spec.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		e.exec(insert(i, i))
	}
	e.mustDrain(Options{})
	e.backfillDone()
	return e, e.addColumnAndSwitch(t)
}

// switchOpens are the facts table's snapshot_open rows of kind switch and the bootstrap
// rows naming the switch at s.
func (e *env) switchOpens(s lsn.LSN) (opens, boots []facts.Row) {
	e.t.Helper()
	for _, r := range e.factsRows() {
		switch {
		case r.Event == facts.EventSnapshotOpen && strings.Contains(r.Detail, `"kind":"switch"`):
			opens = append(opens, r)
		case r.Event == facts.EventBootstrap && strings.Contains(r.Detail, `"switch":"dbo_orders -> dbo_orders_v2","s":"`+s.String()+`"`):
			boots = append(boots, r)
		}
	}
	return opens, boots
}

// assertChunkedSwitchOpen checks the chunked switch snapshot of the switch at s is open
// and not complete: one switch_open row in the plans table (generation 0), one
// snapshot_open row of kind switch at its L naming the switch and the newer instance, no
// bootstrap row of it, and the rebuild point still the bootstrap's. It returns L.
func (e *env) assertChunkedSwitchOpen(s lsn.LSN) lsn.LSN {
	e.t.Helper()
	prows := e.plansRows(snapshot.PlanEventSwitchOpen)
	opens, boots := e.switchOpens(s)
	if len(prows) != 1 || prows[0].Generation != 0 || len(opens) != 1 || opens[0].MaxLSN != prows[0].Snapshot || len(boots) != 0 {
		e.t.Fatalf("chunked switch snapshot: plans switch_open rows %+v, snapshot_open rows %+v, bootstrap rows %+v; want one open, not complete",
			prows, opens, boots)
	}
	for _, want := range []string{`"mode":"chunked"`, `"switch":"dbo_orders -> dbo_orders_v2"`, `"s":"` + s.String() + `"`, `"capture_instance":"dbo_orders_v2"`} {
		if !strings.Contains(opens[0].Detail, want) || opens[0].AppID != e.spec.AppID {
			e.t.Errorf("switch snapshot_open row %+v, want its detail to hold %s", opens[0], want)
		}
	}
	l, err := lsn.Parse(prows[0].Snapshot)
	if err != nil || !s.Less(l) {
		e.t.Fatalf("switch snapshot at %s, want above S %s (%v)", prows[0].Snapshot, s, err)
	}
	if _, lg := e.rebuilt(); lg.Newest == l.String() {
		e.t.Errorf("rebuild point %s before the switch snapshot completed", lg.Newest)
	}
	if sw, err := e.checkpointRaw().PendingSwitch(context.Background()); err != nil || sw != nil {
		e.t.Errorf("pending switch after the open: %+v, %v; want none (handed to the backfill)", sw, err)
	}
	return l
}

// assertChunkedSwitch checks the completed chunked switch snapshot at l of the switch at
// s: bronze rebuilt from l (the facts' completed snapshots, docs/bronze.md) equals the
// table, the new column of rows unchanged since before S included; no change twice; no
// whole snapshot in bronze (every snapshot row carries its chunk); one switch_open row,
// one snapshot_open row of kind switch and one bootstrap row naming the switch, at l, with
// the chunks' rows; the stream asks for nothing more.
func (e *env) assertChunkedSwitch(s, l lsn.LSN) {
	e.t.Helper()
	st, lg := e.rebuilt()
	if lg.Duplicates != 0 {
		e.t.Errorf("bronze has %d duplicate changes", lg.Duplicates)
	}
	if lg.Newest != l.String() {
		e.t.Errorf("rebuild point %s, want the switch snapshot's %s", lg.Newest, l)
	}
	if d := rebuild.Diff(e.sourceState(), st, 10); len(d) > 0 {
		e.t.Errorf("rebuilt state differs from the table:\n%s", joinLines(d))
	}
	if n := e.wholeSnapshots(); n != 0 {
		e.t.Errorf("bronze holds %d whole snapshots, want none (both snapshots chunked)", n)
	}
	opens, boots := e.switchOpens(s)
	if prows := e.plansRows(snapshot.PlanEventSwitchOpen); len(prows) != 1 || prows[0].Snapshot != l.String() {
		e.t.Errorf("plans switch_open rows %+v, want one at %s", prows, l)
	}
	if len(opens) != 1 || len(boots) != 1 || opens[0].MaxLSN != l.String() || boots[0].MaxLSN != l.String() ||
		boots[0].Rows == nil || *boots[0].Rows == 0 || boots[0].AppID != e.spec.AppID {
		e.t.Errorf("switch snapshot rows: %d snapshot_open %+v, %d bootstrap %+v; want one of each at %s", len(opens), opens, len(boots), boots, l)
	}
	if res, err := e.run(Options{}); err != nil || res.Outcome != "" {
		e.t.Errorf("stream after the switch snapshot: %+v, %v; want no outcome", res, err)
	}
	if len(e.plansRows(snapshot.PlanEventSwitchOpen)) != 1 {
		e.t.Errorf("the stream opened a second switch snapshot")
	}
}

// snapshot_on_switch with snapshot "chunked": the invocation that switches to the newer
// instance opens a chunked snapshot of kind switch at L itself (no outcome, no recover
// machine, nothing read from the table), and streams on; until the backfill completes it,
// the rebuild point stays the bootstrap's and the new column of rows unchanged since
// before S reads NULL; after, the rebuild from L equals the table, new column included.
func TestChunkedSwitchSnapshot(t *testing.T) {
	forBackends(t, func(t *testing.T, backend testlake.Backend) {
		e, s := chunkedSwitchEnv(t, backend, 61)
		before := e.bronzeVersion()
		res, err := e.run(Options{})
		if err != nil || res.Outcome != "" || res.Switch != nil || res.Batches == 0 {
			t.Fatalf("stream over the switch: %+v, %v; want it to stream, with no outcome", res, err)
		}
		l := e.assertChunkedSwitchOpen(s)
		if v := e.bronzeVersion(); v != before+int64(res.Batches) {
			t.Errorf("bronze version %d after %d batches from %d: the open wrote to bronze", v, res.Batches, before)
		}
		// The stream goes on; rows 5 and 6 still read NULL in region.
		e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{7}, cdcsim.Row{"region": "u7"}) })
		e.mustDrain(Options{})
		st, _ := e.rebuilt()
		if d := rebuild.Diff(e.sourceState(), st, 10); len(d) != 2 {
			t.Errorf("before the switch snapshot's waves the rebuild differs in %d rows, want rows 5 and 6 (region):\n%s", len(d), joinLines(d))
		}
		e.exec(func(tx *cdcsim.Txn) error { return tx.Delete("orders", []any{1}) })
		if st := e.backfill(); st.State != snapshot.StateRunning || st.Snapshot != l.String() {
			t.Fatalf("first wave of the switch snapshot: %+v, want running on %s", st, l)
		}
		e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{2}, cdcsim.Row{"region": "u2"}) })
		e.mustDrain(Options{})
		if st := e.backfillDone(); st.Snapshot != l.String() {
			t.Fatalf("backfill completed %s, want the switch snapshot %s", st.Snapshot, l)
		}
		e.mustDrain(Options{})
		e.assertChunkedSwitch(s, l)
		if again := e.backfill(); again.State != snapshot.StateDone || again.Snapshot != l.String() {
			t.Errorf("a backfill call after completion: %+v", again)
		}
		// Silver applied from bronze equals the table, and reconcile's chunk checks take the
		// switch snapshot, the newest chunked one: every chunk MATCH.
		ctx := t.Context()
		silverT := e.lake.RawTable(e.lake.URL("silver"))
		if _, err := silver.Apply(ctx, silver.Tables{Bronze: e.lake.RawTable(e.spec.Bronze), Silver: silverT},
			silver.Options{AppID: e.spec.AppID, Keys: []string{"id"}, Now: e.db.Now}); err != nil {
			t.Fatal(err)
		}
		rec, err := reconcile.Job{Spec: e.spec, Source: e.db, Silver: silverT, Bronze: e.lake.RawTable(e.spec.Bronze),
			Facts: e.lake.RawTable(e.spec.FactsTable), Plans: e.lake.RawTable(e.spec.PlansTable()), Sample: 1}.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		chunks := 0
		for _, r := range rec.Rows {
			if r.Scope == "chunk" {
				chunks++
			}
		}
		plan, _ := snapshot.PlanRows(ctx, e.lake.RawTable(e.spec.PlansTable()), e.spec.AppID, snapshot.PlanEventPlan)
		var planned int
		for _, p := range plan {
			if p.Snapshot == l.String() {
				planned++
			}
		}
		if !rec.OK() || rec.ChunkedSnapshot != l.String() || chunks != planned || planned == 0 {
			t.Errorf("reconcile: counts %v, chunked snapshot %s (want %s), %d chunk rows for %d chunks", rec.Counts, rec.ChunkedSnapshot, l, chunks, planned)
		}
		// The recover steps have nothing to take.
		if open, err := RecoverOpen(t.Context(), e.recoverDeps(), RecoverRequest{Execution: "x"}); err != nil || open.Status != RecoverNone {
			t.Errorf("recover_open with a chunked switch snapshot: %+v, %v; want none", open, err)
		}
	})
}

// A switch while the bootstrap's chunked snapshot is still open (one wave read): the
// switch snapshot supersedes it (the backfill moves to it), and the bootstrap never
// completes.
func TestChunkedSwitchSupersedesOpenBootstrap(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 62})
	e.spec.Bootstrap, e.spec.Options.StartingLsn, e.spec.SnapshotOnSwitch = true, "", true
	e.spec.Snapshot = config.SnapshotChunked
	cr, zero, one := int64(2), 0.0, 1
	e.spec.ChunkRows, e.spec.MinHeadroomHours, e.spec.TargetWaveSeconds, e.spec.MaxWaves = &cr, &zero, &zero, &one
	e.spec.Options.NumPartitions = 1
	e.spec.Defaults()
	for i := 1; i <= 6; i++ {
		e.exec(insert(i, i))
	}
	e.mustDrain(Options{})
	s0 := e.plansRows(snapshot.PlanEventOpen)[0].Snapshot
	if st := e.backfill(); st.State != snapshot.StateRunning || st.Snapshot != s0 {
		t.Fatalf("bootstrap wave: %+v", st)
	}
	if _, err := e.db.AddColumn("orders", source.Column{Name: "region", DataType: "varchar", MaxLength: 10, Nullable: true}); err != nil {
		t.Fatal(err)
	}
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{6}, cdcsim.Row{"region": "r6"}) })
	v2, err := e.db.EnableCapture("orders", cdcsim.CaptureOptions{Name: "dbo_orders_v2"})
	if err != nil {
		t.Fatal(err)
	}
	e.exec(insert(8, 8))
	e.mustDrain(Options{})
	l := e.assertChunkedSwitchOpen(v2.StartLSN)
	if st := e.backfillDone(); st.Snapshot != l.String() {
		t.Fatalf("backfill completed %s, want the switch snapshot %s", st.Snapshot, l)
	}
	e.mustDrain(Options{})
	e.assertChunkedSwitch(v2.StartLSN, l)
	for _, r := range e.factsRows() {
		if r.Event == facts.EventBootstrap && r.MaxLSN == s0 {
			t.Errorf("the superseded bootstrap snapshot %s completed: %+v", s0, r)
		}
	}
}

// Kill the invocation that switches and opens the chunked switch snapshot at every
// external call (store, log store, SQL), before it lands or after, its answer lost, then
// run the stream again; then kill the backfill call that reads it to completion the same
// way: one switch_open row, one snapshot_open row and one bootstrap row of the switch, at
// a clean run's L, and the tables converge (invariant 5).
func TestChunkedSwitchSnapshotKilledAtEveryCallConverges(t *testing.T) {
	every := 1
	if testing.Short() {
		every = 3
	}
	// all is a backfill call without max_waves: the switch snapshot read to completion.
	all := func(e *env) snapshot.BackfillStatus {
		e.t.Helper()
		p := snapshot.ParamsOf(e.spec)
		p.MaxWaves = 0
		st, err := snapshot.Backfill(context.Background(), e.backfillDeps(), p)
		if err != nil || st.State != snapshot.StateDone {
			e.t.Fatalf("backfill: %+v, %v; want done", st, err)
		}
		return st
	}
	// The stream invocation.
	clean := &deltatest.Faults{}
	e, s := chunkedSwitchEnv(t, testlake.Local, 63)
	e.lake.Faults = clean
	if res, err := e.run(Options{}); err != nil || res.Outcome != "" {
		t.Fatalf("clean switch: %+v, %v", res, err)
	}
	e.lake.Faults = nil
	want := e.assertChunkedSwitchOpen(s)
	ops := clean.Ops()
	t.Logf("a clean switching invocation makes %d external calls", len(ops))
	for _, f := range testlake.KillPlans(ops, every) {
		e, s := chunkedSwitchEnv(t, testlake.Local, 63)
		e.lake.Faults = f
		_, err := e.run(Options{})
		e.lake.Faults = nil
		what := ops[f.KillAt-1]
		if f.Killed() && !errors.Is(err, deltatest.ErrKilled) {
			t.Fatalf("kill at %d (after=%v, %s): %v", f.KillAt, f.After, what, err)
		}
		if _, err := e.run(Options{}); err != nil {
			t.Fatalf("kill at %d (after=%v, %s): rerun: %v", f.KillAt, f.After, what, err)
		}
		if l := e.assertChunkedSwitchOpen(s); l != want {
			t.Errorf("kill at %d (after=%v, %s): switch snapshot at %s, a clean run's at %s", f.KillAt, f.After, what, l, want)
		}
		e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{7}, cdcsim.Row{"region": "u7"}) })
		e.mustDrain(Options{})
		all(e)
		e.mustDrain(Options{})
		e.assertChunkedSwitch(s, want)
		if t.Failed() {
			t.Fatalf("kill at call %d (after=%v, %s) did not converge", f.KillAt, f.After, what)
		}
	}
	// The backfill call that reads the switch snapshot and completes it.
	e, s = chunkedSwitchEnv(t, testlake.Local, 64)
	e.mustDrain(Options{})
	l := e.assertChunkedSwitchOpen(s)
	clean = &deltatest.Faults{}
	e.lake.Faults = clean
	all(e)
	e.lake.Faults = nil
	e.assertChunkedSwitch(s, l)
	ops = clean.Ops()
	t.Logf("a clean backfill of the switch snapshot makes %d external calls", len(ops))
	for _, f := range testlake.KillPlans(ops, every) {
		e, s := chunkedSwitchEnv(t, testlake.Local, 64)
		e.mustDrain(Options{})
		e.assertChunkedSwitchOpen(s)
		e.lake.Faults = f
		p := snapshot.ParamsOf(e.spec)
		p.MaxWaves = 0
		_, err := snapshot.Backfill(context.Background(), e.backfillDeps(), p)
		e.lake.Faults = nil
		what := ops[f.KillAt-1]
		if f.Killed() && !errors.Is(err, deltatest.ErrKilled) {
			t.Fatalf("backfill kill at %d (after=%v, %s): %v", f.KillAt, f.After, what, err)
		}
		e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{3}, cdcsim.Row{"region": "u3"}) })
		e.mustDrain(Options{})
		if st := all(e); st.Snapshot != l.String() {
			t.Fatalf("backfill kill at %d (after=%v, %s): rerun %+v", f.KillAt, f.After, what, st)
		}
		e.mustDrain(Options{})
		e.assertChunkedSwitch(s, l)
		if t.Failed() {
			t.Fatalf("backfill kill at call %d (after=%v, %s) did not converge", f.KillAt, f.After, what)
		}
	}
}

// The chunked switch open takes the mode lock on its generation's app_id, as the recovery
// opens do (docs/snapshots.md "One mode per run"): while a full snapshot of the generation
// is open (a run may still be reading it), the invocation that switched streams its
// batches but fails with a *ModeLockError naming it, opens nothing and leaves the switch
// pending, so that a later invocation opens it once the lock is gone.
func TestChunkedSwitchOpenTakesTheModeLock(t *testing.T) {
	e, s := chunkedSwitchEnv(t, testlake.Local, 65)
	ctx := t.Context()
	full := *e.spec
	full.Snapshot, full.ChunkRows, full.MinHeadroomHours, full.TargetWaveSeconds, full.MaxWaves = config.SnapshotFull, nil, nil, nil, nil
	fd := snapshot.Deps{Spec: &full, Source: e.db, Bronze: e.lake.RawTable(e.spec.Bronze), Facts: e.lake.RawTable(e.spec.FactsTable),
		Staging: e.lake.RawStore(e.lake.URL("staging")), Options: snapshot.Options{Resnapshot: true, Now: e.db.Now}}
	op, err := snapshot.Open(ctx, fd)
	if err != nil || op.Status != snapshot.Opened {
		t.Fatalf("a full snapshot of generation 0: %+v, %v", op, err)
	}
	res, err := e.run(Options{})
	var ml *snapshot.ModeLockError
	if !errors.As(err, &ml) || ml.Snapshot != op.Snapshot.LSN || ml.Mode != facts.ModeFull || ml.AppID != e.spec.AppID || res.Batches == 0 {
		t.Fatalf("switching invocation with a full snapshot open: %+v, %v; want its batches and a ModeLockError naming %s", res, err, op.Snapshot.LSN)
	}
	if n := len(e.plansRows(snapshot.PlanEventSwitchOpen)); n != 0 {
		t.Fatalf("%d switch_open rows under the mode lock", n)
	}
	if opens, _ := e.switchOpens(s); len(opens) != 0 {
		t.Fatalf("snapshot_open rows of the switch under the mode lock: %+v", opens)
	}
	// A rerun is refused the same way, the switch still pending.
	if _, err := e.run(Options{}); !errors.As(err, &ml) {
		t.Fatalf("rerun with the full snapshot still open: %v, want a ModeLockError", err)
	}
	if sw, err := e.checkpointRaw().PendingSwitch(ctx); err != nil || sw == nil || sw.S != s {
		t.Fatalf("pending switch %+v, %v; want the switch at %s still pending", sw, err, s)
	}
}
