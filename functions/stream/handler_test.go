package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	corestream "github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
	"github.com/mssqlcdc/mssqlcdc/internal/runtimeapi/runtimeapitest"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// The handler returns the declared error itself however the core wrapped it, and a spec
// that did not parse fails every invocation as ConfigError: the errorType aws-lambda-go
// reports is the name statemachine/ matches (functions/lambdaerr's tests cover each name).
func TestErrorNamesSeenByStepFunctions(t *testing.T) {
	cases := map[string]error{
		"DataLossError":          &corestream.DataLossError{CaptureInstance: "dbo_t"},
		"SchemaChangedError":     &corestream.SchemaChangedError{Column: "c"},
		"SourceUnavailableError": &corestream.SourceUnavailableError{Op: "max_lsn", Err: errors.New("dial")},
		"ConcurrentStreamError":  &checkpoint.ConcurrentStreamError{Key: "offsets/1.json"},
		"ConfigError":            &corestream.CheckpointRewoundError{AppID: "a"},
		"UnexpectedError":        errors.New("disk on fire"),
	}
	spec := &config.Spec{AppID: "a"}
	for want, typed := range cases {
		h := New(spec, func(context.Context, *config.Spec) (corestream.Deps, func(), error) {
			return corestream.Deps{}, nil, fmt.Errorf("open: %w", typed)
		}, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), nil)
		if r := runtimeapitest.Start(t, "stream", h.Handle).Invoke(`{}`); r.Error == nil || r.Error.Type != want || !strings.Contains(r.Error.Message, typed.Error()) {
			t.Errorf("%T wrapped: %s, want errorType %q", typed, r.ErrorBody, want)
		}
	}
	h := New(nil, nil, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), nil)
	h.SpecErr = &config.ConfigError{Problems: []config.Problem{{Field: "app_id", Reason: "required"}}}
	if r := runtimeapitest.Start(t, "stream", h.Handle).Invoke(`{}`); r.Error == nil || r.Error.Type != "ConfigError" {
		t.Errorf("invalid spec: %s", r.ErrorBody)
	}
}

// fixture is a cdcsim database with an orders table and three commits, and a spec whose
// tables live in a temp dir.
func fixture(t *testing.T) (*Handler, *cdcsim.DB, *bytes.Buffer) {
	db := cdcsim.New(cdcsim.Config{Seed: 42})
	if err := db.CreateTable(cdcsim.TableSpec{Name: "orders", Key: []string{"id"}, Columns: []source.Column{
		{Name: "id", DataType: "int"}, {Name: "note", DataType: "nvarchar", MaxLength: 20, Nullable: true},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("orders", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		db.Advance(time.Second)
		if _, err := db.Exec(func(tx *cdcsim.Txn) error {
			_, err := tx.Insert("orders", cdcsim.Row{"id": i, "note": "n"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	one := 1
	spec := &config.Spec{AppID: "orders-golden", Source: config.Source{DSN: "sqlserver://sim@localhost", CaptureInstance: "dbo_orders"},
		Options: config.Options{MaxCommitsPerBatch: &one}, Bronze: filepath.Join(dir, "bronze"),
		Checkpoint: filepath.Join(dir, "cp"), FactsTable: filepath.Join(dir, "facts")}
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	metrics := &bytes.Buffer{}
	h := New(spec, func(ctx context.Context, s *config.Spec) (corestream.Deps, func(), error) {
		deps, err := connect.StreamDeps(ctx, s, db)
		return deps, func() {}, err
	}, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), metrics)
	h.Now = db.Now
	return h, db, metrics
}

// Golden input/output pairs: each testdata/<name>.input.json is sent in turn to one
// handler, as Lambda sends it (the steps of a little history); the output must equal
// <name>.output.json.
func TestGolden(t *testing.T) {
	h, db, metrics := fixture(t)
	invoke := runtimeapitest.Start(t, "stream", h.Handle).Invoke
	steps := []string{"one_batch", "rest", "idle"}
	for _, name := range steps {
		in, err := os.ReadFile(filepath.Join("testdata", name+".input.json"))
		if err != nil {
			t.Fatal(err)
		}
		// The inputs use only the event's fields (a misspelt one would be ignored).
		var plain struct {
			MaxSeconds *float64 `json:"max_seconds"`
			MaxBatches int      `json:"max_batches"`
		}
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&plain); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r := invoke(string(in))
		if r.Error != nil {
			t.Fatalf("%s: %s", name, r.ErrorBody)
		}
		if name == "rest" {
			db.Advance(time.Minute)
			db.Idle()
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, r.Output, "", "  "); err != nil {
			t.Fatal(err)
		}
		got := append(indented.Bytes(), '\n')
		golden := filepath.Join("testdata", name+".output.json")
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s output\n got %s\nwant %s", name, got, want)
		}
	}
	// One EMF line per batch, each a JSON document naming its metrics.
	lines := strings.Split(strings.TrimSpace(metrics.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d EMF lines, want 4:\n%s", len(lines), metrics)
	}
	var doc struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Namespace string
				Metrics   []struct{ Name string }
			}
		} `json:"_aws"`
		Rows  int64
		AppID string `json:"app_id"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil || doc.AppID != "orders-golden" || doc.Rows != 1 ||
		doc.AWS.CloudWatchMetrics[0].Namespace != "mssqlcdc" || len(doc.AWS.CloudWatchMetrics[0].Metrics) < 4 {
		t.Errorf("EMF line %s: %v", lines[0], err)
	}
}

// An event that does not decode, or overrides max_seconds or max_batches with an invalid
// value, is an EventError, not json's own error type nor a run with the spec's settings;
// nor a ConfigError, whose message says "invalid table spec" when the spec is fine. The
// message says it is the stream's event.
func TestInvalidEventIsEventError(t *testing.T) {
	h, _, _ := fixture(t)
	invoke := runtimeapitest.Start(t, "stream", h.Handle).Invoke
	for _, ev := range []string{`{"max_seconds": -1}`, `{"max_seconds": 1e10}`, `{"max_batches": "x"}`, `{"max_batches": -1}`, `[1]`, `"go"`} {
		if r := invoke(ev); r.Error == nil || r.Error.Type != "EventError" || !strings.HasPrefix(r.Error.Message, "stream event: ") ||
			strings.Contains(r.Error.Message, "table spec") {
			t.Errorf("%s: %s %s, want an EventError on the stream event", ev, r.Output, r.ErrorBody)
		}
	}
	// The message names the field in the event's terms, not Go's (lambdaerr.EventDecodeReason).
	if r := invoke(`{"max_seconds": "x"}`); r.Error == nil || !strings.Contains(r.Error.Message, "max_seconds: got a string, want a number") || strings.Contains(r.Error.Message, "Go struct") {
		t.Errorf("wrong type: %s", r.ErrorBody)
	}
}

// A purge of unread changes reaches Step Functions as errorType DataLossError.
func TestHandlerDataLossByName(t *testing.T) {
	h, db, _ := fixture(t)
	invoke := runtimeapitest.Start(t, "stream", h.Handle).Invoke
	if r := invoke(`{"max_batches": 1}`); r.Error != nil {
		t.Fatal(string(r.ErrorBody))
	}
	max, _ := db.MaxLSN(context.Background())
	if err := db.Cleanup("dbo_orders", max); err != nil {
		t.Fatal(err)
	}
	r := invoke(`{}`)
	if r.Error == nil || r.Error.Type != "DataLossError" || !strings.Contains(r.Error.Message, "dbo_orders: change data from") {
		t.Fatalf("after a purge: %s", r.ErrorBody)
	}
}

// A captured column bronze cannot hold fails the stream as ColumnsError (it was joinError
// or a bare UnsupportedTypeError).
func TestUnsupportedColumnIsNamed(t *testing.T) {
	db := cdcsim.New(cdcsim.Config{Seed: 7})
	if err := db.CreateTable(cdcsim.TableSpec{Name: "shapes", Key: []string{"id"}, Columns: []source.Column{
		{Name: "id", DataType: "int"}, {Name: "v", DataType: "vector", Nullable: true},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("shapes", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	if _, err := db.Exec(func(tx *cdcsim.Txn) error { _, err := tx.Insert("shapes", cdcsim.Row{"id": 1}); return err }); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := &config.Spec{AppID: "shapes-v1", Source: config.Source{DSN: "sqlserver://sim@localhost", CaptureInstance: "dbo_shapes"},
		Bronze: filepath.Join(dir, "bronze"), Checkpoint: filepath.Join(dir, "cp"), FactsTable: filepath.Join(dir, "facts")}
	spec.Defaults()
	spec.Options.StartingLsn = config.StartEarliest
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	h := New(spec, func(ctx context.Context, s *config.Spec) (corestream.Deps, func(), error) {
		deps, err := connect.StreamDeps(ctx, s, db)
		return deps, func() {}, err
	}, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), nil)
	r := runtimeapitest.Start(t, "stream", h.Handle).Invoke(`{}`)
	if r.Error == nil || r.Error.Type != "ColumnsError" || !strings.Contains(r.Error.Message, `column "v": SQL Server type vector has no bronze type`) {
		t.Fatalf("a vector column: %s %s, want ColumnsError naming it", r.Output, r.ErrorBody)
	}
}

// Only the metrics MSSQLCDC_METRICS declares are published (each is billed per table); the
// others stay fields of the same line for Logs Insights. Unset declares every one.
func TestEMFPublishesOnlyDeclaredMetrics(t *testing.T) {
	lag, headroom := 12.5, 70.0
	report := corestream.BatchReport{Batch: 3, Rows: 40, Bytes: 4096, Duration: 250 * time.Millisecond,
		IngestionLagSeconds: &lag, RetentionHeadroomHours: &headroom}
	emit := func(declared map[string]bool) (names []string, fields map[string]any) {
		var out bytes.Buffer
		h := &Handler{Metrics: &out, Declared: declared, Now: func() time.Time { return time.Unix(1700000000, 0) }}
		h.emitMetrics("orders", report)
		var doc map[string]any
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("EMF line %q: %v", out.String(), err)
		}
		aws := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		for _, m := range aws["Metrics"].([]any) {
			names = append(names, m.(map[string]any)["Name"].(string))
		}
		return names, doc
	}
	names, doc := emit(DeclaredMetrics("IngestionLagSeconds, RetentionHeadroomHours"))
	if got := strings.Join(names, ","); got != "IngestionLagSeconds,RetentionHeadroomHours" {
		t.Errorf("declared metrics %q, want IngestionLagSeconds,RetentionHeadroomHours", got)
	}
	if doc["Rows"] != 40.0 || doc["Bytes"] != 4096.0 || doc["DurationMs"] != 250.0 || doc["IngestionLagSeconds"] != 12.5 {
		t.Errorf("undeclared values must stay fields of the line: %v", doc)
	}
	if names, _ := emit(DeclaredMetrics("")); len(names) != 0 {
		t.Errorf("MSSQLCDC_METRICS empty declared %v", names)
	}
	if names, _ := emit(nil); strings.Join(names, ",") != "Rows,Bytes,DurationMs,IngestionLagSeconds,RetentionHeadroomHours" {
		t.Errorf("unset declares all present values, got %v", names)
	}
}

// A database restored to before the checkpoint reaches Step Functions as errorType
// LSNRewoundError (not retried: statemachine/ catches it and fails with that name).
func TestHandlerRewoundByName(t *testing.T) {
	h, db, _ := fixture(t)
	invoke := runtimeapitest.Start(t, "stream", h.Handle).Invoke
	backup, err := db.Backup()
	if err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	if _, err := db.Exec(func(tx *cdcsim.Txn) error { _, err := tx.Insert("orders", cdcsim.Row{"id": 4}); return err }); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		r := invoke(`{}`)
		if r.Error != nil {
			t.Fatal(string(r.ErrorBody))
		}
		if strings.Contains(string(r.Output), `"caught_up":true`) {
			break
		}
	}
	if err := db.Restore(backup); err != nil {
		t.Fatal(err)
	}
	r := invoke(`{}`)
	if r.Error == nil || r.Error.Type != "LSNRewoundError" || !strings.Contains(r.Error.Message, "re-snapshot") {
		t.Fatalf("after a restore to before the checkpoint: %s", r.ErrorBody)
	}
}

// A change table without __$command_id reaches Step Functions as errorType
// CommandIDMissingError, naming the option to set.
func TestHandlerCommandIDMissingByName(t *testing.T) {
	h, db, _ := fixture(t)
	if err := db.DisableCapture("dbo_orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("orders", cdcsim.CaptureOptions{WithoutCommandID: true}); err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	if _, err := db.Exec(func(tx *cdcsim.Txn) error { _, err := tx.Insert("orders", cdcsim.Row{"id": 9}); return err }); err != nil {
		t.Fatal(err)
	}
	h.Spec.Options.StartingLsn = config.StartEarliest
	r := runtimeapitest.Start(t, "stream", h.Handle).Invoke(`{}`)
	if r.Error == nil || r.Error.Type != "CommandIDMissingError" || !strings.Contains(r.Error.Message, "includeCommandId") {
		t.Fatalf("change table without __$command_id: %s", r.ErrorBody)
	}
}
