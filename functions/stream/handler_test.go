package main

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
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// lambdaErrorType is the errorType aws-lambda-go reports for an error returned by a
// handler (lambda/errors.go: the type's name, pointer dereferenced). Step Functions
// matches it in ErrorEquals.
func lambdaErrorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}

// The handler returns the named error itself however the core wrapped it, and a spec that
// did not parse fails every invocation as ConfigError (the names statemachine/ matches;
// stream.Named's own test covers each name).
func TestErrorNamesSeenByStepFunctions(t *testing.T) {
	cases := map[string]error{
		"DataLossError":          &stream.DataLossError{CaptureInstance: "dbo_t"},
		"SchemaChangedError":     &stream.SchemaChangedError{Column: "c"},
		"SourceUnavailableError": &stream.SourceUnavailableError{Op: "max_lsn", Err: errors.New("dial")},
		"ConcurrentStreamError":  &checkpoint.ConcurrentStreamError{Key: "offsets/1.json"},
		"ConfigError":            &stream.CheckpointRewoundError{AppID: "a"},
	}
	spec := &config.Spec{AppID: "a"}
	for want, typed := range cases {
		h := &Handler{Spec: spec, Log: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)),
			Open: func(context.Context, *config.Spec) (stream.Deps, func(), error) {
				return stream.Deps{}, nil, fmt.Errorf("open: %w", typed)
			}}
		_, err := h.Handle(context.Background(), Event{})
		if name := lambdaErrorType(err); name != want {
			t.Errorf("%T wrapped: errorType %q, want %q", typed, name, want)
		}
	}
	h := &Handler{SpecErr: &config.ConfigError{Problems: []config.Problem{{Field: "app_id", Reason: "required"}}},
		Log: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))}
	if _, err := h.Handle(context.Background(), Event{}); lambdaErrorType(err) != "ConfigError" {
		t.Errorf("invalid spec: %T %v", err, err)
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
	h := &Handler{Spec: spec, Log: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), Metrics: metrics, Now: db.Now,
		Open: func(ctx context.Context, s *config.Spec) (stream.Deps, func(), error) {
			deps, err := connect.StreamDeps(ctx, s, db)
			return deps, func() {}, err
		}}
	return h, db, metrics
}

// Golden input/output pairs: each testdata/<name>.input.json is sent in turn to one
// handler (the steps of a little history); the output must equal <name>.output.json.
func TestGolden(t *testing.T) {
	h, db, metrics := fixture(t)
	steps := []string{"one_batch", "rest", "idle"}
	for _, name := range steps {
		in, err := os.ReadFile(filepath.Join("testdata", name+".input.json"))
		if err != nil {
			t.Fatal(err)
		}
		var ev Event
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := h.Handle(context.Background(), ev)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "rest" {
			db.Advance(time.Minute)
			db.Idle()
		}
		got, _ := json.MarshalIndent(out, "", "  ")
		got = append(got, '\n')
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

func TestInvalidEventOverride(t *testing.T) {
	h, _, _ := fixture(t)
	neg := -1.0
	_, err := h.Handle(context.Background(), Event{MaxSeconds: &neg})
	if lambdaErrorType(err) != "ConfigError" {
		t.Errorf("err = %T %v", err, err)
	}
}

// A purge of unread changes reaches Step Functions as errorType DataLossError.
func TestHandlerDataLossByName(t *testing.T) {
	h, db, _ := fixture(t)
	if _, err := h.Handle(context.Background(), Event{MaxBatches: 1}); err != nil {
		t.Fatal(err)
	}
	max, _ := db.MaxLSN(context.Background())
	if err := db.Cleanup("dbo_orders", max); err != nil {
		t.Fatal(err)
	}
	_, err := h.Handle(context.Background(), Event{})
	if lambdaErrorType(err) != "DataLossError" || !strings.Contains(err.Error(), "dbo_orders: change data from") {
		t.Fatalf("err = %T %v", err, err)
	}
}
