package stream

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/internal/emulake"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// Backends the end-to-end tests run on: Delta on local disk with the local log store, and
// Delta on S3 (gofakes3, in process) with the DynamoDB log store (dynalite, started by
// scripts/test.sh; without it the aws subtests skip, and fail when CI is set).
const (
	backendLocal = "local"
	backendAWS   = "aws"
)

var backends = []string{backendLocal, backendAWS}

// env is one table streamed from a cdcsim database into Delta tables.
type env struct {
	t       *testing.T
	db      *cdcsim.DB
	dir     string
	spec    *config.Spec
	backend string
	aws     *emulake.Lake
	// wrap, when set, wraps every store and the source (fault injection).
	wrapStore func(storage.Store) storage.Store
	wrapLogs  func(logstore.LogStore) logstore.LogStore
	wrapSrc   func(source.Source) source.Source
	wrapDDB   func(dynamo.Client) dynamo.Client
	logs      bytes.Buffer
}

func ordersColumns() []source.Column {
	return []source.Column{
		{Name: "id", DataType: "int"},
		{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Nullable: true},
		{Name: "note", DataType: "nvarchar", MaxLength: 50, Nullable: true},
	}
}

func newEnv(t *testing.T, cfg cdcsim.Config) *env { return newEnvOn(t, backendLocal, cfg) }

func newEnvOn(t *testing.T, backend string, cfg cdcsim.Config) *env {
	t.Helper()
	db := cdcsim.New(cfg)
	if err := db.CreateTable(cdcsim.TableSpec{Name: "orders", Columns: ordersColumns(), Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("orders", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := &config.Spec{
		AppID:      "orders-test",
		Source:     config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_orders"},
		Bronze:     filepath.Join(dir, "bronze"),
		Checkpoint: filepath.Join(dir, "checkpoint"),
		FactsTable: filepath.Join(dir, "facts"),
	}
	var ab *emulake.Lake
	if backend == backendAWS {
		ab = emulake.New(t)
		ab.Use(spec)
	}
	spec.Defaults()
	spec.Options.NumPartitions = 2
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, dir: dir, spec: spec, backend: backend, aws: ab}
}

func (e *env) store(dir string) storage.Store {
	s := e.rawStore(dir)
	if e.wrapStore != nil {
		return e.wrapStore(s)
	}
	return s
}

// rawStore is the store at url without any wrapper (for checks).
func (e *env) rawStore(url string) storage.Store {
	if e.aws != nil {
		return e.aws.Store(url)
	}
	s, err := localstore.New(url)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// rawLogs is the log store of the table at url over st.
func (e *env) rawLogs(url string, st storage.Store) logstore.LogStore {
	if e.aws != nil {
		var c dynamo.Client = e.aws.DDB
		if e.wrapDDB != nil {
			c = e.wrapDDB(c)
		}
		return e.aws.LogStore(e.t, c, st)
	}
	ls, err := localfs.New(url)
	if err != nil {
		e.t.Fatal(err)
	}
	return ls
}

func (e *env) table(url string) *deltalog.Table {
	st := e.store(url)
	l := e.rawLogs(url, st)
	if e.wrapLogs != nil {
		l = e.wrapLogs(l)
	}
	return deltalog.Open(st, l, deltalog.Options{RetryBaseDelay: 1})
}

func (e *env) deps() Deps {
	var src source.Source = e.db
	if e.wrapSrc != nil {
		src = e.wrapSrc(src)
	}
	return Deps{
		Source:     src,
		Bronze:     e.table(e.spec.Bronze),
		Facts:      e.table(e.spec.FactsTable),
		Checkpoint: checkpoint.New(e.store(e.spec.Checkpoint), e.spec.AppID),
	}
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
		total.Offset = res.Offset
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
	store := e.rawStore(e.spec.Bronze)
	snap, err := deltalog.Open(store, e.rawLogs(e.spec.Bronze, store), deltalog.Options{}).Snapshot(context.Background())
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
		rows, err := e.db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: s.CI.Name, From: s.From, To: s.To})
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
	st := e.rawStore(e.spec.FactsTable)
	snap, err := deltalog.Open(st, e.rawLogs(e.spec.FactsTable, st), deltalog.Options{}).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	rows, err := facts.ReadRows(context.Background(), snap, e.spec.AppID)
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
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
