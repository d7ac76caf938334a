package seed_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// env is one seed test: a simulated database with table t, a lake, the spec.
type env struct {
	t     *testing.T
	db    *cdcsim.DB
	spec  *config.Spec
	lake  *testlake.Lake
	table string
	keys  []string
	opts  seed.Options
}

// newEnv makes table (cdcsim spec) with CDC on it, a lake on backend and a spec for the
// table's default capture instance dbo_<name>.
func newEnv(t *testing.T, backend testlake.Backend, ts cdcsim.TableSpec, cfg cdcsim.Config) *env {
	t.Helper()
	if cfg.Seed == 0 {
		cfg.Seed = 7
	}
	db := cdcsim.New(cfg)
	if err := db.CreateTable(ts); err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	if _, err := db.EnableCapture(ts.Name, cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, backend)
	spec := &config.Spec{AppID: "t-v1", Bootstrap: true,
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_" + ts.Name}}
	lake.Use(spec)
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, spec: spec, lake: lake, table: ts.Name, keys: ts.Key}
}

// deps are the seed steps' connections of one invocation, through the lake's fault plan
// when set; the copy opens through the lake too.
func (e *env) deps() seed.Deps {
	opts := e.opts
	if opts.Now == nil {
		opts.Now = e.db.Now
	}
	return seed.Deps{Spec: e.spec, Source: e.lake.Source(e.db), Bronze: e.lake.Table(e.spec.Bronze),
		Facts: e.lake.Table(e.spec.FactsTable), Staging: e.lake.Store(e.spec.Checkpoint), Options: opts,
		OpenCopy: func(_ context.Context, url string) (*deltalog.Table, error) { return e.lake.Table(url), nil }}
}

// run seeds in-process.
func (e *env) run(req seed.Request) (seed.RunResult, error) {
	return seed.Run(context.Background(), e.deps(), req)
}

func (e *env) mustRun(req seed.Request) seed.RunResult {
	e.t.Helper()
	r, err := e.run(req)
	if err != nil {
		e.t.Fatalf("seed: %v", err)
	}
	return r
}

// exec commits one transaction a second after the last.
func (e *env) exec(fn func(tx *cdcsim.Txn) error) lsn.LSN {
	e.t.Helper()
	e.db.Advance(time.Second)
	l, err := e.db.Exec(fn)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// maxLSN is the source's max_lsn.
func (e *env) maxLSN() lsn.LSN {
	e.t.Helper()
	l, err := e.db.MaxLSN(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// stream runs the stream until it has caught up.
func (e *env) stream() {
	e.t.Helper()
	deps := stream.Deps{Source: e.db, Bronze: e.lake.RawTable(e.spec.Bronze), Facts: e.lake.RawTable(e.spec.FactsTable),
		Checkpoint: checkpoint.New(e.lake.RawStore(e.spec.Checkpoint), e.spec.AppID)}
	for range 100 {
		res, err := stream.Run(context.Background(), e.spec, deps, stream.Options{Now: e.db.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			e.t.Fatalf("stream: %v", err)
		}
		if res.CaughtUp {
			return
		}
	}
	e.t.Fatal("stream never caught up")
}

// check rebuilds the table from bronze (latest image per key) and compares it with the
// source table.
func (e *env) check() {
	e.t.Helper()
	ctx := context.Background()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	got, _, err := rebuild.FromBronze(ctx, snap, e.keys)
	if err != nil {
		e.t.Fatal(err)
	}
	want, err := rebuild.FromRows(ctx, e.readTable(), e.keys)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(want.Rows) == 0 {
		e.t.Fatal("the source table is empty: the check proves nothing")
	}
	if d := rebuild.Diff(want, got, 10); len(d) > 0 {
		e.t.Fatalf("bronze rebuilds to a different table:\n%s", strings.Join(d, "\n"))
	}
}

// readTable reads the whole source table (bronze types).
func (e *env) readTable() source.Rows {
	e.t.Helper()
	cols, err := e.db.Columns(e.table)
	if err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.db.ReadTable(context.Background(), source.TableRead{Table: source.Table{Schema: "dbo", Name: e.table}, Columns: cols})
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

func (e *env) factsRows() []facts.Row {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.FactsTable).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	if snap.Version() < 0 {
		return nil
	}
	rows, err := facts.ReadRows(context.Background(), snap, e.spec.AppID)
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

func count(rows []facts.Row, event string) int {
	n := 0
	for _, r := range rows {
		if r.Event == event {
			n++
		}
	}
	return n
}

// snapshotRows counts bronze's operation-0 rows per _start_lsn.
func (e *env) snapshotRows() map[string]int64 {
	e.t.Helper()
	out := map[string]int64{}
	e.scanBronze([]string{bronze.ColStartLSN}, func(rec arrow.RecordBatch) {
		col := rec.Column(0).(*array.String)
		for i := 0; i < col.Len(); i++ {
			out[col.Value(i)]++
		}
	}, deltalog.Eq(bronze.ColOperation, int32(0)))
	return out
}

// scanBronze reads bronze's columns (all when nil), filtered, a batch at a time.
func (e *env) scanBronze(cols []string, fn func(arrow.RecordBatch), filter deltalog.Filter) {
	e.t.Helper()
	ctx := context.Background()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if snap.Version() < 0 {
		return
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: cols, Filter: filter})
	if err != nil {
		e.t.Fatal(err)
	}
	defer it.Close()
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			e.t.Fatal(err)
		}
		fn(rec)
		rec.Release()
	}
}

// bronzeVersions counts bronze's commits that carry a seed (userMetadata with "seed").
func (e *env) seedCommits() int {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for v := int64(0); v <= snap.Version(); v++ {
		if ci, ok := snap.CommitInfo(v); ok && strings.Contains(ci.UserMetadata, `"seed"`) {
			n++
		}
	}
	return n
}

// writeParquet writes records as one Parquet file at key under the lake URL dir, as a
// user's writer would (pqarrow with props; int96 writes timestamps as Spark's INT96).
func (e *env) writeParquet(dir, key string, int96 bool, recs ...arrow.RecordBatch) {
	e.t.Helper()
	var buf bytes.Buffer
	aprops := []pqarrow.WriterOption{pqarrow.WithStoreSchema()}
	if int96 {
		aprops = append(aprops, pqarrow.WithDeprecatedInt96Timestamps(true))
	}
	w, err := pqarrow.NewFileWriter(recs[0].Schema(), &buf, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(64)),
		pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		e.t.Fatal(err)
	}
	st := e.lake.RawStore(dir)
	if err := st.Put(context.Background(), key, bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		e.t.Fatal(err)
	}
}

// userColumn is how a user's export holds one column: its name and, when not nil, the
// type it was written with.
type userColumn struct {
	name string
	typ  arrow.DataType
	// fn, when set, makes the column from the source's instead of a cast to typ.
	fn func(arrow.Array) arrow.Array
}

// export turns a record of the source's bronze types into a user's export: each column
// renamed and cast as users (Spark, DuckDB, DMS) hold them, plus an extra column the seed
// must drop.
func export(t *testing.T, rec arrow.RecordBatch, as map[string]userColumn) arrow.RecordBatch {
	t.Helper()
	var fields []arrow.Field
	var cols []arrow.Array
	for i, f := range rec.Schema().Fields() {
		c := rec.Column(i)
		name := f.Name
		if u, ok := as[f.Name]; ok {
			if u.name != "" {
				name = u.name
			}
			if u.fn != nil {
				out := u.fn(c)
				cols = append(cols, out)
				fields = append(fields, arrow.Field{Name: name, Type: out.DataType(), Nullable: true})
				continue
			}
			if u.typ != nil {
				out, err := compute.CastArray(context.Background(), c, compute.UnsafeCastOptions(u.typ))
				if err != nil {
					t.Fatalf("cast %s to %s: %v", f.Name, u.typ, err)
				}
				cols = append(cols, out)
				fields = append(fields, arrow.Field{Name: name, Type: u.typ, Nullable: true})
				continue
			}
		}
		c.Retain()
		cols = append(cols, c)
		fields = append(fields, arrow.Field{Name: name, Type: f.Type, Nullable: true})
	}
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for i := 0; i < int(rec.NumRows()); i++ {
		b.Append(fmt.Sprintf("exported row %d", i))
	}
	cols = append(cols, b.NewArray())
	b.Release()
	fields = append(fields, arrow.Field{Name: "_exported_by", Type: arrow.BinaryTypes.String, Nullable: true})
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// parquetOpts are the writer options of rows tests write themselves.
var parquetOpts = parquetio.WriterOptions{}

// idRecord is a user's record of ids alone, in a column ID (int64).
func idRecord(t *testing.T, ids []int64) arrow.RecordBatch {
	t.Helper()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(ids, nil)
	a := b.NewArray()
	defer a.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "ID", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil), []arrow.Array{a}, int64(len(ids)))
}
