package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func writeSimSpec(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	spec := fmt.Sprintf(`{"app_id":"orders-v1","bootstrap":true,"source":{"dsn":"sqlserver://sim@cdcsim?database=demo","captureInstance":"dbo_orders"},
		"bronze":%q,"checkpoint":%q,"facts_table":%q,"options":{"numPartitions":3}}`,
		filepath.Join(dir, "bronze"), filepath.Join(dir, "cp"), filepath.Join(dir, "facts"))
	p := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// snapshotSimSpecWith writes writeSimSpec's spec, snapshots its table (--sim), and
// writes beside it, as name, the same spec with the sections sections(dir) returns added
// (dir: the spec's directory, for the tables they name); it returns the second spec's path.
func snapshotSimSpecWith(t *testing.T, name string, sections func(dir string) map[string]any) string {
	t.Helper()
	plain := writeSimSpec(t)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"snapshot", "--spec", plain, "--sim"}, &out, &errOut); code != 0 {
		t.Fatalf("snapshot exit %d: %s", code, errOut.String())
	}
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(plain)
	for k, v := range sections(dir) {
		doc[k] = v
	}
	data, err = json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSnapshotCommandFindsItsSnapshot(t *testing.T) {
	spec := writeSimSpec(t)
	var out1, out2, errOut bytes.Buffer
	if code := run(context.Background(), []string{"snapshot", "--spec", spec, "--sim"}, &out1, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var o1, o2 lsn.Offset
	if err := json.Unmarshal(out1.Bytes(), &o1); err != nil || o1.LSN.IsZero() {
		t.Fatalf("output %q: %v", out1.String(), err)
	}
	if code := run(context.Background(), []string{"snapshot", "--spec", spec, "--sim"}, &out2, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if err := json.Unmarshal(out2.Bytes(), &o2); err != nil || o2.LSN != o1.LSN {
		t.Fatalf("second run %q, want the first snapshot %s", out2.String(), o1.LSN)
	}
}

func TestBootstrapCommandThenStream(t *testing.T) {
	spec := writeSimSpec(t)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"bootstrap", "--spec", spec, "--sim"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "snapshot: {\"lsn\"") || !strings.Contains(out.String(), "caught up: true") {
		t.Fatalf("output %q", out.String())
	}
}

// simInvoker is an invoker of the real handlers over a --sim source for a fresh spec.
func simInvoker(t *testing.T) (*invoker, *config.Spec, *demoSource) {
	t.Helper()
	spec, err := connect.SpecFile(writeSimSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	src, ds, err := openSource(context.Background(), spec, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	inv, err := newInvoker(context.Background(), spec, src, ds, 0, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return inv, spec, ds
}

// invoke runs the real snapshot handler: its output, and its errors under the errorType
// aws-lambda-go reports.
func TestInvokeNamesErrors(t *testing.T) {
	inv, _, _ := simInvoker(t)
	ctx := context.Background()
	for _, c := range []struct{ event, want string }{
		{`{"step":"nope"}`, "EventError"},
		{`{"step":"commit","snapshot":{"lsn":"0x00000000000000000001"}}`, "PlanNotFoundError"},
		{`{"step":"commit","snapshot":{"lsn":"../../x"}}`, "EventError"},
	} {
		res, err := inv.invoke(ctx, "snapshot", []byte(c.event))
		if err != nil || res.Error == nil || res.Error.Type != c.want {
			t.Errorf("snapshot %s: %s %v, want errorType %s", c.event, res.ErrorBody, err, c.want)
		}
	}
	if _, err := inv.invoke(ctx, "nothing", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), `unknown function "nothing"`) {
		t.Errorf("unknown function: %v", err)
	}
	res, err := inv.invoke(ctx, "snapshot", []byte(`{"step":"open"}`))
	if err != nil || res.Error != nil {
		t.Fatalf("open: %s %v", res.ErrorBody, err)
	}
	var o snapshot.OpenResult
	if err := json.Unmarshal(res.Output, &o); err != nil || o.Status != snapshot.Opened {
		t.Fatalf("open: %s", res.Output)
	}
}

// invoke stream names errors as the stream Lambda does, because it is that handler: an
// event's invalid override or malformed JSON is an EventError, and a type change of a
// captured column reaches the caller as SchemaChangedError.
func TestInvokeStreamNamesErrors(t *testing.T) {
	inv, spec, ds := simInvoker(t)
	ctx := context.Background()
	deps, err := connect.SnapshotDeps(ctx, spec, ds.db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Run(ctx, deps); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ event, want string }{{`{"max_seconds":-1}`, "EventError"}, {`[1]`, "EventError"}} {
		if res, err := inv.invoke(ctx, "stream", []byte(c.event)); err != nil || res.Error == nil || res.Error.Type != c.want {
			t.Errorf("stream %s: %s %v, want %s", c.event, res.ErrorBody, err, c.want)
		}
	}
	if _, err := ds.db.AlterColumn("orders", source.Column{Name: "amount", DataType: "decimal", Precision: 20, Scale: 4, Nullable: true}); err != nil {
		t.Fatal(err)
	}
	if err := ds.gen.Step(5); err != nil {
		t.Fatal(err)
	}
	res, err := inv.invoke(ctx, "stream", []byte(`{}`))
	if err != nil || res.Error == nil || res.Error.Type != "SchemaChangedError" {
		t.Fatalf("stream after ALTER COLUMN: %s %v, want errorType SchemaChangedError", res.ErrorBody, err)
	}
}

// withStdin runs f with os.Stdin reading text (invoke reads the event from it).
func withStdin(t *testing.T, text string, f func()) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	saved := os.Stdin
	os.Stdin = in
	defer func() { os.Stdin = saved }()
	f()
}

// `mssqlcdc invoke FUNCTION < event` prints the handler's output as Lambda returns it, or
// aws-lambda-go's error body and exits 1; -h shows the arguments.
func TestInvokeCommand(t *testing.T) {
	spec := writeSimSpec(t)
	ctx := context.Background()
	var out, errOut bytes.Buffer
	withStdin(t, `{"step":"open"}`, func() {
		if code := run(ctx, []string{"invoke", "--spec", spec, "--sim", "snapshot"}, &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	})
	var o snapshot.OpenResult
	if err := json.Unmarshal(out.Bytes(), &o); err != nil || o.Status != snapshot.Opened || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	out.Reset()
	withStdin(t, `{"step":"plan"}`, func() {
		if code := run(ctx, []string{"invoke", "--spec", spec, "--sim", "snapshot"}, &out, &errOut); code != 1 {
			t.Fatalf("a refused event: exit %d, want 1", code)
		}
	})
	var failure map[string]string
	if err := json.Unmarshal(out.Bytes(), &failure); err != nil || failure["errorType"] != "EventError" || !strings.Contains(failure["errorMessage"], "needs snapshot") {
		t.Fatalf("failure output %q: %v", out.String(), err)
	}
	out.Reset()
	withStdin(t, `{"step":`, func() {
		if code := run(ctx, []string{"invoke", "--spec", spec, "--sim", "snapshot"}, &out, &errOut); code != 2 || out.Len() != 0 {
			t.Fatalf("an event that is no JSON: exit %d, stdout %q", code, out.String())
		}
	})
	out.Reset()
	if code := run(ctx, []string{"invoke", "-h"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "snapshot|stream|seed|backfill-wave|maintain|apply|reconcile < event.json") || !strings.Contains(out.String(), "--serve") {
		t.Fatalf("invoke -h: exit %d, %q", code, out.String())
	}
}

// `mssqlcdc export` prints the LSN its rows are stamped with, the given one when
// --snapshot-lsn names it, and refuses a stamp above max_lsn.
func TestExportPrintsItsStamp(t *testing.T) {
	spec := writeSimSpec(t)
	to := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"export", "--spec", spec, "--sim", "--to", to}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	stamp := strings.TrimSpace(out.String())
	if _, err := lsn.Parse(stamp); err != nil || !strings.Contains(errOut.String(), "exported 10000 rows") {
		t.Fatalf("stdout %q stderr %q: want the stamp's LSN and the row count", stamp, errOut.String())
	}
	entries, err := os.ReadDir(to)
	if err != nil || len(entries) == 0 {
		t.Fatalf("no files in %s: %v", to, err)
	}
	// The export shows its progress like a snapshot and says how to tell it is whole: the
	// completion marker, written last (issue 12 items 4 and 12).
	for _, want := range []string{"range 1/", "export so far", "of ~10,000 rows", "export read: 10,000 rows", "_SUCCESS (written last) lists them: readers must check it"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if _, err := os.Stat(filepath.Join(to, "_SUCCESS")); err != nil {
		t.Fatalf("no completion marker: %v", err)
	}
	out.Reset()
	if code := run(context.Background(), []string{"export", "--spec", spec, "--sim", "--to", t.TempDir(), "--snapshot-lsn", stamp}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != stamp {
		t.Fatalf("--snapshot-lsn %s printed %q", stamp, got)
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"export", "--spec", spec, "--sim", "--to", to}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "pick an empty URL") ||
		!strings.Contains(errOut.String(), "a finished export") {
		t.Fatalf("a second export into %s: exit %d, stderr %q, want it refused", to, code, errOut.String())
	}
	if again, _ := os.ReadDir(to); len(again) != len(entries) {
		t.Fatalf("the refused export changed %s: %d entries, had %d", to, len(again), len(entries))
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"export", "--spec", spec, "--sim", "--to", t.TempDir(), "--snapshot-lsn", "0x7FFFFFFF000000010001"}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "above the source's current max_lsn") ||
		!strings.Contains(errOut.String(), "leave --snapshot-lsn out") || strings.Contains(errOut.String(), "snapshotLsn") {
		// The flag gave the stamp: the advice names it, not the spec's snapshotLsn.
		t.Fatalf("a stamp from the future: exit %d, stderr %q", code, errOut.String())
	}
}

// A failed invoke says its error once: the reply on stdout. The handler's error log line
// and aws-lambda-go's log.Printf of the same reply repeated it on stderr, three times in
// all.
func TestFailedInvokeSaysTheErrorOnce(t *testing.T) {
	spec := writeSimSpec(t)
	var out, errOut, stdlog bytes.Buffer
	log.SetOutput(&stdlog)
	defer log.SetOutput(os.Stderr)
	withStdin(t, `{"step":"plan","request":{"copy":"/nonexistent","as_of":"2030-01-01T00:00:00Z"}}`, func() {
		if code := run(context.Background(), []string{"invoke", "--spec", spec, "--sim", "seed"}, &out, &errOut); code != 1 {
			t.Fatalf("exit %d, want 1: %s", code, errOut.String())
		}
	})
	const msg = "later than SQL Server's clock now"
	all := out.String() + errOut.String() + stdlog.String()
	if strings.Count(out.String(), msg) != 1 || strings.Count(all, msg) != 1 {
		t.Errorf("the error %d times on stdout, %d in all, want once on stdout:\nstdout %s\nstderr %s\nlog %s",
			strings.Count(out.String(), msg), strings.Count(all, msg), out.String(), errOut.String(), stdlog.String())
	}
}
