package stream

import (
	"context"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// killedEnv is a table with a little history, streamed with every store, log store and
// source call routed through f.
func killedEnv(t *testing.T, backend testlake.Backend, f *deltatest.Faults) *env {
	e := newEnvOn(t, backend, cdcsim.Config{Seed: 11})
	two := 2
	e.spec.Options.MaxCommitsPerBatch = &two
	e.exec(insert(1, 1))
	e.exec(insert(2, 2))
	e.exec(func(tx *cdcsim.Txn) error {
		if err := tx.Update("orders", []any{1}, cdcsim.Row{"id": 10}); err != nil {
			return err
		}
		return tx.Delete("orders", []any{2})
	})
	e.db.Idle()
	e.lake.Faults = f
	return e
}

// Kill the invocation at every external call (each store put, copy, get and list, each
// log store call, each SQL call), before the call takes effect or after it (the answer
// lost), then run again: bronze holds each change exactly once and the facts one row
// per batch (invariants 4 and 5).
func TestKilledAtEveryCallConverges(t *testing.T) {
	forBackends(t, testKilledAtEveryCall)
}

func testKilledAtEveryCall(t *testing.T, backend testlake.Backend) {
	clean := &deltatest.Faults{}
	e := killedEnv(t, backend, clean)
	if res := e.mustDrain(Options{}); res.Batches < 2 {
		t.Fatalf("clean run: %+v", res)
	}
	e.lake.Faults = nil
	e.assertConverged()
	ops := clean.Ops()
	t.Logf("a clean drain makes %d external calls", len(ops))
	for _, f := range testlake.KillPlans(ops, 1) {
		e := killedEnv(t, backend, f)
		if _, err := e.run(Options{}); err == nil && f.Killed() {
			t.Errorf("kill at %d (after=%v) went unnoticed", f.KillAt, f.After)
		}
		e.lake.Faults = nil
		e.mustDrain(Options{})
		e.assertConverged()
		if t.Failed() {
			t.Fatalf("kill at call %d (after=%v, %s) did not converge", f.KillAt, f.After, ops[f.KillAt-1])
		}
	}
}

// A crash after the bronze commit and before the facts commit, then CDC cleanup of the
// batch's range: the rerun finds the batch in bronze, rebuilds its facts row from the
// commit's userMetadata and reads nothing, so the purge is no data loss.
func TestRerunAfterBronzeCommitSurvivesCleanup(t *testing.T) {
	clean := &deltatest.Faults{}
	e := killedEnv(t, testlake.Local, clean)
	e.mustDrain(Options{})
	k, writes := 0, 0
	for i, op := range clean.Ops() {
		if strings.HasPrefix(op, "log.Write") {
			if writes++; writes == 2 { // batch 0: the bronze commit, then the facts commit
				k = i + 1
				break
			}
		}
	}
	f := &deltatest.Faults{KillAt: k}
	e = killedEnv(t, testlake.Local, f)
	if _, err := e.run(Options{}); err == nil {
		t.Fatalf("kill at %d did not stop the run", k)
	}
	e.lake.Faults = nil
	_, lg := e.bronzeState()
	if lg.ChangeRows() == 0 || len(e.factsRows()) != 0 {
		t.Fatalf("kill at call %d: want bronze committed and no facts yet", k)
	}
	max, _ := e.db.MaxLSN(context.Background())
	if err := e.db.Cleanup("dbo_orders", max); err != nil {
		t.Fatal(err)
	}
	if _, err := e.run(Options{MaxBatches: 1}); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	rows := e.factsRows()
	if len(rows) != 1 || *rows[0].Rows != lg.ChangeRows() || rows[0].MinLSN == "" {
		t.Errorf("facts after rerun: %+v", rows)
	}
	if _, lg2 := e.bronzeState(); lg2.ChangeRows() != lg.ChangeRows() || lg2.Duplicates != 0 {
		t.Errorf("bronze changed on rerun: %+v -> %+v", lg, lg2)
	}
}
