package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/runtimeapi/runtimeapitest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// world is the simulator's orders table bootstrapped, streamed and applied to silver on a
// test lake, and the reconcile handler comparing silver with it (the source and every
// table through the lake's faults when set).
type world struct {
	t       *testing.T
	db      *cdcsim.DB
	gen     *workload.Generator
	spec    *config.Spec
	lake    *testlake.Lake
	h       *Handler
	fn      *runtimeapitest.Func
	metrics bytes.Buffer
}

func newWorld(t *testing.T, backend testlake.Backend) *world {
	t.Helper()
	ctx := context.Background()
	db := cdcsim.New(cdcsim.Config{Seed: 31, Start: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)})
	t.Cleanup(func() { db.Close() })
	def := workload.Orders()
	gen := workload.New(db, workload.Config{Seed: 31, TxnSize: 3, Tables: []string{def.Spec.Name}})
	if err := db.CreateTable(def.Spec); err != nil {
		t.Fatal(err)
	}
	if err := gen.Adopt(def); err != nil {
		t.Fatal(err)
	}
	if err := gen.Load(def.Spec.Name, 600, 200); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture(def.Spec.Name, cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, backend)
	spec := &config.Spec{AppID: "reconcile-test", Bootstrap: true,
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_orders"}}
	lake.Use(spec)
	spec.Defaults()
	spec.Silver = &config.Silver{Table: lake.URL("silver"), Keys: []string{"id"}}
	spec.Reconcile = &config.Reconcile{ReportTable: lake.URL("report"), BucketRows: 100}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, db: db, gen: gen, spec: spec, lake: lake}
	d := snapshot.Deps{Spec: spec, Source: db, Bronze: lake.RawTable(spec.Bronze), Facts: lake.RawTable(spec.FactsTable),
		Staging: lake.RawStore(spec.Checkpoint), Options: snapshot.Options{Now: db.Now}}
	if _, err := snapshot.Run(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := gen.Step(30); err != nil {
		t.Fatal(err)
	}
	w.catchUp()
	w.h = New(spec, func(_ context.Context, s *config.Spec) (Tables, error) {
		return Tables{Source: lake.Source(db), Silver: lake.Table(s.Silver.Table), Bronze: lake.Table(s.Bronze),
			Facts: lake.Table(s.FactsTable), Plans: lake.Table(s.PlansTable()), Report: lake.Table(s.Reconcile.ReportTable)}, nil
	}, slog.New(slog.DiscardHandler))
	w.h.Now, w.h.Metrics = db.Now, &w.metrics
	w.fn = runtimeapitest.Start(t, "reconcile", w.h.Handle)
	return w
}

// catchUp streams until caught up and applies bronze to silver.
func (w *world) catchUp() {
	w.t.Helper()
	ctx := context.Background()
	w.db.Idle()
	deps := stream.Deps{Source: w.db, Bronze: w.lake.RawTable(w.spec.Bronze), Facts: w.lake.RawTable(w.spec.FactsTable),
		Checkpoint: checkpoint.New(w.lake.RawStore(w.spec.Checkpoint), w.spec.AppID)}
	for caught := false; !caught; {
		res, err := stream.Run(ctx, w.spec, deps, stream.Options{Now: w.db.Now, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			w.t.Fatal(err)
		}
		caught = res.CaughtUp
	}
	if _, err := silver.Apply(ctx, silver.Tables{Bronze: w.lake.RawTable(w.spec.Bronze), Silver: w.lake.RawTable(w.spec.Silver.Table)},
		silver.Options{AppID: w.spec.AppID, Keys: []string{"id"}, Now: w.db.Now}); err != nil {
		w.t.Fatal(err)
	}
}

// invoke runs the handler through aws-lambda-go on event.
func (w *world) invoke(event string) (out Output, errType string) {
	w.t.Helper()
	r := w.fn.Invoke(event)
	if r.Error != nil {
		return out, r.Error.Type
	}
	if err := json.Unmarshal(r.Output, &out); err != nil {
		w.t.Fatalf("output %s: %v", r.Output, err)
	}
	return out, ""
}

// reports is how many runs the report table holds (its txn) and its rows.
func (w *world) reports() (runs int64, rows int64) {
	w.t.Helper()
	snap, err := w.lake.RawTable(w.spec.Reconcile.ReportTable).Snapshot(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	if snap.Version() < 0 {
		return 0, 0
	}
	runs, _ = snap.TxnVersion("reconcile#" + w.spec.AppID)
	it, err := snap.Scan(context.Background(), deltalog.ScanOptions{Columns: []string{"run_id"}})
	if err == nil {
		err = parquetio.Drain(context.Background(), it, func(rec arrow.RecordBatch) error { rows += rec.NumRows(); return nil })
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return runs, rows
}

// A synced silver table: the scheduled invocation reports all MATCH, appends one report
// and publishes 0 mismatches; a row lost from silver's view (a delete purged from the
// change table) is a finding, not an error: ok false, its rows counted, the metric above 0.
func TestHandlerReportsAndPublishesMismatches(t *testing.T) {
	w := newWorld(t, testlake.Local)
	out, typ := w.invoke(`{"run": "2026-06-01T00:00:00Z"}`)
	if typ != "" || !out.OK || out.Run != 1 || out.Mismatches != 0 || out.Counts["MATCH"] < 5 || out.Replayed {
		t.Fatalf("synced: %+v %s", out, typ)
	}
	if !strings.Contains(w.metrics.String(), `"ReconcileMismatches":0`) || !strings.Contains(w.metrics.String(), `"Namespace":"mssqlcdc"`) {
		t.Fatalf("metric line %s", w.metrics.String())
	}
	total := 0
	for _, n := range out.Counts {
		total += n
	}
	if runs, rows := w.reports(); runs != 1 || rows != int64(total) {
		t.Fatalf("report table: %d runs, %d rows", runs, rows)
	}

	// The same scheduled run again (a retried delivery): the report it wrote, no second.
	again, typ := w.invoke(`{"run": "2026-06-01T00:00:00Z"}`)
	if typ != "" || again.Run != 1 || !again.Replayed {
		t.Fatalf("same run again: %+v %s", again, typ)
	}
	if runs, _ := w.reports(); runs != 1 {
		t.Fatalf("%d runs after the same run twice", runs)
	}

	// A delete silver never sees: cleanup purges it from the change table before the
	// stream reads it.
	ids := w.ids()
	gone := ids[len(ids)/2]
	if _, err := w.db.Exec(func(tx *cdcsim.Txn) error { return tx.Delete("orders", []any{gone}) }); err != nil {
		t.Fatal(err)
	}
	w.db.Advance(time.Second)
	if err := w.db.Cleanup("dbo_orders", w.db.Idle()); err != nil {
		t.Fatal(err)
	}
	w.metrics.Reset()
	out, typ = w.invoke(`{"run": "2026-06-01T01:00:00Z", "sample": 0}`)
	if typ != "" || out.OK || out.Run != 2 || out.Mismatches != 2 || out.Counts["MISMATCH"] != 1 || out.Counts["MISSING_SOURCE"] != 1 {
		t.Fatalf("a lost delete: %+v %s; want one MISMATCH bucket and one MISSING_SOURCE key", out, typ)
	}
	if !strings.Contains(w.metrics.String(), `"ReconcileMismatches":2`) {
		t.Fatalf("metric line %s", w.metrics.String())
	}
}

// ids are the source table's keys, in order.
func (w *world) ids() []int64 {
	w.t.Helper()
	ctx := context.Background()
	rows, err := w.db.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: "orders"},
		Columns: []source.Column{{Name: "id", DataType: "int", Present: true}}})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []int64
	err = parquetio.Drain(ctx, rows, func(rec arrow.RecordBatch) error {
		a := rec.Column(0).(*array.Int32)
		for i := range a.Len() {
			out = append(out, int64(a.Value(i)))
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// Kill the invocation at its external calls (the source's and every table's, before a call
// takes effect or after, its answer lost), on local disk and on the emulators, then invoke
// again with the same event: the report table holds exactly one report, as many rows as
// an unkilled run's.
func TestKilledReconcileGivesOneReport(t *testing.T) {
	for _, backend := range testlake.Backends {
		t.Run(string(backend), func(t *testing.T) {
			w := newWorld(t, backend)
			report := func(name string) { w.spec.Reconcile.ReportTable = w.lake.URL(name) }
			report("report-clean")
			clean := &deltatest.Faults{}
			w.lake.Faults = clean
			out, err := w.h.Handle(context.Background(), Event{Run: "r1"})
			w.lake.Faults = nil
			if err != nil || !out.OK {
				t.Fatalf("clean run: %+v %v", out, err)
			}
			_, wantRows := w.reports()
			ops := clean.Ops()
			every := 1
			if testing.Short() || backend == testlake.AWS {
				every = 4
			}
			plans := testlake.KillPlans(ops, every)
			t.Logf("a clean invocation makes %d external calls; %d kill plans", len(ops), len(plans))
			for i, f := range plans {
				report(fmt.Sprintf("report-%d", i))
				w.lake.Faults = f
				_, err := w.h.Handle(context.Background(), Event{Run: "r1"})
				w.lake.Faults = nil
				// The DynamoDB log store's calls after its claim (the copy to the commit file,
				// then marking the entry complete) publish a commit that is already ours; a
				// failure there is left for the next reader to recover and the write succeeds
				// (deltalog/logstore/dynamo), so those kills go unnoticed by design.
				op := ops[f.KillAt-1]
				published := op == "ddb.UpdateItem" || (backend == testlake.AWS && strings.HasPrefix(op, "store.CopyIfAbsent _delta_log/"))
				if err == nil && f.Killed() && !published {
					t.Errorf("kill at %d (after=%v, %s) went unnoticed", f.KillAt, f.After, ops[f.KillAt-1])
				}
				if out, err := w.h.Handle(context.Background(), Event{Run: "r1"}); err != nil || !out.OK || out.Run != 1 {
					t.Fatalf("rerun after a kill at call %d (after=%v, %s): %+v %v", f.KillAt, f.After, ops[f.KillAt-1], out, err)
				}
				if runs, rows := w.reports(); runs != 1 || rows != wantRows {
					t.Fatalf("kill at call %d (after=%v, %s): %d reports of %d rows, want 1 of %d", f.KillAt, f.After, ops[f.KillAt-1], runs, rows, wantRows)
				}
			}
		})
	}
}

// Every failure reaches the caller under its declared name (functions/lambdaerr) through
// aws-lambda-go: a bad event is an EventError, a spec without a reconcile section a
// ConfigError, the
// source's errors keep theirs.
func TestErrorNames(t *testing.T) {
	w := newWorld(t, testlake.Local)
	// A bad event is an EventError whose message says it is the reconcile event, not a
	// ConfigError's "invalid table spec" (the spec is fine).
	for _, event := range []string{`[]`, `{"sample": 2}`, `{"sample": "x"}`, `{"run": "` + strings.Repeat("x", 201) + `"}`} {
		if r := w.fn.Invoke(event); r.Error == nil || r.Error.Type != "EventError" || !strings.HasPrefix(r.Error.Message, "reconcile event: ") ||
			strings.Contains(r.Error.Message, "table spec") {
			t.Errorf("event %s: %s, want an EventError on the reconcile event", event, r.ErrorBody)
		}
	}
	rc := w.spec.Reconcile
	w.spec.Reconcile = nil
	if _, typ := w.invoke(`{}`); typ != "ConfigError" {
		t.Errorf("no reconcile section: %q, want ConfigError", typ)
	}
	w.spec.Reconcile = rc
	for want, typed := range map[string]error{
		"TransientError":               &source.TransientError{Op: "max LSN", Err: errors.New("connection reset")},
		"LoginError":                   &source.LoginError{},
		"PermissionError":              &source.PermissionError{},
		"LockTimeoutError":             &source.LockTimeoutError{},
		"CaptureInstanceNotFoundError": &source.CaptureInstanceNotFoundError{},
		"ConcurrentModificationError":  &deltalog.ConcurrentModificationError{},
		"UnexpectedError":              errors.New("disk on fire"),
	} {
		h := New(w.spec, func(context.Context, *config.Spec) (Tables, error) {
			return Tables{}, fmt.Errorf("open: %w", typed)
		}, slog.New(slog.DiscardHandler))
		r := runtimeapitest.Start(t, "reconcile", h.Handle).Invoke(`{}`)
		if r.Error == nil || r.Error.Type != want {
			t.Errorf("%T: %+v, want %s", typed, r.Error, want)
		}
	}
}
