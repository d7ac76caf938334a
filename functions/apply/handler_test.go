package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/runtimeapi/runtimeapitest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// world is the simulator's orders table streamed into bronze on a test lake, and the
// apply handler keeping silver from it.
type world struct {
	t    *testing.T
	db   *cdcsim.DB
	gen  *workload.Generator
	spec *config.Spec
	lake *testlake.Lake
	h    *Handler
	fn   *runtimeapitest.Func
}

// newWorld loads rows rows into the orders table before CDC is enabled (only the
// snapshot brings them) and makes a handler whose tables come from the lake (through its
// faults when set), with silver key ranges of memory bytes (0: the default).
func newWorld(t *testing.T, backend testlake.Backend, rows int, memory int64) *world {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 21})
	def := workload.Orders()
	gen := workload.New(db, workload.Config{Seed: 21, Tables: []string{def.Spec.Name}})
	if err := db.CreateTable(def.Spec); err != nil {
		t.Fatal(err)
	}
	if err := gen.Adopt(def); err != nil {
		t.Fatal(err)
	}
	if err := gen.Load(def.Spec.Name, rows, 500); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture(def.Spec.Name, cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, backend)
	spec := &config.Spec{AppID: "apply-test", Bootstrap: true,
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_orders"}}
	lake.Use(spec)
	spec.Defaults()
	spec.Options.NumPartitions = 2
	spec.Silver = &config.Silver{Table: lake.URL("silver"), Keys: []string{"id"}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, db: db, gen: gen, spec: spec, lake: lake}
	w.h = New(spec, func(_ context.Context, s *config.Spec) (silver.Tables, error) {
		return silver.Tables{Bronze: lake.Table(s.Bronze), Silver: lake.Table(s.Silver.Table)}, nil
	}, slog.New(slog.DiscardHandler))
	w.h.Now = db.Now
	w.h.TempDir = t.TempDir()
	w.h.MemoryBytes = memory
	w.fn = runtimeapitest.Start(t, "apply", w.h.Handle)
	return w
}

// bootstrap takes the full snapshot the stream starts from.
func (w *world) bootstrap() {
	w.t.Helper()
	d := snapshot.Deps{Spec: w.spec, Source: w.db, Bronze: w.lake.RawTable(w.spec.Bronze),
		Facts: w.lake.RawTable(w.spec.FactsTable), Staging: w.lake.RawStore(w.spec.Checkpoint),
		Options: snapshot.Options{Now: w.db.Now}}
	if _, err := snapshot.Run(context.Background(), d); err != nil {
		w.t.Fatal(err)
	}
}

// drain streams until caught up.
func (w *world) drain() {
	w.t.Helper()
	w.db.Idle()
	deps := stream.Deps{Source: w.db, Bronze: w.lake.RawTable(w.spec.Bronze), Facts: w.lake.RawTable(w.spec.FactsTable),
		Checkpoint: checkpoint.New(w.lake.RawStore(w.spec.Checkpoint), w.spec.AppID)}
	for range 1000 {
		res, err := stream.Run(context.Background(), w.spec, deps, stream.Options{Now: w.db.Now, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			w.t.Fatalf("stream: %v", err)
		}
		if res.CaughtUp {
			return
		}
	}
	w.t.Fatal("stream never caught up")
}

// step writes n transactions of the workload (updates, deletes, key updates, inserts).
func (w *world) step(n int) {
	w.t.Helper()
	w.db.Advance(time.Second)
	if err := w.gen.Step(n); err != nil {
		w.t.Fatal(err)
	}
}

// invoke runs the handler through aws-lambda-go's invoke path and decodes its output;
// errType is the errorType of a failure ("" on success).
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

// applied invokes until caught up and returns the invocations' outputs.
func (w *world) applied() []Output {
	w.t.Helper()
	var outs []Output
	for range 100 {
		out, typ := w.invoke(`{}`)
		if typ != "" {
			w.t.Fatalf("apply failed: %s", typ)
		}
		outs = append(outs, out)
		if out.CaughtUp {
			return outs
		}
	}
	w.t.Fatal("apply never caught up")
	return nil
}

// assertSilverEqualsSource compares silver, read through deltalog (deletion vectors
// applied), with the simulator's table row for row.
func (w *world) assertSilverEqualsSource(when string) {
	w.t.Helper()
	ctx := context.Background()
	cols, err := w.db.Columns("orders")
	if err != nil {
		w.t.Fatal(err)
	}
	rows, err := w.db.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: "orders"}, Columns: cols})
	if err != nil {
		w.t.Fatal(err)
	}
	want, err := rebuild.FromRows(ctx, rows, []string{"id"})
	if err != nil {
		w.t.Fatal(err)
	}
	snap, err := w.lake.RawTable(w.spec.Silver.Table).Snapshot(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: names})
	if err != nil {
		w.t.Fatal(err)
	}
	defer it.Close()
	got, err := rebuild.FromRows(ctx, scanRows{it}, []string{"id"})
	if err != nil {
		w.t.Fatal(err)
	}
	if d := rebuild.Diff(want, got, 10); len(d) > 0 {
		w.t.Fatalf("%s: silver differs from the source table:\n%s", when, strings.Join(d, "\n"))
	}
	if len(got.Rows) == 0 {
		w.t.Fatalf("%s: an empty table proves nothing", when)
	}
}

// scanRows adapts a scan to source.Rows for rebuild.FromRows.
type scanRows struct{ deltalog.RecordIterator }

func (s scanRows) Schema() *arrow.Schema { return s.RecordIterator.Schema() }

// position is silver's recorded position.
func (w *world) position() silver.Position {
	w.t.Helper()
	snap, err := w.lake.RawTable(w.spec.Silver.Table).Snapshot(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	p, _, err := silver.ReadPosition(snap)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// Through aws-lambda-go's invoke path, on local disk and on the emulators: the first
// invocation rebuilds silver from the bootstrap's snapshot, and after each round of a live
// workload (updates, deletes, key updates, multi-statement transactions) streamed into
// bronze, one invocation brings silver to the source table row for row.
func TestHandlerKeepsSilverEqualToSource(t *testing.T) {
	for _, backend := range testlake.Backends {
		t.Run(string(backend), func(t *testing.T) {
			w := newWorld(t, backend, 400, 0)
			w.bootstrap()
			w.drain()
			out, typ := w.invoke(`{}`)
			if typ != "" || !out.CaughtUp || out.Rebuilds != 1 || out.Inserted != 400 || out.Commits != 1 {
				t.Fatalf("first invocation: %+v %s", out, typ)
			}
			w.assertSilverEqualsSource("after the bootstrap")
			for round := range 4 {
				w.step(30)
				w.drain()
				out, typ := w.invoke(`{}`)
				if typ != "" || !out.CaughtUp || out.Rebuilds != 0 || out.Commits != 1 || out.Updated+out.Deleted+out.Inserted == 0 {
					t.Fatalf("round %d: %+v %s", round, out, typ)
				}
				w.assertSilverEqualsSource(fmt.Sprintf("round %d", round))
			}
			if w.gen.Stats.KeyUpdates == 0 || w.gen.Stats.Deletes == 0 {
				t.Fatalf("the workload wrote no key update or delete: %+v", w.gen.Stats)
			}
			out, _ = w.invoke(`{}`)
			if !out.CaughtUp || out.Commits != 0 {
				t.Fatalf("nothing new: %+v", out)
			}
		})
	}
}

// Before the bootstrap there is no bronze: an invocation is caught up at bronze version
// -1 and creates no silver.
func TestHandlerBeforeTheBootstrap(t *testing.T) {
	w := newWorld(t, testlake.Local, 10, 0)
	out, typ := w.invoke(`{}`)
	if typ != "" || !out.CaughtUp || out.BronzeVersion != -1 || out.SilverVersion != -1 || out.Commits != 0 {
		t.Fatalf("%+v %s", out, typ)
	}
}

// stepClock is a clock that moves a second at every reading, so that a budget of 1.5 s
// lets Apply start exactly one key range: the handler reads it once for the deadline,
// Apply once before each range.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// The time budget: an invocation stops before a key range that would start after it,
// returns caught_up false with what it committed, and silver's position keeps the pass in
// progress, so the next invocation goes on from there; in several invocations silver
// reaches the same state one unbounded invocation gives, and equals the source. A budget
// the invocation's own deadline (less the margin) leaves no room for starts nothing.
func TestHandlerStopsWithinItsBudgetAndGoesOn(t *testing.T) {
	w := newWorld(t, testlake.Local, 2000, 64<<10)
	w.bootstrap()
	w.step(200)
	w.drain()

	// The Lambda's deadline is 30 s away, less than the 2-minute margin: nothing starts.
	w.fn.Server.Timeout = 30 * time.Second
	out, typ := w.invoke(`{}`)
	if typ != "" || out.CaughtUp || out.Commits != 0 || out.SilverVersion != -1 {
		t.Fatalf("inside the margin: %+v %s", out, typ)
	}
	w.fn.Server.Timeout = 0

	clock := &stepClock{t: w.db.Now()}
	w.h.Now = clock.Now
	var outs []Output
	for i := 0; ; i++ {
		out, typ := w.invoke(`{"max_seconds": 1.5}`)
		if typ != "" {
			t.Fatalf("invocation %d: %s", i, typ)
		}
		outs = append(outs, out)
		if out.CaughtUp {
			break
		}
		if out.Commits != 1 {
			t.Fatalf("invocation %d: %+v, want exactly one key range", i, out)
		}
		// The position moved by that one range: the pass goes on, or this was its last.
		if p := w.position(); p.Step != int64(i+1) || (p.Pass != nil && p.Pass.Done != i+1) {
			t.Fatalf("invocation %d: position %+v, want step %d and %d ranges done", i, p, i+1, i+1)
		}
		if i > 100 {
			t.Fatal("never caught up")
		}
	}
	if len(outs) < 3 {
		t.Fatalf("%d invocations: the run was not cut into several key ranges (%+v)", len(outs), outs)
	}
	var inserted int64
	for _, o := range outs {
		inserted += o.Inserted
	}
	w.assertSilverEqualsSource("after the budgeted invocations")
	rows := len(w.sourceKeys())
	if inserted != int64(rows) || w.position().Pass != nil {
		t.Fatalf("inserted %d over %d invocations, table has %d rows; position %+v", inserted, len(outs), rows, w.position())
	}
}

// sourceKeys are the simulator's table's rows by key.
func (w *world) sourceKeys() map[string][]string {
	w.t.Helper()
	cols, _ := w.db.Columns("orders")
	rows, err := w.db.ReadTable(context.Background(), source.TableRead{Table: source.Table{Schema: "dbo", Name: "orders"}, Columns: cols})
	if err != nil {
		w.t.Fatal(err)
	}
	st, err := rebuild.FromRows(context.Background(), rows, []string{"id"})
	if err != nil {
		w.t.Fatal(err)
	}
	return st.Rows
}

// Kill the handler's apply at every external call (store and log store calls, before one
// takes effect or after, its answer lost), on local disk and on the emulators, then
// invoke again until caught up: silver equals the source table and its position holds no
// pass. The run is a rebuild in several key ranges (a small table and a small memory
// budget keep the calls few), on a fresh silver table per kill.
func TestKilledApplyInvocationConverges(t *testing.T) {
	for _, backend := range testlake.Backends {
		t.Run(string(backend), func(t *testing.T) {
			w := newWorld(t, backend, 200, 12<<10)
			w.bootstrap()
			w.step(10)
			w.drain()
			table := func(name string) { w.spec.Silver.Table = w.lake.URL(name) }
			table("silver-clean")
			clean := &deltatest.Faults{}
			w.lake.Faults = clean
			out, err := w.h.Handle(context.Background(), Event{})
			w.lake.Faults = nil
			if err != nil || !out.CaughtUp || out.Commits < 2 {
				t.Fatalf("clean run: %+v %v, want several key ranges", out, err)
			}
			w.assertSilverEqualsSource("clean run")
			ops := clean.Ops()
			plans := testlake.KillPlans(ops, 1)
			t.Logf("a clean invocation makes %d external calls; %d kill plans", len(ops), len(plans))
			for i, f := range plans {
				table(fmt.Sprintf("silver-%d", i))
				w.lake.Faults = f
				_, err := w.h.Handle(context.Background(), Event{})
				w.lake.Faults = nil
				if err == nil && f.Killed() {
					t.Errorf("kill at %d (after=%v) went unnoticed", f.KillAt, f.After)
				}
				w.applied()
				w.assertSilverEqualsSource(fmt.Sprintf("rerun after a kill at call %d (after=%v, %s)", f.KillAt, f.After, ops[f.KillAt-1]))
				if p := w.position(); p.Pass != nil {
					t.Fatalf("kill at call %d: position after the rerun %+v", f.KillAt, p)
				}
			}
		})
	}
}

// Every failure reaches the caller under its declared name (functions/lambdaerr) through
// aws-lambda-go: a bad event is an EventError, a refused key or a missing silver section
// is a ConfigError, silver built
// from another bronze a BronzeChangedError, and the rest as declared.
func TestErrorNames(t *testing.T) {
	w := newWorld(t, testlake.Local, 20, 0)
	w.bootstrap()
	w.drain()
	if _, typ := w.invoke(`{}`); typ != "" {
		t.Fatalf("first apply: %s", typ)
	}
	// A bad event is an EventError whose message says it is the apply event, not a
	// ConfigError's "invalid table spec" (the spec is fine).
	for _, event := range []string{`[]`, `{"max_seconds": "5"}`, `{"max_seconds": -1}`, `{"max_seconds": 1e12}`} {
		if r := w.fn.Invoke(event); r.Error == nil || r.Error.Type != "EventError" || !strings.HasPrefix(r.Error.Message, "apply event: ") ||
			strings.Contains(r.Error.Message, "table spec") {
			t.Errorf("event %s: %s, want an EventError on the apply event", event, r.ErrorBody)
		}
	}

	w.spec.Silver.Keys = []string{"customer"}
	if _, typ := w.invoke(`{}`); typ != "ConfigError" {
		t.Errorf("other keys: %q, want ConfigError", typ)
	}
	w.spec.Silver.Keys = []string{"id"}

	// Bronze deleted and created again (another table id) under silver's feet.
	other := newWorld(t, testlake.Local, 20, 0)
	other.bootstrap()
	for range 3 {
		other.step(5)
		other.drain()
	}
	bronze := w.spec.Bronze
	w.spec.Bronze = other.spec.Bronze
	if _, typ := w.invoke(`{}`); typ != "BronzeChangedError" {
		t.Errorf("another bronze: %q, want BronzeChangedError", typ)
	}
	w.spec.Bronze = bronze

	silverSpec := w.spec.Silver
	w.spec.Silver = nil
	if _, typ := w.invoke(`{}`); typ != "ConfigError" {
		t.Errorf("no silver section: %q, want ConfigError", typ)
	}
	w.spec.Silver = silverSpec

	for want, typed := range map[string]error{
		"PositionError":               &silver.PositionError{Reason: "version 9 of the position"},
		"ConcurrentModificationError": &deltalog.ConcurrentModificationError{},
		"UnexpectedError":             errors.New("disk on fire"),
	} {
		h := New(w.spec, func(context.Context, *config.Spec) (silver.Tables, error) {
			return silver.Tables{}, fmt.Errorf("open: %w", typed)
		}, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)))
		r := runtimeapitest.Start(t, "apply", h.Handle).Invoke(`{}`)
		if r.Error == nil || r.Error.Type != want || !strings.Contains(r.Error.Message, typed.Error()) {
			t.Errorf("%T: %s, want errorType %s", typed, r.ErrorBody, want)
		}
	}
	h := New(nil, nil, slog.New(slog.DiscardHandler))
	h.SpecErr = &config.ConfigError{Problems: []config.Problem{{Field: "silver.table", Reason: "required"}}}
	if _, err := h.Handle(context.Background(), Event{}); err == nil || fmt.Sprintf("%T", err) != "*config.ConfigError" {
		t.Errorf("invalid spec: %T %v", err, err)
	}
}
