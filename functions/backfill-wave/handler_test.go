package backfillwave

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	coresnapshot "github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/internal/runtimeapi"
	"github.com/mssqlcdc/mssqlcdc/internal/runtimeapi/runtimeapitest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json")

// newHandler is the handler over a cdcsim orders table of 10 rows loaded before CDC, with
// snapshot "chunked" (chunk_rows 4: three chunks), two connections.
func newHandler(t *testing.T) (*Handler, func() coresnapshot.Deps, *cdcsim.DB) {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 1, Start: time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)})
	if err := db.CreateTable(cdcsim.TableSpec{Name: "orders", Columns: []source.Column{{Name: "id", DataType: "int"},
		{Name: "name", DataType: "nvarchar", MaxLength: 20, Nullable: true}}, Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
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
	db.Advance(time.Second)
	if _, err := db.EnableCapture("orders", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	dir := t.TempDir()
	four := int64(4)
	spec := &config.Spec{AppID: "orders-v1", Bootstrap: true, Snapshot: config.SnapshotChunked, ChunkRows: &four,
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_orders"},
		Bronze: filepath.Join(dir, "bronze"), Checkpoint: filepath.Join(dir, "cp"), FactsTable: filepath.Join(dir, "facts")}
	spec.Defaults()
	spec.Options.NumPartitions = 2
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	deps := func() coresnapshot.Deps {
		table := func(d string) *deltalog.Table {
			st, _ := localstore.New(d)
			ls, _ := localfs.New(d)
			return deltalog.Open(st, ls, deltalog.Options{})
		}
		cp, err := localstore.New(spec.Checkpoint)
		if err != nil {
			t.Fatal(err)
		}
		return coresnapshot.Deps{Spec: spec, Source: db, Bronze: table(spec.Bronze), Facts: table(spec.FactsTable), Plans: table(spec.PlansTable()),
			Staging: cp, Options: coresnapshot.Options{Now: db.Now}}
	}
	open := func(ctx context.Context, _ *config.Spec) (coresnapshot.Deps, func(), error) {
		return deps(), func() {}, nil
	}
	return New(spec, open, slog.New(slog.NewTextHandler(io.Discard, nil))), deps, db
}

// golden compares indented JSON with testdata/name (rewritten with -update).
func golden(t *testing.T, name string, indented []byte) {
	t.Helper()
	got := append(indented, '\n')
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

// call sends testdata/<name>.in.json as Lambda would, compares the output with
// <name>.out.json and returns it decoded.
func call(t *testing.T, invoke func(string) runtimeapi.Result, name string) coresnapshot.BackfillStatus {
	t.Helper()
	in, err := os.ReadFile(filepath.Join("testdata", name+".in.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := invoke(string(in))
	if r.Error != nil {
		t.Fatalf("%s: %s", name, r.ErrorBody)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, r.Output, "", "  "); err != nil {
		t.Fatalf("%s: output %q: %v", name, r.Output, err)
	}
	golden(t, name+".out.json", indented.Bytes())
	var st coresnapshot.BackfillStatus
	if err := json.Unmarshal(r.Output, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// The calls the backfill machine makes, from before the stream opened the snapshot to
// done, pinned by golden files: no_snapshot; waiting_metrics (min_headroom_hours with no
// batch facts row yet); one wave (running); the rest (done); done again, reading nothing.
func TestCallsGolden(t *testing.T) {
	h, deps, db := newHandler(t)
	invoke := runtimeapitest.Start(t, "backfill-wave", h.Handle).Invoke
	want := func(st coresnapshot.BackfillStatus, state string, done, total int) {
		t.Helper()
		if st.State != state || st.ChunksDone != done || st.ChunksTotal != total {
			t.Fatalf("%+v, want %s %d/%d", st, state, done, total)
		}
	}
	want(call(t, invoke, "1-no-snapshot"), coresnapshot.StateNoSnapshot, 0, 0)
	// The stream's first run opens the snapshot at S.
	if _, err := coresnapshot.OpenChunked(context.Background(), deps()); err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	want(call(t, invoke, "2-waiting-metrics"), coresnapshot.StateWaitingMetrics, 0, 0)
	want(call(t, invoke, "3-one-wave"), coresnapshot.StateRunning, 2, 3)
	db.Advance(time.Second)
	st := call(t, invoke, "4-rest")
	want(st, coresnapshot.StateDone, 3, 3)
	if st.Rows != 2 || st.Waves != 1 {
		t.Errorf("the last wave: %d rows in %d waves, want 2 in 1", st.Rows, st.Waves)
	}
	reads := db.Calls("ReadTable")
	want(call(t, invoke, "5-done-again"), coresnapshot.StateDone, 3, 3)
	if db.Calls("ReadTable") != reads {
		t.Error("a call after done read the table")
	}
}

// Every failure reaches Step Functions under its declared name: a malformed event (a wrong
// type, an unknown field: refused before anything is read), a parameter out of range, a
// spec without snapshot chunked, an invalid spec, a transient source fault and an error no
// type describes.
func TestErrorsAreNamed(t *testing.T) {
	h, deps, db := newHandler(t)
	invoke := runtimeapitest.Start(t, "backfill-wave", h.Handle).Invoke
	if _, err := coresnapshot.OpenChunked(context.Background(), deps()); err != nil {
		t.Fatal(err)
	}
	// The event's shape: an EventError that says it is the backfill-wave's event, not the
	// snapshot's format ("snapshot event (step \"backfill-wave\")").
	for _, event := range []string{`{"chunk_rows": "many"}`, `{"chunk_row": 5}`, `[1]`} {
		if r := invoke(event); r.Error == nil || r.Error.Type != "EventError" || !strings.HasPrefix(r.Error.Message, "backfill-wave event: ") ||
			strings.Contains(r.Error.Message, "snapshot") {
			t.Errorf("%s: %s %s, want an EventError on the backfill-wave event", event, r.Output, r.ErrorBody)
		}
	}
	// A value of the right type out of range: an EventError too (the spec is fine), on the
	// event's field with the spec's rule for it and what to do, every bad field at once.
	// max_seconds 1e12 passed the old check (>= 0 only) and overflowed the call's deadline.
	const fix = "; correct it in the event, or leave it out for the spec's value (the backfill machine sends its input's config.params)"
	for _, c := range []struct{ event, want string }{
		{`{"chunk_rows": 0}`, "backfill-wave event: chunk_rows: 0: want an integer >= 1" + fix},
		{`{"isolation": "readUncommitted"}`, `backfill-wave event: isolation: "readUncommitted": want "readCommitted" or "snapshot" (never NOLOCK or READ UNCOMMITTED)` + fix},
		{`{"min_headroom_hours": -1}`, "backfill-wave event: min_headroom_hours: -1: want hours from 0 up to 366 days (8,784 h)" + fix},
		{`{"max_waves": -2}`, "backfill-wave event: max_waves: -2: want >= 0 (0 = no bound)" + fix},
		{`{"max_seconds": 1e12}`, "backfill-wave event: max_seconds: 1000000000000: want seconds from 0 up to 366 days (31,622,400 s); 0 = bounded by the invocation's deadline only" + fix},
		{`{"chunk_rows": 0, "target_wave_seconds": -1, "max_waves": 3}`, "backfill-wave event: chunk_rows: 0: want an integer >= 1; " +
			"target_wave_seconds: -1: want seconds from 0 up to 366 days (31,622,400 s); 0 reads one round" + fix},
	} {
		r := invoke(c.event)
		if r.Error == nil || r.Error.Type != "EventError" || r.Error.Message != c.want {
			t.Errorf("%s: %s %s\nwant an EventError %q", c.event, r.Output, r.ErrorBody, c.want)
		}
	}
	if rows, err := coresnapshot.PlanRows(context.Background(), deps().Plans, h.Spec.AppID, coresnapshot.PlanEventPlan); err != nil || len(rows) != 0 {
		t.Errorf("refused events planned: %d rows, %v", len(rows), err)
	}
	db.Inject(cdcsim.Fault{Method: "CaptureInstances", Call: 0, Kind: cdcsim.FaultTransient})
	if r := invoke(`{}`); r.Error == nil || r.Error.Type != "TransientError" {
		t.Errorf("transient fault: %s", r.ErrorBody)
	}
	full := *h.Spec
	full.Snapshot, full.ChunkRows, full.MinHeadroomHours, full.TargetWaveSeconds = config.SnapshotFull, nil, nil, nil
	if r := runtimeapitest.Start(t, "backfill-wave", New(&full, h.Open, h.Log).Handle).Invoke(`{}`); r.Error == nil || r.Error.Type != "ConfigError" {
		t.Errorf("spec with snapshot full: %s", r.ErrorBody)
	}
	specErr := New(nil, nil, h.Log)
	specErr.SpecErr = &config.ConfigError{Problems: []config.Problem{{Field: "(document)", Reason: "empty"}}}
	if r := runtimeapitest.Start(t, "backfill-wave", specErr.Handle).Invoke(`{}`); r.Error == nil || r.Error.Type != "ConfigError" {
		t.Errorf("invalid spec: %s", r.ErrorBody)
	}
	broken := New(h.Spec, func(context.Context, *config.Spec) (coresnapshot.Deps, func(), error) {
		return coresnapshot.Deps{}, nil, fmt.Errorf("open: %w", errors.New("disk on fire"))
	}, h.Log)
	if r := runtimeapitest.Start(t, "backfill-wave", broken.Handle).Invoke(`{}`); r.Error == nil || r.Error.Type != "UnexpectedError" || r.Error.Message != "open: disk on fire" {
		t.Errorf("an undeclared error: %s, want UnexpectedError with its text", r.ErrorBody)
	}
}
