package seed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	coreseed "github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
	"github.com/mssqlcdc/mssqlcdc/internal/runtimeapi"
	"github.com/mssqlcdc/mssqlcdc/internal/runtimeapi/runtimeapitest"
)

// fixture is dbo.orders (id int, name nvarchar(20)) of 10 rows on cdcsim, with CDC
// enabled, and a copy of it as one Parquet file written the way Spark writes it (upper-case
// names, long ids, an extra column), under dir/copy.
type fixture struct {
	db   *cdcsim.DB
	dir  string
	copy string
	logs *bytes.Buffer
	h    *Handler
}

func newFixture(t *testing.T, names []string) *fixture {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 1, Start: time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)})
	cols := []source.Column{{Name: "id", DataType: "int"}, {Name: "name", DataType: "nvarchar", MaxLength: 20, Nullable: true}}
	if err := db.CreateTable(cdcsim.TableSpec{Name: "orders", Columns: cols, Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("orders", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	if _, err := db.Exec(func(tx *cdcsim.Txn) error {
		for i, n := range names {
			if _, err := tx.Insert("orders", cdcsim.Row{"id": int64(i + 1), "name": n}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	f := &fixture{db: db, dir: t.TempDir(), logs: &bytes.Buffer{}}
	f.copy = filepath.Join(f.dir, "copy")
	writeCopy(t, filepath.Join(f.copy, "part-00000.parquet"), names)
	spec := &config.Spec{AppID: "orders-v1", Bootstrap: true,
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_orders"},
		Bronze: filepath.Join(f.dir, "bronze"), Checkpoint: filepath.Join(f.dir, "cp"), FactsTable: filepath.Join(f.dir, "facts")}
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context, s *config.Spec, step string) (coreseed.Deps, func(), error) {
		var src source.Source
		if step != coreseed.StepConvert {
			src = db
		}
		d, err := connect.SeedDeps(ctx, s, src)
		d.Options.Now = db.Now
		return d, func() {}, err
	}
	f.h = New(spec, open, slog.New(slog.NewJSONHandler(f.logs, nil)))
	return f
}

// writeCopy writes ids 1..len(names) with names as a Spark export holds them.
func writeCopy(t *testing.T, path string, names []string) {
	t.Helper()
	ids := array.NewInt64Builder(memory.DefaultAllocator)
	nm := array.NewStringBuilder(memory.DefaultAllocator)
	extra := array.NewStringBuilder(memory.DefaultAllocator)
	for i, n := range names {
		ids.Append(int64(i + 1))
		nm.Append(n)
		extra.Append("exported")
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "ID", Type: arrow.PrimitiveTypes.Int64}, {Name: "Name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "_etl_batch", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{ids.NewArray(), nm.NewArray(), extra.NewArray()}, int64(len(names)))
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// invoke runs the handler through aws-lambda-go's own invoke path (a local Runtime API, as
// in Lambda) and returns what it posted.
func (f *fixture) invoker(t *testing.T) func(payload any) runtimeapi.Result {
	t.Helper()
	fn := runtimeapitest.Start(t, "seed", f.h.Handle)
	return func(payload any) runtimeapi.Result {
		t.Helper()
		b, _ := json.Marshal(payload)
		return fn.Invoke(string(b))
	}
}

func decode[T any](t *testing.T, r runtimeapi.Result) T {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("handler failed: %s: %s", r.Error.Type, r.Error.Message)
	}
	var v T
	if err := json.Unmarshal(r.Output, &v); err != nil {
		t.Fatalf("%s: %v", r.Output, err)
	}
	return v
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("n", i+1)
	}
	return out
}

// The four steps as the seed machine calls them, through aws-lambda-go: plan, convert of
// each group, commit, close; then the machine again finds the seed and converts nothing.
func TestStepsThroughTheLambdaRuntime(t *testing.T) {
	f := newFixture(t, names(10))
	invoke := f.invoker(t)
	max, err := f.db.MaxLSN(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := map[string]any{"copy": f.copy, "as_of": max.String(), "start_stream": true}
	plan := decode[map[string]any](t, invoke(map[string]any{"step": "plan", "request": req}))
	if plan["status"] != "planned" || plan["plan"] == "" || len(plan["groups"].([]any)) != 1 || plan["files"] != 1.0 {
		t.Fatalf("plan: %v", plan)
	}
	for _, g := range plan["groups"].([]any) {
		conv := decode[map[string]any](t, invoke(map[string]any{"step": "convert", "seed": plan["seed"], "plan": plan["plan"], "group": g}))
		if conv["rows"] != 10.0 || conv["written"] != 1.0 {
			t.Fatalf("convert: %v", conv)
		}
	}
	commit := decode[map[string]any](t, invoke(map[string]any{"step": "commit", "seed": plan["seed"], "plan": plan["plan"]}))
	if commit["rows"] != 10.0 || commit["skipped"] != false || commit["version"] != 0.0 {
		t.Fatalf("commit: %v", commit)
	}
	off := decode[map[string]any](t, invoke(map[string]any{"step": "close", "seed": plan["seed"]}))
	if off["lsn"] != max.String() || off["commit_ts"] == "" {
		t.Fatalf("close: %v", off)
	}
	again := decode[map[string]any](t, invoke(map[string]any{"step": "plan", "request": req}))
	if again["status"] != "found" || again["plan"] != "" || len(again["groups"].([]any)) != 0 {
		t.Fatalf("rerun plan: %v", again)
	}
	commit2 := decode[map[string]any](t, invoke(map[string]any{"step": "commit", "seed": again["seed"], "plan": again["plan"]}))
	if commit2["skipped"] != true || commit2["rows"] != 10.0 || commit2["version"] != -1.0 {
		t.Fatalf("rerun commit: %v", commit2)
	}
}

// Each refusal reaches Step Functions under its declared name.
func TestErrorsAreNamed(t *testing.T) {
	f := newFixture(t, names(3))
	invoke := f.invoker(t)
	max, _ := f.db.MaxLSN(context.Background())
	for _, c := range []struct {
		name  string
		event any
		want  string
		// prefix begins the message when set: a ConfigError on a field of the request
		// says so, not "invalid table spec" of a spec that is fine.
		prefix string
	}{
		{"unknown step", map[string]any{"step": "open"}, "EventError", ""},
		{"not an object", []int{1}, "EventError", ""},
		{"wrong field type", map[string]any{"step": "plan", "request": "x"}, "EventError", ""},
		{"convert without a plan", map[string]any{"step": "convert", "seed": map[string]any{"lsn": max.String(), "commit_ts": ""}, "plan": "0011223344556677", "group": map[string]any{"index": 0}}, "PlanNotFoundError", ""},
		{"bad as_of", map[string]any{"step": "plan", "request": map[string]any{"copy": f.copy, "as_of": "yesterday"}}, "ConfigError", "invalid seed request: as_of: "},
		{"as_of before any commit", map[string]any{"step": "plan", "request": map[string]any{"copy": f.copy, "as_of": "2020-01-01T00:00:00Z"}}, "DataLossError", ""},
		{"no copy", map[string]any{"step": "plan", "request": map[string]any{"copy": filepath.Join(f.dir, "nothing"), "as_of": max.String()}}, "ConfigError", "invalid seed request: copy: "},
		{"bad copy_format", map[string]any{"step": "plan", "request": map[string]any{"copy": f.copy, "copy_format": "csv", "as_of": max.String()}}, "ConfigError", "invalid seed request: copy_format: "},
	} {
		r := invoke(c.event)
		if r.Error == nil || r.Error.Type != c.want {
			t.Errorf("%s: %+v, want %s", c.name, r.Error, c.want)
			continue
		}
		if !strings.HasPrefix(r.Error.Message, c.prefix) {
			t.Errorf("%s: message %q, want it to begin %q", c.name, r.Error.Message, c.prefix)
		}
	}
}

// A value the column cannot take is a CastError naming the file, column and value in the
// execution's error; the log line does not carry the value (docs/seed.md § Errors).
func TestCastErrorKeepsTheValueOutOfTheLog(t *testing.T) {
	secret := "a name far longer than twenty characters"
	f := newFixture(t, []string{"short", "ok"})
	writeCopy(t, filepath.Join(f.copy, "part-00000.parquet"), []string{"short", secret})
	invoke := f.invoker(t)
	max, _ := f.db.MaxLSN(context.Background())
	plan := decode[map[string]any](t, invoke(map[string]any{"step": "plan", "request": map[string]any{"copy": f.copy, "as_of": max.String()}}))
	r := invoke(map[string]any{"step": "convert", "seed": plan["seed"], "plan": plan["plan"], "group": map[string]any{"index": 0}})
	if r.Error == nil || r.Error.Type != "CastError" || !strings.Contains(r.Error.Message, secret) || !strings.Contains(r.Error.Message, "part-00000.parquet") {
		t.Fatalf("convert: %+v", r.Error)
	}
	if strings.Contains(f.logs.String(), secret) || !strings.Contains(f.logs.String(), "CastError") {
		t.Fatalf("the log carries the value, or not the error's name:\n%s", f.logs)
	}
}
