package seed_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// machine runs the seed machine's steps one after the other, each as a fresh invocation;
// a step that fails is run again without faults (Step Functions' Retry: a new invocation
// after the failed one died), and so is every step after it.
func machine(t *testing.T, e *env, req seed.Request) lsn.Offset {
	t.Helper()
	ctx := context.Background()
	failed := false
	step := func(name string, fn func(d seed.Deps) error) {
		t.Helper()
		if err := fn(e.deps()); err != nil {
			if failed || !errors.Is(err, deltatest.ErrKilled) {
				t.Fatalf("%s: %v", name, err)
			}
			failed = true
			e.lake.Faults = nil
			if err := fn(e.deps()); err != nil {
				t.Fatalf("%s rerun: %v", name, err)
			}
		}
	}
	var plan seed.PlanResult
	step("plan", func(d seed.Deps) (err error) { plan, err = seed.Plan(ctx, d, req); return })
	for _, g := range plan.Groups {
		step("convert", func(d seed.Deps) error { _, err := seed.Convert(ctx, d, plan.Seed, plan.Plan, g); return err })
	}
	step("commit", func(d seed.Deps) error { _, err := seed.Commit(ctx, d, plan.Seed, plan.Plan); return err })
	return seed.Close(plan.Seed)
}

// faultEnv is dbo.t of 40 rows on backend and a copy of it in three Parquet files, one
// group each.
func faultEnv(t *testing.T, backend testlake.Backend) (*env, seed.Request) {
	t.Helper()
	e := newEnv(t, backend, tSpec, cdcsim.Config{})
	e.exec(func(tx *cdcsim.Txn) error {
		for i := 1; i <= 40; i++ {
			if err := insertRow(tx, i); err != nil {
				return err
			}
		}
		return nil
	})
	url := e.lake.URL("copy")
	for f := 0; f < 3; f++ {
		var ids []int64
		for i := 1 + f*14; i <= min(40, (f+1)*14); i++ {
			ids = append(ids, int64(i))
		}
		rec := idRecord(t, ids)
		e.writeParquet(url, "part-"+string(rune('a'+f))+".parquet", false, rec)
		rec.Release()
	}
	e.opts.GroupBytes = 1 // one file per group
	return e, seed.Request{Copy: url, AsOf: e.maxLSN().String(), AllowMissingColumns: true}
}

func insertRow(tx *cdcsim.Txn, i int) error {
	_, err := tx.Insert("t", cdcsim.Row{"id": int64(i)})
	return err
}

// Kill the seed machine at every external call of every step (each store, log store,
// DynamoDB and source call; before it takes effect, and after for writes), rerun the
// failed step and the rest: bronze holds one seed commit of the copy's rows, and the facts
// one bootstrap row.
func TestKilledAtEveryCallConverges(t *testing.T) { testKilled(t, testlake.Local, 1) }

// On the emulators (S3 on gofakes3, the DynamoDB log store on dynalite), every fifth call.
func TestKilledOnEmulatorsConverges(t *testing.T) { testKilled(t, testlake.AWS, 5) }

func testKilled(t *testing.T, backend testlake.Backend, every int) {
	clean := &deltatest.Faults{}
	e, req := faultEnv(t, backend)
	e.lake.Faults = clean
	want := machine(t, e, req)
	e.lake.Faults = nil
	if rows := e.snapshotRows(); len(rows) != 1 || rows[want.LSN.String()] != 40 || e.seedCommits() != 1 {
		t.Fatalf("clean run: snapshot rows %v, seed commits %d", rows, e.seedCommits())
	}
	ops := clean.Ops()
	t.Logf("a clean seed makes %d external calls", len(ops))
	for _, f := range testlake.KillPlans(ops, every) {
		e, req := faultEnv(t, backend)
		e.lake.Faults = f
		got := machine(t, e, req)
		e.lake.Faults = nil
		rows := e.snapshotRows()
		fr := e.factsRows()
		if got != want || len(rows) != 1 || rows[want.LSN.String()] != 40 || e.seedCommits() != 1 || count(fr, facts.EventBootstrap) != 1 {
			t.Fatalf("killed at %d (%s, after %v): offset %+v, snapshot rows %v, seed commits %d, bootstrap rows %d",
				f.KillAt, ops[f.KillAt-1], f.After, got, rows, e.seedCommits(), count(fr, facts.EventBootstrap))
		}
		for _, r := range fr {
			if r.Event == facts.EventBootstrap && (r.Rows == nil || *r.Rows != 40) {
				t.Fatalf("killed at %d (%s): bootstrap row %+v", f.KillAt, ops[f.KillAt-1], r)
			}
		}
	}
}

// A whole rerun of the machine after it finished (the execution started again) finds the
// seed and writes nothing more.
func TestMachineRerunWritesNothing(t *testing.T) {
	e, req := faultEnv(t, testlake.Local)
	first := machine(t, e, req)
	v := e.bronzeVersion()
	if again := machine(t, e, req); again != first || e.bronzeVersion() != v || count(e.factsRows(), facts.EventBootstrap) != 1 {
		t.Fatalf("rerun: %+v (first %+v), version %d (was %d)", again, first, e.bronzeVersion(), v)
	}
}
