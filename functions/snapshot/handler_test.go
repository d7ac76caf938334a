package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json")

func newHandler(t *testing.T) (*Handler, *cdcsim.DB) {
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
		for i := 1; i <= 10; i++ {
			if _, err := tx.Insert("orders", cdcsim.Row{"id": int64(i), "name": fmt.Sprint("n", i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := &config.Spec{AppID: "orders-v1", Bootstrap: true,
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_orders"},
		Bronze: filepath.Join(dir, "bronze"), Checkpoint: filepath.Join(dir, "cp"), FactsTable: filepath.Join(dir, "facts")}
	spec.Defaults()
	spec.Options.NumPartitions = 2
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context, spec *config.Spec) (snapshot.Deps, func(), error) {
		table := func(d string) *deltalog.Table {
			st, _ := localstore.New(d)
			ls, _ := localfs.New(d)
			return deltalog.Open(st, ls, deltalog.Options{})
		}
		cp, err := localstore.New(spec.Checkpoint)
		if err != nil {
			return snapshot.Deps{}, nil, err
		}
		return snapshot.Deps{Spec: spec, Source: db, Bronze: table(spec.Bronze), Facts: table(spec.FactsTable), Staging: cp,
			Options: snapshot.Options{Now: db.Now}}, func() {}, nil
	}
	return &Handler{Spec: spec, Open: open, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, db
}

// byteCount matches a "bytes" field: Parquet file sizes follow the encoder (deltalog's
// parquetio), not the handler's contract, so the golden files hold "<bytes>" for any
// positive size.
var byteCount = regexp.MustCompile(`"bytes": [1-9][0-9]*`)

// golden compares v's JSON with testdata/name (rewritten with -update).
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = byteCount.ReplaceAll(got, []byte(`"bytes": "<bytes>"`))
	got = append(got, '\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}

// call round-trips the event through JSON as the Lambda runtime does.
func call(t *testing.T, h *Handler, name string, ev snapshot.Event) any {
	t.Helper()
	golden(t, name+".in.json", ev)
	b, _ := json.Marshal(ev)
	var decoded snapshot.Event
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	out, err := h.Handle(context.Background(), decoded)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	golden(t, name+".out.json", out)
	return out
}

func TestStepsGolden(t *testing.T) {
	h, _ := newHandler(t)
	open := call(t, h, "1-open", snapshot.Event{Step: "open"}).(snapshot.OpenResult)
	plan := call(t, h, "2-plan", snapshot.Event{Step: "plan", Snapshot: &open.Snapshot}).(snapshot.PlanResult)
	for i, r := range plan.Ranges {
		call(t, h, fmt.Sprintf("3-read-%d", i), snapshot.Event{Step: "read", Snapshot: &open.Snapshot, Range: &r})
	}
	call(t, h, "4-commit", snapshot.Event{Step: "commit", Snapshot: &open.Snapshot})
	call(t, h, "5-close", snapshot.Event{Step: "close", Open: &open})
	// A rerun finds the snapshot and reads nothing.
	call(t, h, "6-open-rerun", snapshot.Event{Step: "open"})
}

func TestErrorsAreNamed(t *testing.T) {
	h, db := newHandler(t)
	cases := []struct {
		ev   snapshot.Event
		want string
	}{
		{snapshot.Event{Step: "explode"}, "EventError"},
		{snapshot.Event{Step: "plan"}, "EventError"},
		{snapshot.Event{Step: "commit", Snapshot: &lsn.Offset{LSN: lsn.MustParse("0x00000001000000010001")}}, "PlanNotFoundError"},
	}
	for _, c := range cases {
		_, err := h.Handle(context.Background(), c.ev)
		if got := errorType(err); got != c.want {
			t.Errorf("%+v: errorType %s (%v), want %s", c.ev, got, err, c.want)
		}
	}
	db.Inject(cdcsim.Fault{Method: "MaxLSN", Call: 0, Kind: cdcsim.FaultTransient})
	_, err := h.Handle(context.Background(), snapshot.Event{Step: "open"})
	if got := errorType(err); got != "TransientError" {
		t.Errorf("transient fault: errorType %s (%v)", got, err)
	}
	bad := &Handler{SpecErr: &config.ConfigError{Problems: []config.Problem{{Field: "(document)", Reason: "empty"}}}, Log: h.Log}
	if _, err := bad.Handle(context.Background(), snapshot.Event{Step: "open"}); errorType(err) != "ConfigError" {
		t.Errorf("invalid spec: errorType %s (%v), want ConfigError", errorType(err), err)
	}
	h.Spec.Source.CaptureInstance = "nope"
	_, err = h.Handle(context.Background(), snapshot.Event{Step: "open"})
	if got := errorType(err); got != "CaptureInstanceNotFoundError" {
		t.Errorf("errorType %s (%v)", got, err)
	}
}

// errorType is the name aws-lambda-go reports: the error value's type, pointer removed.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
