package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// `mssqlcdc apply` builds silver from the spec's bronze (here the snapshot of the
// simulator's table): silver then holds the simulator's table row for row, the JSON result
// counts every row inserted by one rebuild, and a second run has nothing to do. Keys that
// differ from the ones silver was built with, a missing --silver and a negative
// --max-seconds are refused.
func TestApplyCommand(t *testing.T) {
	ctx := context.Background()
	specPath := writeSimSpec(t)
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"snapshot", "--spec", specPath, "--sim"}, &out, &errOut); code != 0 {
		t.Fatalf("snapshot exit %d: %s", code, errOut.String())
	}
	silverURL := filepath.Join(filepath.Dir(specPath), "silver")
	apply := func(extra ...string) (map[string]any, int, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(ctx, append([]string{"apply", "--spec", specPath, "--silver", silverURL}, extra...), &out, &errOut)
		var res map[string]any
		if code == 0 {
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatalf("apply output %q: %v", out.String(), err)
			}
		}
		return res, code, errOut.String()
	}
	res, code, msg := apply("--keys", "id", "--memory-mb", "1")
	if code != 0 {
		t.Fatalf("apply exit %d: %s", code, msg)
	}
	if res["caught_up"] != true || res["rebuilds"] != 1.0 || res["inserted"] != float64(simRows) ||
		res["updated"] != 0.0 || res["deleted"] != 0.0 || res["bronze_version"].(float64) < 0 {
		t.Fatalf("first apply: %v", res)
	}

	// Silver equals the simulator's table (the same seeded database snapshot read).
	ds, err := setupDemoSource(simOptions(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := ds.db.Columns("orders")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ds.db.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: "orders"}, Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	want, err := rebuild.FromRows(ctx, rows, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := connect.SpecFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readSilver(ctx, spec, silverURL)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rows != simRows || len(want.Rows) != simRows {
		t.Fatalf("silver %d rows, table %d, want %d", got.Rows, len(want.Rows), simRows)
	}
	if d := rebuild.Diff(want, got.state, 5); len(d) != 0 {
		t.Fatalf("silver differs from the table: %v", d)
	}

	// Nothing new in bronze: caught up without a commit, at the same versions. No --keys:
	// silver's recorded keys are used.
	res2, code, msg := apply()
	if code != 0 || res2["caught_up"] != true || res2["commits"] != 0.0 || res2["inserted"] != 0.0 ||
		res2["silver_version"] != res["silver_version"] || res2["bronze_version"] != res["bronze_version"] {
		t.Fatalf("second apply (exit %d, %s): %v, first %v", code, msg, res2, res)
	}
	if _, code, msg := apply("--keys", "customer"); code != 1 || !strings.Contains(msg, "silver key") {
		t.Fatalf("apply with other keys: exit %d: %s", code, msg)
	}
	if code := run(ctx, []string{"apply", "--spec", specPath}, &out, &errOut); code != 2 {
		t.Fatalf("apply without --silver or silver.table: exit %d", code)
	}
	if _, code, _ := apply("--max-seconds", "-1"); code != 2 {
		t.Fatalf("apply --max-seconds -1: exit %d", code)
	}
	// A flag's value out of range names the flag, not "invalid table spec" of a spec that
	// is fine.
	if _, code, msg := apply("--memory-mb", "100000"); code != 2 || !strings.HasPrefix(msg, "mssqlcdc apply: --memory-mb: 100000: want 1 to 8192 MiB") || strings.Contains(msg, "table spec") {
		t.Fatalf("apply --memory-mb 100000: exit %d: %s", code, msg)
	}
	errOut.Reset()
	if code := run(ctx, []string{"apply", "--spec", specPath, "--silver", filepath.Join(filepath.Dir(specPath), "bronze")}, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "--silver: must differ from bronze") {
		t.Fatalf("apply --silver <bronze>: exit %d: %s", code, errOut.String())
	}
}

// With a silver section in the spec, `mssqlcdc invoke apply` runs the apply Lambda's
// handler (through aws-lambda-go) on the spec's tables and builds silver equal to the
// table, and `mssqlcdc apply --spec FILE` alone finds the same silver caught up.
func TestInvokeApply(t *testing.T) {
	ctx := context.Background()
	var silverURL string
	specPath := snapshotSimSpecWith(t, "with-silver.json", func(dir string) map[string]any {
		silverURL = filepath.Join(dir, "silver")
		return map[string]any{"silver": map[string]any{"table": silverURL, "keys": []string{"id"}, "memory_mb": 1}}
	})
	var out, errOut bytes.Buffer
	withStdin(t, `{}`, func() {
		if code := run(ctx, []string{"invoke", "--spec", specPath, "--sim", "apply"}, &out, &errOut); code != 0 {
			t.Fatalf("invoke apply: exit %d: %s %s", code, out.String(), errOut.String())
		}
	})
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res["caught_up"] != true || res["rebuilds"] != 1.0 || res["inserted"] != float64(simRows) {
		t.Fatalf("invoke apply output %q: %v", out.String(), err)
	}
	spec, err := connect.SpecFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readSilver(ctx, spec, silverURL)
	if err != nil || got.Rows != simRows {
		t.Fatalf("silver after invoke apply: %d rows, %v", got.Rows, err)
	}
	out.Reset()
	if code := run(ctx, []string{"apply", "--spec", specPath}, &out, &errOut); code != 0 {
		t.Fatalf("apply --spec: exit %d: %s", code, errOut.String())
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res["caught_up"] != true || res["commits"] != 0.0 {
		t.Fatalf("apply --spec after invoke: %q %v", out.String(), err)
	}
}

// A spec without silver.table and no --silver: a usage mistake saying what to give, with
// the command named once (it read "mssqlcdc apply: mssqlcdc apply: the spec has ...").
func TestApplyWithoutSilverSaysGiveSilver(t *testing.T) {
	_, errOut, code := runCLI(t, "apply", "--spec", writeSimSpec(t))
	if code != 2 || !strings.HasPrefix(errOut, "mssqlcdc apply: the spec has no silver.table: give --silver URL\n") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// apply --max-seconds means what stream's and backfill's do: left out, the spec's
// silver.max_seconds; 0, no bound, whatever the spec says (0 was taken as "left out", so a
// spec's bound held and the flag could not lift it). A spec bounding each apply to a
// microsecond stops before caught up; with --max-seconds 0 the apply catches up. -h says so.
func TestApplyMaxSecondsZeroIsNoBound(t *testing.T) {
	ctx := context.Background()
	specPath := snapshotSimSpecWith(t, "bounded.json", func(dir string) map[string]any {
		return map[string]any{"silver": map[string]any{"table": filepath.Join(dir, "silver"), "keys": []string{"id"}, "memory_mb": 1, "max_seconds": 0.000001}}
	})
	apply := func(extra ...string) map[string]any {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(ctx, append([]string{"apply", "--spec", specPath}, extra...), &out, &errOut); code != 0 {
			t.Fatalf("apply %v: exit %d: %s", extra, code, errOut.String())
		}
		var res map[string]any
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("apply output %q: %v", out.String(), err)
		}
		return res
	}
	if res := apply(); res["caught_up"] != false {
		t.Fatalf("apply without --max-seconds under the spec's 1 µs: %v, want caught_up false", res)
	}
	if res := apply("--max-seconds", "0"); res["caught_up"] != true {
		t.Fatalf("apply --max-seconds 0: %v, want caught_up true (no bound)", res)
	}
	help, _, _ := runCLI(t, "apply", "-h")
	if !strings.Contains(help, "(default: the spec's silver.max_seconds; 0: no bound)") {
		t.Errorf("apply -h does not say --max-seconds defaults to the spec's and 0 is no bound:\n%s", help)
	}
}

// apply on a bronze location that holds no table yet (not bootstrapped, or a typo in the
// path) says so on stderr: the JSON alone, "caught_up": true, reads as success.
func TestApplyOnNoBronzeSaysSo(t *testing.T) {
	dir := t.TempDir()
	spec := writeSpecWith(t, filepath.Join(dir, "no-bronze"), filepath.Join(dir, "cp"), filepath.Join(dir, "facts"))
	out, errOut, code := runCLI(t, "apply", "--spec", spec, "--silver", filepath.Join(dir, "silver"), "--keys", "id")
	if code != 0 || !strings.Contains(out, `"bronze_version": -1`) ||
		!strings.Contains(errOut, filepath.Join(dir, "no-bronze")+" holds no Delta table yet: nothing applied") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 0 and a note that bronze holds no table", code, out, errOut)
	}
}

// apply with --silver on a spec without silver.keys or snapshotKeys: the refusal says the
// command line can give the keys too (it said only "set silver.keys in the table spec",
// of a spec that has no silver section at all).
func TestApplyWithoutKeysSaysGiveKeys(t *testing.T) {
	specPath := snapshotSimSpecWith(t, "nokeys.json", func(string) map[string]any { return map[string]any{} })
	_, errOut, code := runCLI(t, "apply", "--spec", specPath, "--silver", filepath.Join(t.TempDir(), "silver"))
	if code != 1 || !strings.Contains(errOut, "no key columns") || !strings.Contains(errOut, "or give --keys") {
		t.Errorf("exit %d, stderr %q; want the key refusal naming --keys", code, errOut)
	}
}

// invoke maintain and invoke apply run handlers that never ask SQL Server anything, as
// their Lambdas do (no password in their environment): they need no password either (both
// stopped with "password not set" before the handler ran).
func TestInvokeMaintainAndApplyNeedNoPassword(t *testing.T) {
	t.Setenv("MSSQLCDC_TEST_UNSET_PASSWORD", "")
	dir := t.TempDir()
	p := filepath.Join(dir, "spec.json")
	doc := fmt.Sprintf(`{"app_id":"orders-v1","bootstrap":true,"source":{"dsn":"sqlserver://u@db.invalid:1433?database=shop","captureInstance":"dbo_orders","password_env":"MSSQLCDC_TEST_UNSET_PASSWORD"},
		"bronze":%q,"checkpoint":%q,"facts_table":%q,"silver":{"table":%q,"keys":["id"]}}`,
		filepath.Join(dir, "bronze"), filepath.Join(dir, "cp"), filepath.Join(dir, "facts"), filepath.Join(dir, "silver"))
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"maintain", "apply"} {
		var out, errOut bytes.Buffer
		withStdin(t, `{}`, func() {
			if code := run(context.Background(), []string{"invoke", "--spec", p, fn}, &out, &errOut); code != 0 {
				t.Errorf("invoke %s: exit %d: %s %s", fn, code, out.String(), errOut.String())
			}
		})
	}
	// A handler that reads SQL Server still says the password is missing.
	var out, errOut bytes.Buffer
	withStdin(t, `{}`, func() {
		if code := run(context.Background(), []string{"invoke", "--spec", p, "stream"}, &out, &errOut); code == 0 || !strings.Contains(out.String()+errOut.String(), "password not set") {
			t.Errorf("invoke stream: exit %d: %s %s; want password not set", code, out.String(), errOut.String())
		}
	})
}

// apply --silver naming a file says which location is wrong, by its flag (it said only
// "location: ... is a file").
func TestApplySilverThatIsAFileNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := writeSpecWith(t, filepath.Join(dir, "b"), filepath.Join(dir, "cp"), filepath.Join(dir, "facts"))
	_, errOut, code := runCLI(t, "apply", "--spec", spec, "--silver", file, "--keys", "id")
	if code != 1 || !strings.Contains(errOut, "cannot write --silver ("+file+"): "+file+" is a file, not a directory; point --silver at a directory") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
