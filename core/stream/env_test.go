package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
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
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// env is one table streamed from a cdcsim database into Delta tables on a test lake
// (local disk, or S3 and DynamoDB on the emulators).
type env struct {
	t    *testing.T
	db   *cdcsim.DB
	spec *config.Spec
	lake *testlake.Lake
	logs bytes.Buffer
}

func ordersColumns() []source.Column {
	return []source.Column{
		{Name: "id", DataType: "int"},
		{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Nullable: true},
		{Name: "note", DataType: "nvarchar", MaxLength: 50, Nullable: true},
	}
}

func newEnv(t *testing.T, cfg cdcsim.Config) *env { return newEnvOn(t, testlake.Local, cfg) }

func newEnvOn(t *testing.T, backend testlake.Backend, cfg cdcsim.Config) *env {
	t.Helper()
	db := cdcsim.New(cfg)
	if err := db.CreateTable(cdcsim.TableSpec{Name: "orders", Columns: ordersColumns(), Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("orders", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, backend)
	spec := &config.Spec{
		AppID:  "orders-test",
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_orders"},
	}
	lake.Use(spec)
	spec.Defaults()
	spec.Options.NumPartitions = 2
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, spec: spec, lake: lake}
}

// deps are one invocation's connections, through the lake's wrappers and faults.
func (e *env) deps() Deps {
	return Deps{
		Source:     e.lake.Source(e.db),
		Bronze:     e.lake.Table(e.spec.Bronze),
		Facts:      e.lake.Table(e.spec.FactsTable),
		Plans:      e.lake.Table(e.spec.PlansTable()),
		Checkpoint: checkpoint.New(e.lake.Store(e.spec.Checkpoint), e.spec.AppID),
	}
}

// standaloneDeps are the connections of a standalone snapshot of the table
// (snapshot(target), as mssqlcdc snapshot takes it): no facts table, the checkpoint
// prefix as its staging area.
func (e *env) standaloneDeps() snapshot.Deps {
	return snapshot.Deps{Spec: e.spec, Source: e.db, Bronze: e.lake.RawTable(e.spec.Bronze),
		Staging: e.lake.RawStore(e.spec.Checkpoint), Options: snapshot.Options{Standalone: true, Now: e.db.Now}}
}

// checkpointRaw is the stream's checkpoint without wrappers or faults (for checks).
func (e *env) checkpointRaw() *checkpoint.Checkpoint {
	return checkpoint.New(e.lake.RawStore(e.spec.Checkpoint), e.spec.AppID)
}

// run runs one invocation.
func (e *env) run(opts Options) (Result, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(&e.logs, nil))
	}
	if opts.Now == nil {
		opts.Now = e.db.Now
	}
	return Run(context.Background(), e.spec, e.deps(), opts)
}

// mustDrain runs invocations until caught up.
func (e *env) mustDrain(opts Options) Result {
	e.t.Helper()
	var total Result
	for i := 0; i < 1000; i++ {
		res, err := e.run(opts)
		if err != nil {
			e.t.Fatalf("run: %v", err)
		}
		total.Batches += res.Batches
		total.Rows += res.Rows
		total.Offset, total.Generation = res.Offset, res.Generation
		if res.CaughtUp {
			total.CaughtUp = true
			return total
		}
	}
	e.t.Fatal("never caught up")
	return total
}

func (e *env) exec(fn func(tx *cdcsim.Txn) error) lsn.LSN {
	e.t.Helper()
	e.db.Advance(time.Second)
	l, err := e.db.Exec(fn)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// bronzeState rebuilds the current state from bronze.
func (e *env) bronzeState() (*rebuild.State, *rebuild.Log) {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	st, lg, err := rebuild.FromBronze(context.Background(), snap, []string{"id"})
	if err != nil {
		e.t.Fatal(err)
	}
	return st, lg
}

// sourceState reads the simulator's table.
func (e *env) sourceState() *rebuild.State {
	e.t.Helper()
	cols, err := e.db.Columns("orders")
	if err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.db.ReadTable(context.Background(), source.TableRead{Table: source.Table{Schema: "dbo", Name: "orders"}, Columns: cols})
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := rebuild.FromRows(context.Background(), rows, []string{"id"})
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// sourceChangeRows counts the change rows of every capture instance of orders that
// stream reads: each instance's rows below the next instance's start LSN.
func (e *env) sourceChangeRows() int64 {
	e.t.Helper()
	ctx := context.Background()
	list, err := e.db.CaptureInstances(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	insts := source.InstancesOf(list, "dbo", "orders")
	max, _ := e.db.MaxLSN(ctx)
	var n int64
	for _, s := range spans(insts, lsn.Zero, max) {
		rows, err := e.db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: s.CI.Name, From: s.From, To: s.To, WithoutCommandID: !e.spec.Options.CommandID()})
		if err != nil {
			e.t.Fatal(err)
		}
		for {
			rec, err := rows.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				e.t.Fatal(err)
			}
			n += rec.NumRows()
			rec.Release()
		}
		rows.Close()
	}
	return n
}

func (e *env) factsRows() []facts.Row {
	e.t.Helper()
	rows, through := e.tableFactsRows()
	return append(rows, e.pendingFactsRows(through)...)
}

// tableFactsRows are the stream's rows in the facts table, and the newest batch whose rows
// it holds (txn(<app_id>#facts), -1 when none).
func (e *env) tableFactsRows() ([]facts.Row, int64) {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.FactsTable).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	rows, err := facts.ReadRows(context.Background(), snap, e.spec.AppID)
	if err != nil {
		e.t.Fatal(err)
	}
	through, ok := snap.TxnVersion(facts.TxnFacts(e.spec.AppID))
	if !ok {
		through = -1
	}
	return rows, through
}

// pendingFactsRows are the facts rows waiting in the checkpoint's commit files of the
// batches after through (docs/decisions/0013-facts-rows-deferred.md).
func (e *env) pendingFactsRows(through int64) []facts.Row {
	e.t.Helper()
	ctx := context.Background()
	store := e.lake.RawStore(e.spec.Checkpoint)
	var out []facts.Row
	for oi, err := range store.List(ctx, checkpoint.CommitsDir, "") {
		if err != nil {
			e.t.Fatal(err)
		}
		data, err := store.GetRange(ctx, oi.Key, 0, -1)
		if err != nil {
			e.t.Fatal(err)
		}
		var m checkpoint.Commit
		if err := json.Unmarshal(data, &m); err != nil {
			e.t.Fatalf("%s: %v", oi.Key, err)
		}
		if m.ID <= through || len(m.FactsRows) == 0 {
			continue
		}
		var rows []facts.Row
		if err := json.Unmarshal(m.FactsRows, &rows); err != nil {
			e.t.Fatalf("%s: facts rows: %v", oi.Key, err)
		}
		out = append(out, rows...)
	}
	return out
}

// assertConverged checks bronze against the source: every change exactly once, the
// rebuilt state equal to the table, one facts row per batch.
func (e *env) assertConverged() {
	e.t.Helper()
	st, lg := e.bronzeState()
	if lg.Duplicates != 0 {
		e.t.Errorf("bronze has %d duplicate changes", lg.Duplicates)
	}
	if got, want := lg.ChangeRows(), e.sourceChangeRows(); got != want {
		e.t.Errorf("bronze holds %d change rows, the source %d", got, want)
	}
	if d := rebuild.Diff(e.sourceState(), st, 10); len(d) > 0 {
		e.t.Errorf("rebuilt state differs from the table:\n%s", joinLines(d))
	}
	seen := map[int64]int{}
	for _, r := range e.factsRows() {
		if r.Event == "" {
			seen[*r.BatchID]++
		}
	}
	for b, n := range seen {
		if n != 1 {
			e.t.Errorf("batch %d has %d facts rows", b, n)
		}
	}
	for b := int64(0); b < int64(len(seen)); b++ {
		if seen[b] != 1 {
			e.t.Errorf("batch %d has no facts row (batches %v)", b, seen)
		}
	}
}

func joinLines(s []string) string {
	var b bytes.Buffer
	for _, l := range s {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
