package snapshot_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
)

// machine runs the bootstrap machine's steps one after the other, each as a fresh
// invocation; a step that fails is run again without faults (Step Functions' Retry: a new
// invocation after the failed one died), and so is every step after it.
func machine(t *testing.T, e *env) lsn.Offset {
	t.Helper()
	ctx := context.Background()
	failed := false
	step := func(name string, fn func(j *snapshot.Job) error) {
		t.Helper()
		if err := fn(e.job()); err != nil {
			if failed || !errors.Is(err, deltatest.ErrKilled) {
				t.Fatalf("%s: %v", name, err)
			}
			failed = true
			e.f = nil
			if err := fn(e.job()); err != nil {
				t.Fatalf("%s rerun: %v", name, err)
			}
		}
	}
	var open snapshot.OpenResult
	step("open", func(j *snapshot.Job) (err error) { open, err = j.Open(ctx); return })
	if open.Status == snapshot.Opened {
		var plan snapshot.PlanResult
		step("plan", func(j *snapshot.Job) (err error) { plan, err = j.Plan(ctx, open.Snapshot); return })
		for _, r := range plan.Ranges {
			step("read", func(j *snapshot.Job) error { _, err := j.Read(ctx, open.Snapshot, r); return err })
		}
	}
	if open.Status != snapshot.Resume {
		step("commit", func(j *snapshot.Job) error { _, err := j.Commit(ctx, open.Snapshot); return err })
	}
	var off lsn.Offset
	step("close", func(j *snapshot.Job) (err error) { off, err = j.Close(ctx, open); return })
	return off
}

// snapshotRows counts bronze's operation-0 rows per _start_lsn.
func snapshotRows(t *testing.T, e *env) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	f := e.f
	e.f = nil
	defer func() { e.f = f }()
	snap, err := e.table(e.spec.Bronze).Snapshot(ctx)
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

func mutates(op string) bool {
	for _, w := range []string{"Put", "Copy", "Delete", "Write"} {
		if strings.Contains(op, w) {
			return true
		}
	}
	return false
}

// Kill the machine at every external call of every step (each store, log store and
// source call; before it takes effect, and after for writes), rerun the failed step and
// the rest: bronze holds the one snapshot, and the facts one snapshot_open and one
// bootstrap row.
func TestKilledAtEveryCallConverges(t *testing.T) { testKilled(t, backendLocal, 1) }

// On the emulators (S3 on gofakes3, DynamoDB log store on dynalite), every fifth call.
func TestKilledOnEmulatorsConverges(t *testing.T) { testKilled(t, backendAWS, 5) }

func testKilled(t *testing.T, backend string, every int) {
	kc := keyCases[0]
	clean := &deltatest.Faults{}
	e := newEnvOn(t, backend, kc, 20)
	e.spec.Options.NumPartitions = 2
	e.f = clean
	want := machine(t, e)
	wantRows := snapshotRows(t, e)
	ops := clean.Ops()
	if len(wantRows) != 1 || wantRows[want.LSN.String()] != 20 {
		t.Fatalf("clean run: %v", wantRows)
	}
	t.Logf("a clean bootstrap makes %d external calls", len(ops))
	for _, after := range []bool{false, true} {
		for k := 1; k <= len(ops); k += every {
			if after && !mutates(ops[k-1]) {
				continue
			}
			e := newEnvOn(t, backend, kc, 20)
			e.spec.Options.NumPartitions = 2
			e.f = &deltatest.Faults{KillAt: k, After: after}
			got := machine(t, e)
			rows := snapshotRows(t, e)
			fr := e.factsRows()
			if got != want || len(rows) != 1 || rows[want.LSN.String()] != 20 || count(fr, facts.EventBootstrap) != 1 || count(fr, facts.EventSnapshotOpen) != 1 {
				t.Fatalf("killed at %d (%s, after %v): offset %+v, snapshot rows %v, bootstrap rows %d, open rows %d",
					k, ops[k-1], after, got, rows, count(fr, facts.EventBootstrap), count(fr, facts.EventSnapshotOpen))
			}
		}
	}
}
