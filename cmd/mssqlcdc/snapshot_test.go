package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

func TestInvokeNamesErrors(t *testing.T) {
	data, err := os.ReadFile(writeSimSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	src, ds, err := openSource(context.Background(), spec, true, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	inv := &invoker{spec: spec, src: src, ds: ds}
	cases := []struct{ fn, event, want string }{
		{"snapshot", `{"step":"nope"}`, "EventError"},
		{"snapshot", `{"step":"commit","snapshot":{"lsn":"0x00000000000000000001"}}`, "PlanNotFoundError"},
		{"nothing", `{}`, "usageError"},
	}
	for _, c := range cases {
		_, err := inv.invoke(context.Background(), c.fn, []byte(c.event))
		if err == nil || failureOf(err).ErrorType != c.want {
			t.Errorf("%s %s: %v, want %s", c.fn, c.event, err, c.want)
		}
	}
	out, err := inv.invoke(context.Background(), "snapshot", []byte(`{"step":"open"}`))
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := out.(snapshot.OpenResult); !ok || o.Status != snapshot.Opened {
		t.Fatalf("open: %+v", out)
	}
}

// `invoke stream` names errors as the stream Lambda does (stream.Named): an event's
// invalid override or malformed JSON is a ConfigError (the CLI used to ignore both and run),
// and a type change of a captured column reaches the caller as SchemaChangedError.
func TestInvokeStreamNamesErrors(t *testing.T) {
	spec, err := connect.SpecFile(writeSimSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var errOut bytes.Buffer
	src, ds, err := openSource(ctx, spec, true, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	deps, err := connect.SnapshotDeps(ctx, spec, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Run(ctx, deps); err != nil {
		t.Fatal(err)
	}
	inv := &invoker{spec: spec, src: src, ds: ds}
	for _, c := range []struct{ event, want string }{{`{"max_seconds":-1}`, "ConfigError"}, {`[1]`, "ConfigError"}} {
		if _, err := inv.invoke(ctx, "stream", []byte(c.event)); err == nil || failureOf(err).ErrorType != c.want {
			t.Errorf("stream %s: %v, want %s", c.event, err, c.want)
		}
	}
	if _, err := ds.db.AlterColumn("orders", source.Column{Name: "amount", DataType: "decimal", Precision: 20, Scale: 4, Nullable: true}); err != nil {
		t.Fatal(err)
	}
	if err := ds.gen.Step(5); err != nil {
		t.Fatal(err)
	}
	_, err = inv.invoke(ctx, "stream", []byte(" \n"))
	if err == nil || failureOf(err).ErrorType != "SchemaChangedError" {
		t.Fatalf("stream after ALTER COLUMN: %T %v, want errorType SchemaChangedError", err, err)
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
	out.Reset()
	if code := run(context.Background(), []string{"export", "--spec", spec, "--sim", "--to", t.TempDir(), "--snapshot-lsn", stamp}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != stamp {
		t.Fatalf("--snapshot-lsn %s printed %q", stamp, got)
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"export", "--spec", spec, "--sim", "--to", to}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "pick an empty URL") {
		t.Fatalf("a second export into %s: exit %d, stderr %q, want it refused", to, code, errOut.String())
	}
	if again, _ := os.ReadDir(to); len(again) != len(entries) {
		t.Fatalf("the refused export changed %s: %d entries, had %d", to, len(again), len(entries))
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"export", "--spec", spec, "--sim", "--to", t.TempDir(), "--snapshot-lsn", "0x7FFFFFFF000000010001"}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "above the source's current max_lsn") {
		t.Fatalf("a stamp from the future: exit %d, stderr %q", code, errOut.String())
	}
}
