package stream

import (
	"context"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// switchEnv is a table bootstrapped and streamed with snapshot_on_switch: rows 1..6, ADD
// COLUMN region (set on rows 5 and 6 before the newer instance exists, so only a snapshot
// brings it to bronze), then capture instance dbo_orders_v2 and row 7; the stream has
// switched and asks for the switch snapshot. It returns S.
func switchEnv(t *testing.T, backend testlake.Backend, seed uint64) (*env, lsn.LSN) {
	t.Helper()
	e := newEnvOn(t, backend, cdcsim.Config{Seed: seed})
	e.spec.Bootstrap, e.spec.Options.StartingLsn, e.spec.SnapshotOnSwitch = true, "", true
	for i := 1; i <= 4; i++ {
		e.exec(insert(i, i))
	}
	sd := snapshot.Deps{Spec: e.spec, Source: e.db, Bronze: e.lake.RawTable(e.spec.Bronze), Facts: e.lake.RawTable(e.spec.FactsTable),
		Staging: e.lake.RawStore(e.spec.Checkpoint), Options: snapshot.Options{Now: e.db.Now}}
	if _, err := snapshot.Run(context.Background(), sd); err != nil {
		t.Fatal(err)
	}
	S := e.addColumnAndSwitch(t)
	if res, err := e.run(Options{}); err != nil || res.Outcome != OutcomeSwitchSnapshotRequired {
		t.Fatalf("stream over the switch: %+v, %v; want it to ask for the switch snapshot", res, err)
	}
	return e, S
}

// assertSwitchSnapshot checks that bronze rebuilds to the table (the new column of rows
// unchanged since before S included), holds no change twice and exactly two whole
// snapshots (the bootstrap's and the switch's), and that the facts hold exactly one
// snapshot_open row of kind switch and one bootstrap row of the switch, at the same LSN.
func (e *env) assertSwitchSnapshot(s lsn.LSN) {
	e.t.Helper()
	st, lg := e.bronzeState()
	if lg.Duplicates != 0 {
		e.t.Errorf("bronze has %d duplicate changes", lg.Duplicates)
	}
	if d := rebuild.Diff(e.sourceState(), st, 10); len(d) > 0 {
		e.t.Errorf("rebuilt state differs from the table:\n%s", joinLines(d))
	}
	if n := e.wholeSnapshots(); n != 2 {
		e.t.Errorf("bronze holds %d whole snapshots, want 2 (bootstrap, switch)", n)
	}
	var opens, boots []facts.Row
	for _, r := range e.factsRows() {
		switch {
		case r.Event == facts.EventSnapshotOpen && strings.Contains(r.Detail, `"kind":"switch"`):
			opens = append(opens, r)
		case r.Event == facts.EventBootstrap && strings.Contains(r.Detail, `"s":"`+s.String()+`"`):
			boots = append(boots, r)
		}
	}
	if len(opens) != 1 || len(boots) != 1 || opens[0].MaxLSN != boots[0].MaxLSN {
		e.t.Errorf("switch snapshot rows: %d snapshot_open %v, %d bootstrap %v; want one of each at one LSN", len(opens), opens, len(boots), boots)
	}
	if res, err := e.run(Options{}); err != nil || res.Outcome != "" {
		e.t.Errorf("stream after the switch snapshot: %+v, %v; want no outcome", res, err)
	}
}

// Kill the switch snapshot's recover steps at every external call (each store, log store
// and SQL call, before it takes effect or after, its answer lost), then run them again:
// one switch snapshot in bronze, one snapshot_open and one bootstrap row of it, and the
// stream streaming on between the kill and the rerun (invariant 5).
func TestSwitchSnapshotKilledAtEveryCallConverges(t *testing.T) {
	forBackends(t, func(t *testing.T, backend testlake.Backend) {
		clean := &deltatest.Faults{}
		e, s := switchEnv(t, backend, 41)
		e.lake.Faults = clean
		if _, err := Recover(t.Context(), e.recoverDeps()); err != nil {
			t.Fatal(err)
		}
		e.lake.Faults = nil
		e.assertSwitchSnapshot(s)
		ops := clean.Ops()
		t.Logf("a clean switch snapshot makes %d external calls", len(ops))
		every := 1
		if testing.Short() || backend == testlake.AWS {
			every = 3
		}
		for _, f := range testlake.KillPlans(ops, every) {
			e, s := switchEnv(t, backend, 41)
			e.lake.Faults = f
			_, err := Recover(t.Context(), e.recoverDeps())
			if err == nil && f.Killed() {
				t.Errorf("kill at %d (after=%v) went unnoticed", f.KillAt, f.After)
			}
			e.lake.Faults = nil
			e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{7}, cdcsim.Row{"region": "u7"}) })
			if res, err := e.run(Options{}); err != nil || res.Batches == 0 {
				t.Fatalf("stream between the kill and the rerun: %+v, %v", res, err)
			}
			if _, err := Recover(t.Context(), e.recoverDeps()); err != nil {
				t.Fatalf("kill at call %d (after=%v, %s): rerun: %v", f.KillAt, f.After, ops[f.KillAt-1], err)
			}
			e.mustDrain(Options{})
			e.assertSwitchSnapshot(s)
			if t.Failed() {
				t.Fatalf("kill at call %d (after=%v, %s) did not converge", f.KillAt, f.After, ops[f.KillAt-1])
			}
		}
	})
}

// Two recover executions for one switch snapshot: the second stops (busy) before stamping
// anything, and the stream says switch_snapshot_running, naming the holder, instead of
// asking again.
func TestSwitchSnapshotClaimed(t *testing.T) {
	e, s := switchEnv(t, testlake.Local, 42)
	d := e.recoverDeps()
	first, err := RecoverOpen(t.Context(), d, RecoverRequest{Execution: "exec-1"})
	if err != nil || first.Status != RecoverOpened || first.Switch == nil || *first.Switch != s {
		t.Fatalf("first open: %+v, %v", first, err)
	}
	second, err := RecoverOpen(t.Context(), d, RecoverRequest{Execution: "exec-2"})
	if err != nil || second.Status != RecoverBusy || second.Holder != "exec-1" {
		t.Fatalf("second open: %+v, %v; want busy, held by exec-1", second, err)
	}
	res, err := e.run(Options{})
	if err != nil || res.Outcome != OutcomeSwitchSnapshotRunning || res.Switch == nil || res.Switch.Execution != "exec-1" {
		t.Fatalf("stream while exec-1 holds the switch snapshot: %+v, %v", res, err)
	}
	plan, err := snapshot.Plan(t.Context(), d, first.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.ReadAll(t.Context(), d, first.Snapshot, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := RecoverCommit(t.Context(), d, first); err != nil {
		t.Fatal(err)
	}
	e.mustDrain(Options{})
	e.assertSwitchSnapshot(s)
}

// addColumnAndSwitch is the DBA's switch both switch tests start from: row 5, ADD COLUMN
// region (row 5 updated with it, row 6 inserted with it) streamed under the older
// instance, then capture instance dbo_orders_v2 and row 7. It returns S, the newer
// instance's start LSN.
func (e *env) addColumnAndSwitch(t *testing.T) lsn.LSN {
	t.Helper()
	e.exec(insert(5, 5))
	e.mustDrain(Options{})
	if _, err := e.db.AddColumn("orders", source.Column{Name: "region", DataType: "varchar", MaxLength: 10, Nullable: true}); err != nil {
		t.Fatal(err)
	}
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{5}, cdcsim.Row{"region": "r5"}) })
	e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 6, "amount": 6, "region": "r6"})
		return err
	})
	e.mustDrain(Options{})
	v2, err := e.db.EnableCapture("orders", cdcsim.CaptureOptions{Name: "dbo_orders_v2"})
	if err != nil {
		t.Fatal(err)
	}
	e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 7, "amount": 7, "region": "r7"})
		return err
	})
	return v2.StartLSN
}
