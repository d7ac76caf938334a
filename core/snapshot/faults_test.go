package snapshot_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// machine runs the bootstrap machine's steps one after the other, each as a fresh
// invocation; a step that fails is run again without faults (Step Functions' Retry: a new
// invocation after the failed one died), and so is every step after it.
func machine(t *testing.T, e *env) lsn.Offset {
	t.Helper()
	ctx := context.Background()
	failed := false
	step := func(name string, fn func(d snapshot.Deps) error) {
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
	var open snapshot.OpenResult
	step("open", func(d snapshot.Deps) (err error) { open, err = snapshot.Open(ctx, d); return })
	if open.Status == snapshot.Opened {
		var plan snapshot.PlanResult
		step("plan", func(d snapshot.Deps) (err error) { plan, err = snapshot.Plan(ctx, d, open.Snapshot); return })
		for _, r := range plan.Ranges {
			step("read", func(d snapshot.Deps) error { _, err := snapshot.Read(ctx, d, open.Snapshot, r); return err })
		}
	}
	if open.Status != snapshot.Resume {
		step("commit", func(d snapshot.Deps) error { _, err := snapshot.Commit(ctx, d, open.Snapshot); return err })
	}
	return snapshot.Close(open)
}

// snapshotRows counts bronze's operation-0 rows per _start_lsn.
func snapshotRows(t *testing.T, e *env) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	if snap.Version() < 0 {
		return out
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: []string{bronze.ColStartLSN}, Filter: deltalog.Eq(bronze.ColOperation, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		col := rec.Column(0).(interface{ Value(int) string })
		for i := 0; i < int(rec.NumRows()); i++ {
			out[col.Value(i)]++
		}
		rec.Release()
	}
}

// Kill the machine at every external call of every step (each store, log store and
// source call; before it takes effect, and after for writes), rerun the failed step and
// the rest: bronze holds the one snapshot, and the facts one snapshot_open and one
// bootstrap row.
func TestKilledAtEveryCallConverges(t *testing.T) { testKilled(t, testlake.Local, 1) }

// On the emulators (S3 on gofakes3, DynamoDB log store on dynalite), every fifth call.
func TestKilledOnEmulatorsConverges(t *testing.T) { testKilled(t, testlake.AWS, 5) }

func testKilled(t *testing.T, backend testlake.Backend, every int) {
	kc := keyCases[0]
	clean := &deltatest.Faults{}
	e := newEnvOn(t, backend, kc, 20)
	e.spec.Options.NumPartitions = 2
	e.lake.Faults = clean
	want := machine(t, e)
	wantRows := snapshotRows(t, e)
	ops := clean.Ops()
	if len(wantRows) != 1 || wantRows[want.LSN.String()] != 20 {
		t.Fatalf("clean run: %v", wantRows)
	}
	t.Logf("a clean bootstrap makes %d external calls", len(ops))
	for _, f := range testlake.KillPlans(ops, every) {
		e := newEnvOn(t, backend, kc, 20)
		e.spec.Options.NumPartitions = 2
		e.lake.Faults = f
		got := machine(t, e)
		rows := snapshotRows(t, e)
		fr := e.factsRows()
		if got != want || len(rows) != 1 || rows[want.LSN.String()] != 20 || count(fr, facts.EventBootstrap) != 1 || count(fr, facts.EventSnapshotOpen) != 1 {
			t.Fatalf("killed at %d (%s, after %v): offset %+v, snapshot rows %v, bootstrap rows %d, open rows %d",
				f.KillAt, ops[f.KillAt-1], f.After, got, rows, count(fr, facts.EventBootstrap), count(fr, facts.EventSnapshotOpen))
		}
	}
}
