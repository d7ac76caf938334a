package snapshot

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
	"regexp"
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

// newHandler is the handler over a cdcsim orders table of 10 rows, with extra columns.
func newHandler(t *testing.T, extra ...source.Column) (*Handler, *cdcsim.DB) {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 1, Start: time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)})
	cols := append([]source.Column{{Name: "id", DataType: "int"}, {Name: "name", DataType: "nvarchar", MaxLength: 20, Nullable: true}}, extra...)
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
	open := func(ctx context.Context, spec *config.Spec) (coresnapshot.Deps, func(), error) {
		table := func(d string) *deltalog.Table {
			st, _ := localstore.New(d)
			ls, _ := localfs.New(d)
			return deltalog.Open(st, ls, deltalog.Options{})
		}
		cp, err := localstore.New(spec.Checkpoint)
		if err != nil {
			return coresnapshot.Deps{}, nil, err
		}
		return coresnapshot.Deps{Spec: spec, Source: db, Bronze: table(spec.Bronze), Facts: table(spec.FactsTable), Staging: cp,
			Options: coresnapshot.Options{Now: db.Now}}, func() {}, nil
	}
	return New(spec, open, slog.New(slog.NewTextHandler(io.Discard, nil))), db
}

// byteCount matches a "bytes" field: Parquet file sizes follow the encoder (deltalog's
// parquetio), not the handler's contract, so the golden files hold "<bytes>" for any
// positive size.
var byteCount = regexp.MustCompile(`"bytes": [1-9][0-9]*`)

// golden compares indented JSON with testdata/name (rewritten with -update).
func golden(t *testing.T, name string, indented []byte) {
	t.Helper()
	got := append(byteCount.ReplaceAll(indented, []byte(`"bytes": "<bytes>"`)), '\n')
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

// step sends ev as Lambda would (its JSON is testdata/<name>.in.json), compares the output
// with <name>.out.json and decodes it into out.
func step(t *testing.T, invoke func(string) runtimeapi.Result, name string, ev coresnapshot.Event, out any) {
	t.Helper()
	in, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, name+".in.json", in)
	r := invoke(string(in))
	if r.Error != nil {
		t.Fatalf("%s: %s", name, r.ErrorBody)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, r.Output, "", "  "); err != nil {
		t.Fatalf("%s: output %q: %v", name, r.Output, err)
	}
	golden(t, name+".out.json", indented.Bytes())
	if out != nil {
		if err := json.Unmarshal(r.Output, out); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStepsGolden(t *testing.T) {
	h, _ := newHandler(t)
	invoke := runtimeapitest.Start(t, "snapshot", h.Handle).Invoke
	var open coresnapshot.OpenResult
	step(t, invoke, "1-open", coresnapshot.Event{Step: "open"}, &open)
	var plan coresnapshot.PlanResult
	step(t, invoke, "2-plan", coresnapshot.Event{Step: "plan", Snapshot: &open.Snapshot}, &plan)
	for i, r := range plan.Ranges {
		step(t, invoke, fmt.Sprintf("3-read-%d", i), coresnapshot.Event{Step: "read", Snapshot: &open.Snapshot, Range: &r}, nil)
	}
	step(t, invoke, "4-commit", coresnapshot.Event{Step: "commit", Snapshot: &open.Snapshot}, nil)
	step(t, invoke, "5-close", coresnapshot.Event{Step: "close", Open: &open}, nil)
	// A rerun finds the snapshot and reads nothing.
	step(t, invoke, "6-open-rerun", coresnapshot.Event{Step: "open"}, nil)
}

// Every failure reaches Step Functions under its declared name, as aws-lambda-go reports
// it: a malformed event or LSN (before anything is read or written), a missing plan, a
// transient source fault, an invalid spec, an unknown capture instance, and an error no
// type describes.
func TestErrorsAreNamed(t *testing.T) {
	h, db := newHandler(t)
	invoke := runtimeapitest.Start(t, "snapshot", h.Handle).Invoke
	bad := `"../../x"`
	for _, c := range []struct{ event, want string }{
		{`{"step": "explode"}`, "EventError"},
		{`{"step": "plan"}`, "EventError"},
		{`{"step": 5}`, "EventError"},
		{`[1]`, "EventError"},
		{`null`, "EventError"},
		{`{"step": "plan", "snapshot": {"lsn": ` + bad + `}}`, "EventError"},
		{`{"step": "read", "snapshot": {"lsn": "0xZZ"}, "range": {"index": 0}}`, "EventError"},
		{`{"step": "read", "snapshot": {"lsn": "0x0000000100000001000100"}, "range": {"index": 0}}`, "EventError"},
		// Another spelling of an LSN is that LSN (the staging keys use its canonical form).
		{`{"step": "commit", "snapshot": {"lsn": "0x12"}}`, "PlanNotFoundError"},
		{`{"step": "commit", "snapshot": {"lsn": "0x0000000100000001000a"}}`, "PlanNotFoundError"},
		{`{"step": "close", "open": {"status": "opened", "snapshot": {"lsn": ` + bad + `}}}`, "EventError"},
		{`{"step": "commit", "snapshot": {"lsn": "0x00000001000000010001"}}`, "PlanNotFoundError"},
	} {
		r := invoke(c.event)
		if r.Error == nil || r.Error.Type != c.want {
			t.Errorf("%s: %s %s, want errorType %s", c.event, r.Output, r.ErrorBody, c.want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(h.Spec.Checkpoint)); len(entries) != 0 {
		t.Errorf("refused events wrote %d entries beside the checkpoint", len(entries))
	}
	db.Inject(cdcsim.Fault{Method: "MaxLSN", Call: 0, Kind: cdcsim.FaultTransient})
	if r := invoke(`{"step": "open"}`); r.Error == nil || r.Error.Type != "TransientError" {
		t.Errorf("transient fault: %s", r.ErrorBody)
	}
	specErr := New(nil, nil, h.Log)
	specErr.SpecErr = &config.ConfigError{Problems: []config.Problem{{Field: "(document)", Reason: "empty"}}}
	if r := runtimeapitest.Start(t, "snapshot", specErr.Handle).Invoke(`{"step": "open"}`); r.Error == nil || r.Error.Type != "ConfigError" {
		t.Errorf("invalid spec: %s", r.ErrorBody)
	}
	broken := New(h.Spec, func(context.Context, *config.Spec) (coresnapshot.Deps, func(), error) {
		return coresnapshot.Deps{}, nil, fmt.Errorf("open: %w", errors.New("disk on fire"))
	}, h.Log)
	if r := runtimeapitest.Start(t, "snapshot", broken.Handle).Invoke(`{"step": "open"}`); r.Error == nil || r.Error.Type != "UnexpectedError" || r.Error.Message != "open: disk on fire" {
		t.Errorf("an undeclared error: %s, want UnexpectedError with its text", r.ErrorBody)
	}
	h.Spec.Source.CaptureInstance = "nope"
	if r := invoke(`{"step": "open"}`); r.Error == nil || r.Error.Type != "CaptureInstanceNotFoundError" {
		t.Errorf("unknown capture instance: %s", r.ErrorBody)
	}
}

// An EventError says what the handler takes (docs/handlers.md § snapshot): an unknown
// step is answered with all seven steps, the recover ones included, and a read without a
// range asks for the range's index only (its bounds stay in plan.json).
func TestEventErrorsSayWhatTheHandlerTakes(t *testing.T) {
	h, _ := newHandler(t)
	invoke := runtimeapitest.Start(t, "snapshot", h.Handle).Invoke
	for event, want := range map[string]string{
		`{"step": "explode"}`: "open, plan, read, commit, close, recover_open or recover_commit",
		`{"step": "read", "snapshot": {"lsn": "0x00000001000000010001"}}`: `needs range {"index": i}`,
	} {
		if r := invoke(event); r.Error == nil || r.Error.Type != "EventError" || !strings.Contains(r.Error.Message, want) {
			t.Errorf("%s: %s, want an EventError saying %q", event, r.ErrorBody, want)
		}
	}
}

// A column bronze cannot hold fails the read as ColumnsError (it was joinError); open and
// plan read no rows and pass.
func TestUnsupportedColumnIsNamed(t *testing.T) {
	h, _ := newHandler(t, source.Column{Name: "shape", DataType: "vector", Nullable: true})
	invoke := runtimeapitest.Start(t, "snapshot", h.Handle).Invoke
	var open coresnapshot.OpenResult
	var plan coresnapshot.PlanResult
	for _, s := range []struct {
		ev  coresnapshot.Event
		out any
	}{{coresnapshot.Event{Step: "open"}, &open}, {coresnapshot.Event{Step: "plan", Snapshot: &open.Snapshot}, &plan}} {
		in, _ := json.Marshal(s.ev)
		r := invoke(string(in))
		if r.Error != nil {
			t.Fatalf("%s: %s", s.ev.Step, r.ErrorBody)
		}
		if err := json.Unmarshal(r.Output, s.out); err != nil {
			t.Fatal(err)
		}
	}
	in, _ := json.Marshal(coresnapshot.Event{Step: "read", Snapshot: &open.Snapshot, Range: &plan.Ranges[0]})
	r := invoke(string(in))
	if r.Error == nil || r.Error.Type != "ColumnsError" || !strings.Contains(r.Error.Message, `column "shape": SQL Server type vector has no bronze type`) {
		t.Fatalf("read of a vector column: %s %s, want ColumnsError naming the column", r.Output, r.ErrorBody)
	}
}

// A database restored to before the stamp after the reads reaches Step Functions as
// errorType LSNRewoundError from a rerun of a read and from commit, before anything is read
// or committed.
func TestRestoreAfterOpenIsLSNRewoundError(t *testing.T) {
	h, db := newHandler(t)
	invoke := runtimeapitest.Start(t, "snapshot", h.Handle).Invoke
	backup, err := db.Backup()
	if err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	if _, err := db.Exec(func(tx *cdcsim.Txn) error { _, err := tx.Insert("orders", cdcsim.Row{"id": int64(11)}); return err }); err != nil {
		t.Fatal(err)
	}
	var open coresnapshot.OpenResult
	var plan coresnapshot.PlanResult
	for _, s := range []struct {
		ev  coresnapshot.Event
		out any
	}{{coresnapshot.Event{Step: "open"}, &open}, {coresnapshot.Event{Step: "plan", Snapshot: &open.Snapshot}, &plan}} {
		in, _ := json.Marshal(s.ev)
		r := invoke(string(in))
		if r.Error != nil {
			t.Fatalf("%s: %s", s.ev.Step, r.ErrorBody)
		}
		if err := json.Unmarshal(r.Output, s.out); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range plan.Ranges {
		in, _ := json.Marshal(coresnapshot.Event{Step: "read", Snapshot: &open.Snapshot, Range: &r})
		if r := invoke(string(in)); r.Error != nil {
			t.Fatalf("read: %s", r.ErrorBody)
		}
	}
	if err := db.Restore(backup); err != nil {
		t.Fatal(err)
	}
	reads := db.Calls("ReadTable")
	for _, ev := range []coresnapshot.Event{
		{Step: "read", Snapshot: &open.Snapshot, Range: &plan.Ranges[0]},
		{Step: "commit", Snapshot: &open.Snapshot},
	} {
		in, _ := json.Marshal(ev)
		if r := invoke(string(in)); r.Error == nil || r.Error.Type != "LSNRewoundError" {
			t.Fatalf("%s after the restore: %s %s, want errorType LSNRewoundError", ev.Step, r.Output, r.ErrorBody)
		}
	}
	if db.Calls("ReadTable") != reads {
		t.Fatal("the refused read read the table")
	}
}
