package stream

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// resnapshotEnv is a table streamed with on_data_loss "resnapshot": rows 1..5 streamed in
// generation 0, then, with the stream stopped, a gap (row 2 deleted, row 3 updated, row 6
// inserted) that CDC cleanup purges, then row 7. It returns the end of generation 0.
func resnapshotEnv(t *testing.T, backend testlake.Backend, seed uint64) (*env, lsn.Offset) {
	t.Helper()
	e := newEnvOn(t, backend, cdcsim.Config{Seed: seed})
	e.spec.OnDataLoss = config.OnDataLossResnapshot
	for i := 1; i <= 5; i++ {
		e.exec(insert(i, i))
	}
	res := e.mustDrain(Options{})
	e.purgeGap()
	e.exec(insert(7, 7))
	return e, res.Offset
}

// purgeGap writes a gap the stream has not read (a delete, an update, an insert), then runs
// CDC cleanup up to max_lsn.
func (e *env) purgeGap() {
	e.t.Helper()
	e.exec(func(tx *cdcsim.Txn) error { return tx.Delete("orders", []any{2}) })
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{3}, cdcsim.Row{"note": "gap"}) })
	e.exec(insert(6, 6))
	max, err := e.db.MaxLSN(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.db.Cleanup("dbo_orders", max); err != nil {
		e.t.Fatal(err)
	}
}

// recoverDeps are the snapshot steps' connections of the recover machine.
func (e *env) recoverDeps() snapshot.Deps {
	return snapshot.Deps{Spec: e.spec, Source: e.lake.Source(e.db), Bronze: e.lake.Table(e.spec.Bronze),
		Facts: e.lake.Table(e.spec.FactsTable), Staging: e.lake.Store(e.spec.Checkpoint),
		Options: snapshot.Options{Now: e.db.Now}}
}

// assertRecovered checks a table recovered into generation gen: the rebuilt bronze equals
// the table (keys deleted in the gap gone), no change is in bronze twice, and the facts hold
// one resnapshot row per generation, with the gap, and the generation's batches from 0.
func (e *env) assertRecovered(gen int) {
	e.t.Helper()
	st, lg := e.bronzeState()
	if lg.Duplicates != 0 {
		e.t.Errorf("bronze has %d duplicate changes", lg.Duplicates)
	}
	if d := rebuild.Diff(e.sourceState(), st, 10); len(d) > 0 {
		e.t.Errorf("rebuilt state differs from the table:\n%s", joinLines(d))
	}
	snap, err := e.lake.RawTable(e.spec.FactsTable).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	all, err := facts.ReadRows(context.Background(), snap)
	if err != nil {
		e.t.Fatal(err)
	}
	resnaps := map[string]int{}
	batches := map[string]map[int64]int{}
	for _, r := range all {
		switch r.Event {
		case facts.EventResnapshot:
			resnaps[r.AppID]++
			if r.LostToTS == nil || r.MinLSN == "" || r.MinLSN != r.MaxLSN {
				e.t.Errorf("resnapshot row without its gap or LSN: %+v", r)
			}
		case "":
			if batches[r.AppID] == nil {
				batches[r.AppID] = map[int64]int{}
			}
			batches[r.AppID][*r.BatchID]++
		}
	}
	for g := 1; g <= gen; g++ {
		app := checkpoint.GenerationAppID(e.spec.AppID, g)
		if resnaps[app] != 1 {
			e.t.Errorf("generation %d has %d resnapshot rows, want 1 (%v)", g, resnaps[app], resnaps)
		}
		bs := batches[app]
		for b := int64(0); b < int64(len(bs)); b++ {
			if bs[b] != 1 {
				e.t.Errorf("%s: batch %d has %d facts rows (%v)", app, b, bs[b], bs)
			}
		}
	}
	if len(resnaps) != gen {
		e.t.Errorf("resnapshot rows of %d app ids, want %d: %v", len(resnaps), gen, resnaps)
	}
}

// on_data_loss "resnapshot" with full snapshots: the stream records the attempt and hands
// it over (OutcomeResnapshotRequired, reading nothing, also on the next invocation); the
// recover steps take the snapshot, write the resnapshot row with the gap and commit
// generation 1; the stream then runs generation 1 from the snapshot's LSN, and bronze
// rebuilds to the table: the key deleted in the gap is gone, though no delete row says so.
func TestResnapshotOpensGenerationOne(t *testing.T) {
	forBackends(t, func(t *testing.T, backend testlake.Backend) {
		e, end0 := resnapshotEnv(t, backend, 31)
		res, err := e.run(Options{})
		if err != nil {
			t.Fatalf("run after the purge: %v", err)
		}
		rc := res.Recovery
		if res.Outcome != OutcomeResnapshotRequired || rc == nil || rc.Generation != 1 || rc.Attempt != 1 || rc.Mode != "full" {
			t.Fatalf("result %+v, recovery %+v: want resnapshot_required for generation 1", res, rc)
		}
		if rc.From != end0 || rc.LostFromTS == nil || !rc.LostFromTS.Equal(end0.CommitTS) || rc.LostToTS == nil || !rc.LostFromTS.Before(*rc.LostToTS) {
			t.Errorf("gap %+v, want from %s", rc, end0)
		}
		again, err := e.run(Options{})
		if err != nil || again.Outcome != OutcomeResnapshotRequired || again.Batches != 0 || again.Recovery.Attempt != 1 {
			t.Fatalf("second run while the recovery is open: %+v, %v", again, err)
		}
		cr, err := Recover(t.Context(), e.recoverDeps())
		if err != nil {
			t.Fatalf("recover: %v", err)
		}
		if cr.Generation != 1 || cr.Rows == nil || *cr.Rows != 6 || cr.Version < 0 {
			t.Errorf("recover: %+v (rows %v), want generation 1 with 6 rows", cr, cr.Rows)
		}
		e.exec(insert(11, 11))
		out := e.mustDrain(Options{})
		if out.Generation != 1 || out.Rows != 1 {
			t.Errorf("generation 1 drained %+v, want 1 row", out)
		}
		e.assertRecovered(1)
		var open facts.Row
		for _, r := range e.factsRowsOf(checkpoint.GenerationAppID(e.spec.AppID, 1)) {
			if r.Event == facts.EventSnapshotOpen {
				open = r
			}
		}
		if !strings.Contains(open.Detail, `"kind":"resnapshot"`) || !strings.Contains(open.Detail, `"generation":1`) || !strings.Contains(open.Detail, `"lost_to_ts":"`) {
			t.Errorf("snapshot_open of generation 1: %q", open.Detail)
		}
		// A recover run after the commit point does nothing.
		again2, err := Recover(t.Context(), e.recoverDeps())
		if err != nil || again2.Generation != 1 || again2.Version != -1 {
			t.Errorf("recover rerun: %+v, %v", again2, err)
		}
		e.assertRecovered(1)
	})
}

func (e *env) factsRowsOf(appID string) []facts.Row {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.FactsTable).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	rows, err := facts.ReadRows(context.Background(), snap, appID)
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

// The anti-loop interval: a second loss within resnapshot_interval_days of the re-snapshot
// is a DataLossError naming it; past the interval (or with 0) the stream opens generation 2.
func TestResnapshotIntervalStopsASecondLoss(t *testing.T) {
	e, _ := resnapshotEnv(t, testlake.Local, 32)
	if res, err := e.run(Options{}); err != nil || res.Outcome == "" {
		t.Fatalf("first loss: %+v, %v", res, err)
	}
	if _, err := Recover(t.Context(), e.recoverDeps()); err != nil {
		t.Fatal(err)
	}
	e.mustDrain(Options{})
	e.exec(insert(8, 8))
	max, _ := e.db.MaxLSN(context.Background())
	if err := e.db.Cleanup("dbo_orders", max); err != nil {
		t.Fatal(err)
	}
	e.exec(insert(9, 9))
	_, err := e.run(Options{})
	var dl *DataLossError
	if !errors.As(err, &dl) || dl.Previous == nil || dl.Previous.Kind != "resnapshot" || dl.Previous.Generation != 1 {
		t.Fatalf("second loss within the interval: %v, want DataLossError naming generation 1", err)
	}
	for _, want := range []string{"resnapshot_interval_days (7 days)", "generation 1", "cannot keep up"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	// A week later the same loss opens generation 2.
	e.db.Advance(7*24*time.Hour + time.Minute)
	res, err := e.run(Options{})
	if err != nil || res.Outcome != OutcomeResnapshotRequired || res.Recovery.Generation != 2 {
		t.Fatalf("after the interval: %+v, %v", res, err)
	}
	if _, err := Recover(t.Context(), e.recoverDeps()); err != nil {
		t.Fatal(err)
	}
	if out := e.mustDrain(Options{}); out.Generation != 2 {
		t.Errorf("drained %+v, want generation 2", out)
	}
	e.assertRecovered(2)
}

// A full re-snapshot whose LSN is purged before its commit (the read outlived the
// retention) commits nothing to bronze, fails the attempt with a DataLossError advising
// chunked snapshots and interval 0, and the failed attempt counts for the interval; with
// resnapshot_interval_days 0 the next loss is a new attempt that succeeds.
func TestResnapshotOutlivingTheRetentionFails(t *testing.T) {
	e, _ := resnapshotEnv(t, testlake.Local, 33)
	if res, err := e.run(Options{}); err != nil || res.Outcome == "" {
		t.Fatalf("loss: %+v, %v", res, err)
	}
	d := e.recoverDeps()
	open, err := RecoverOpen(t.Context(), d, RecoverRequest{})
	if err != nil || open.Status != RecoverOpened {
		t.Fatalf("open: %+v, %v", open, err)
	}
	plan, err := snapshot.Plan(t.Context(), d, open.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.ReadAll(t.Context(), d, open.Snapshot, plan); err != nil {
		t.Fatal(err)
	}
	versionBefore := e.bronzeVersion()
	e.exec(insert(10, 10)) // committed while the table was read, then purged
	max, _ := e.db.MaxLSN(context.Background())
	if err := e.db.Cleanup("dbo_orders", max); err != nil {
		t.Fatal(err)
	}
	_, err = RecoverCommit(t.Context(), d, open)
	var dl *DataLossError
	if !errors.As(err, &dl) || dl.Outlived != open.Snapshot.LSN {
		t.Fatalf("commit after the purge: %v, want DataLossError (outlived)", err)
	}
	for _, want := range []string{"chunked", "resnapshot_interval_days to 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if v := e.bronzeVersion(); v != versionBefore {
		t.Errorf("bronze moved from version %d to %d: a failed snapshot must not be committed", versionBefore, v)
	}
	g, err := e.checkpointRaw().Generations(t.Context())
	if err != nil || g.Open() != nil || len(g.Attempts) != 1 || g.Attempts[0].Failed == nil {
		t.Fatalf("generations after the failure: %+v, %v", g, err)
	}
	// The stream meets the loss again: within the interval of the failed attempt.
	_, err = e.run(Options{})
	if !errors.As(err, &dl) || dl.Previous == nil || dl.Previous.Kind != "failed" || !strings.Contains(err.Error(), "failed re-snapshot attempt") {
		t.Fatalf("after the failed attempt: %v", err)
	}
	zero := 0.0
	e.spec.ResnapshotIntervalDays = &zero
	res, err := e.run(Options{})
	if err != nil || res.Recovery == nil || res.Recovery.Generation != 1 || res.Recovery.Attempt != 2 {
		t.Fatalf("with interval 0: %+v, %v", res, err)
	}
	if _, err := Recover(t.Context(), e.recoverDeps()); err != nil {
		t.Fatal(err)
	}
	e.mustDrain(Options{})
	e.assertRecovered(1)
}

func (e *env) bronzeVersion() int64 {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return snap.Version()
}

// Kill the recovery at every external call of the recover steps (each store, log store
// and SQL call, before it takes effect or after, its answer lost), then run it again: the
// tables converge with one snapshot commit and one resnapshot row (invariant 5).
func TestRecoverKilledAtEveryCallConverges(t *testing.T) {
	forBackends(t, func(t *testing.T, backend testlake.Backend) {
		clean := &deltatest.Faults{}
		e, _ := resnapshotEnv(t, backend, 34)
		if res, err := e.run(Options{}); err != nil || res.Outcome == "" {
			t.Fatalf("loss: %+v, %v", res, err)
		}
		e.lake.Faults = clean
		if _, err := Recover(t.Context(), e.recoverDeps()); err != nil {
			t.Fatal(err)
		}
		e.lake.Faults = nil
		ops := clean.Ops()
		t.Logf("a clean recovery makes %d external calls", len(ops))
		every := 1
		if testing.Short() || backend == testlake.AWS {
			every = 3
		}
		for _, f := range testlake.KillPlans(ops, every) {
			e, _ := resnapshotEnv(t, backend, 34)
			if res, err := e.run(Options{}); err != nil || res.Outcome == "" {
				t.Fatalf("loss: %+v, %v", res, err)
			}
			e.lake.Faults = f
			_, err := Recover(t.Context(), e.recoverDeps())
			if err == nil && f.Killed() {
				t.Errorf("kill at %d (after=%v) went unnoticed", f.KillAt, f.After)
			}
			e.lake.Faults = nil
			// The stream, run before the rerun, waits for the open recovery.
			if res, err := e.run(Options{}); err != nil || (res.Outcome == "" && res.Generation != 1) {
				t.Fatalf("stream between the kill and the rerun: %+v, %v", res, err)
			}
			if _, err := Recover(t.Context(), e.recoverDeps()); err != nil {
				t.Fatalf("kill at call %d (after=%v, %s): rerun: %v", f.KillAt, f.After, ops[f.KillAt-1], err)
			}
			e.mustDrain(Options{})
			e.assertRecovered(1)
			if n := e.wholeSnapshots(); n != 1 {
				t.Errorf("kill at call %d (after=%v, %s): bronze holds %d re-snapshots, want 1", f.KillAt, f.After, ops[f.KillAt-1], n)
			}
			if t.Failed() {
				t.Fatalf("kill at call %d (after=%v, %s) did not converge", f.KillAt, f.After, ops[f.KillAt-1])
			}
		}
	})
}

// wholeSnapshots counts the distinct snapshot LSNs of bronze's operation-0 rows.
func (e *env) wholeSnapshots() int {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	_, lg, err := rebuild.FromBronze(context.Background(), snap, []string{"id"})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(lg.Snapshots)
}

// Recover executions claim the open attempt: a second execution started for the same loss
// stops (busy) before stamping anything, the stream then says resnapshot_running (asking
// for no third), a takeover moves the claim, the execution taken over cannot commit, and
// the one holding the claim commits generation 1 with one snapshot.
func TestRecoverExecutionsClaimTheAttempt(t *testing.T) {
	e, _ := resnapshotEnv(t, testlake.Local, 35)
	if res, err := e.run(Options{}); err != nil || res.Outcome != OutcomeResnapshotRequired {
		t.Fatalf("loss: %+v, %v", res, err)
	}
	d := e.recoverDeps()
	a, err := RecoverOpen(t.Context(), d, RecoverRequest{Execution: "exec-a"})
	if err != nil || a.Status != RecoverOpened || a.Execution != "exec-a" {
		t.Fatalf("exec-a open: %+v, %v", a, err)
	}
	versionBefore := e.bronzeVersion()
	b, err := RecoverOpen(t.Context(), d, RecoverRequest{Execution: "exec-b"})
	if err != nil || b.Status != RecoverBusy || b.Holder != "exec-a" {
		t.Fatalf("exec-b open: %+v, %v, want busy (exec-a holds it)", b, err)
	}
	if cr, err := RecoverCommit(t.Context(), d, b); err != nil || cr.Generation != 0 || cr.Version != -1 {
		t.Errorf("busy commit: %+v, %v, want nothing done", cr, err)
	}
	res, err := e.run(Options{})
	if err != nil || res.Outcome != OutcomeResnapshotRunning || res.Recovery == nil || res.Recovery.Execution != "exec-a" || res.Batches != 0 {
		t.Fatalf("stream while exec-a holds the claim: %+v, %v", res, err)
	}
	// exec-a rerun of its own open keeps its claim.
	if again, err := RecoverOpen(t.Context(), d, RecoverRequest{Execution: "exec-a"}); err != nil || again.Status == RecoverBusy {
		t.Fatalf("exec-a rerun: %+v, %v", again, err)
	}
	c, err := RecoverOpen(t.Context(), d, RecoverRequest{Execution: "exec-c", Takeover: true})
	if err != nil || (c.Status != RecoverOpened && c.Status != RecoverFound) {
		t.Fatalf("exec-c takeover: %+v, %v", c, err)
	}
	if _, err := RecoverCommit(t.Context(), d, a); !errors.As(err, new(*StaleRecoveryError)) || !strings.Contains(err.Error(), "exec-c") {
		t.Fatalf("exec-a commit after the takeover: %v, want StaleRecoveryError naming exec-c", err)
	}
	if v := e.bronzeVersion(); v != versionBefore {
		t.Errorf("bronze moved to version %d before the holder's commit", v)
	}
	if c.Status == RecoverOpened {
		plan, err := snapshot.Plan(t.Context(), d, c.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if err := snapshot.ReadAll(t.Context(), d, c.Snapshot, plan); err != nil {
			t.Fatal(err)
		}
	}
	cr, err := RecoverCommit(t.Context(), d, c)
	if err != nil || cr.Generation != 1 {
		t.Fatalf("exec-c commit: %+v, %v", cr, err)
	}
	e.mustDrain(Options{})
	e.assertRecovered(1)
}

// The continuity check reads the live generation's checkpoint (generations/<n>/): a
// database restored to before generation 1's re-snapshot is refused before generation 1's
// first batch (its start is the re-snapshot's LSN, checked as a bootstrap's is), and, once
// generation 1 has batches, at the end generation 1 recorded, not generation 0's.
func TestResnapshotGenerationContinuity(t *testing.T) {
	for _, batches := range []bool{false, true} {
		e, end0 := resnapshotEnv(t, testlake.Local, 33)
		backup, err := e.db.Backup()
		if err != nil {
			t.Fatal(err)
		}
		e.exec(insert(8, 8))
		if res, err := e.run(Options{}); err != nil || res.Outcome != OutcomeResnapshotRequired {
			t.Fatalf("run after the purge: %+v, %v", res, err)
		}
		cr, err := Recover(t.Context(), e.recoverDeps())
		if err != nil || cr.Generation != 1 {
			t.Fatalf("recover: %+v, %v", cr, err)
		}
		want := cr.Snapshot.LSN
		if batches {
			e.exec(insert(9, 9))
			out := e.mustDrain(Options{})
			if out.Generation != 1 || out.Rows != 1 {
				t.Fatalf("generation 1 drained %+v", out)
			}
			want = out.Offset.LSN
		}
		if err := e.db.Restore(backup); err != nil {
			t.Fatal(err)
		}
		res, err := e.run(Options{})
		var rw *source.LSNRewoundError
		if !errors.As(err, &rw) || rw.Recorded != want || res.Batches != 0 {
			t.Fatalf("batches %v: run after a restore to before generation 1's snapshot: %+v, %v; want *LSNRewoundError at %s (generation 0 ended at %s)",
				batches, res, err, want, end0.LSN)
		}
	}
}

// Warm processes through a recovery (the generations a Checkpoint remembers,
// checkpoint.Generations): process A streams generation 0 on kept connections; process B,
// a cold one, finds the loss and opens the attempt; A's next invocation sees the open
// attempt and reads nothing; the recover steps (another process) commit generation 1; A's
// next invocation streams generation 1, and so does B's, each exactly once.
func TestResnapshotSeenByAWarmProcess(t *testing.T) {
	e, _ := resnapshotEnv(t, testlake.Local, 34)
	a := e.deps()
	runOn := func(d Deps) (Result, error) {
		return Run(context.Background(), e.spec, d, Options{Now: e.db.Now, Logger: slog.New(slog.NewJSONHandler(&e.logs, nil))})
	}
	// A is warm: it has read the generations (none) and remembers them.
	if _, err := a.Checkpoint.Generations(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := e.run(Options{}) // B
	if err != nil || res.Outcome != OutcomeResnapshotRequired {
		t.Fatalf("B after the purge: %+v, %v", res, err)
	}
	res, err = runOn(a)
	if err != nil || res.Outcome != OutcomeResnapshotRequired || res.Batches != 0 || res.Recovery.Attempt != 1 {
		t.Fatalf("warm A while B's attempt is open: %+v, %v; want resnapshot_required, attempt 1, no batch", res, err)
	}
	if _, err := Recover(t.Context(), e.recoverDeps()); err != nil {
		t.Fatalf("recover: %v", err)
	}
	e.exec(insert(12, 12))
	res, err = runOn(a)
	if err != nil || res.Generation != 1 || res.Rows != 1 || !res.CaughtUp {
		t.Fatalf("warm A after the recovery: %+v, %v; want generation 1, 1 row", res, err)
	}
	e.exec(insert(13, 13))
	if out := e.mustDrain(Options{}); out.Generation != 1 || out.Rows != 1 {
		t.Fatalf("B after A: %+v, want generation 1, 1 row", out)
	}
	e.exec(insert(14, 14))
	if res, err = runOn(a); err != nil || res.Generation != 1 || res.Rows != 1 {
		t.Fatalf("warm A after B: %+v, %v", res, err)
	}
	e.assertRecovered(1)
}
