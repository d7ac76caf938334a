package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/reconcile"
)

// With silver and reconcile sections in the spec, `mssqlcdc invoke reconcile` runs the
// reconcile Lambda's handler (through aws-lambda-go) on the --sim database: after a
// snapshot and an apply silver matches (ok, run 1), and the same run again returns that
// report instead of writing a second.
func TestInvokeReconcile(t *testing.T) {
	ctx := context.Background()
	specPath := snapshotSimSpecWith(t, "with-reconcile.json", func(dir string) map[string]any {
		return map[string]any{
			"silver":    map[string]any{"table": filepath.Join(dir, "silver"), "keys": []string{"id"}},
			"reconcile": map[string]any{"report_table": filepath.Join(dir, "report"), "bucket_rows": 100, "sample": 1},
		}
	})
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"apply", "--spec", specPath}, &out, &errOut); code != 0 {
		t.Fatalf("apply exit %d: %s", code, errOut.String())
	}
	for _, want := range []bool{false, true} {
		out.Reset()
		withStdin(t, `{"run": "2026-12-02T05:00:00Z"}`, func() {
			if code := run(ctx, []string{"invoke", "--spec", specPath, "--sim", "reconcile"}, &out, &errOut); code != 0 {
				t.Fatalf("invoke reconcile: exit %d: %s %s", code, out.String(), errOut.String())
			}
		})
		var res struct {
			Run      int64          `json:"run"`
			OK       bool           `json:"ok"`
			Counts   map[string]int `json:"counts"`
			Replayed bool           `json:"replayed"`
		}
		if err := json.Unmarshal(out.Bytes(), &res); err != nil || !res.OK || res.Run != 1 || res.Counts["MATCH"] == 0 || res.Replayed != want {
			t.Fatalf("invoke reconcile output %q: %v; want ok, run 1, replayed %v", out.String(), err, want)
		}
	}
}

// `mssqlcdc reconcile` takes what the spec's silver and reconcile sections say, as the
// scheduled function does (docs/spec.md § Reconcile: the fields are the flags'), and a
// flag given overrides it; without the sections --silver is required, the defaults are
// the function's, and the keys are left to the job (silver's recorded keys, else
// snapshotKeys, else the unique index).
func TestReconcileFlagsDefaultToTheSpec(t *testing.T) {
	sample := 0.5
	spec := &config.Spec{Options: config.Options{SnapshotKeys: []string{"k"}},
		Silver:    &config.Silver{Table: "/lake/silver", Keys: []string{"id"}},
		Reconcile: &config.Reconcile{ReportTable: "/lake/report", BucketRows: 100, Sample: &sample}}
	got, err := reconcileSettings(spec, reconcileFlags{})
	want := reconcileFlags{Silver: "/lake/silver", Report: "/lake/report", Keys: []string{"id"}, BucketRows: 100, Sample: 0.5, Seed: 1}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("from the spec: %+v, %v; want %+v", got, err, want)
	}
	flags := reconcileFlags{Silver: "/other", Report: "/r2", Keys: []string{"a", "b"}, BucketRows: 7, Sample: 0, Seed: 9,
		set: map[string]bool{"silver": true, "report": true, "keys": true, "bucket-rows": true, "sample": true, "seed": true}}
	if got, err := reconcileSettings(spec, flags); err != nil || got.Silver != "/other" || got.Report != "/r2" || got.BucketRows != 7 || got.Sample != 0 || got.Seed != 9 || len(got.Keys) != 2 {
		t.Errorf("flags given: %+v, %v; want the flags", got, err)
	}
	// A silver section without keys: the function's keys (config.Spec.SilverKeys), snapshotKeys.
	noKeys := &config.Spec{Options: config.Options{SnapshotKeys: []string{"k"}}, Silver: &config.Silver{Table: "/lake/silver"}}
	if got, err := reconcileSettings(noKeys, reconcileFlags{}); err != nil || !reflect.DeepEqual(got.Keys, []string{"k"}) {
		t.Errorf("silver section without keys: keys %v, %v; want [k], the reconcile function's", got.Keys, err)
	}
	bare := &config.Spec{Options: config.Options{SnapshotKeys: []string{"k"}}}
	if _, err := reconcileSettings(bare, reconcileFlags{}); err == nil || !strings.Contains(err.Error(), "--silver") {
		t.Errorf("no silver anywhere: %v, want a usage error naming --silver", err)
	}
	got, err = reconcileSettings(bare, reconcileFlags{Silver: "/s", set: map[string]bool{"silver": true}})
	want = reconcileFlags{Silver: "/s", BucketRows: reconcile.DefaultBucketRows, Sample: config.DefaultReconcileSample, Seed: 1}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("no sections: %+v, %v; want %+v", got, err, want)
	}
}

// A tiled run prints its differing tiles with their bounds and says in the summary how
// many of the key's tiles tier 2 sampled.
func TestPrintReconcileTiles(t *testing.T) {
	res := reconcile.JobResult{Result: reconcile.Result{Tiles: 11, TilesSampled: 3, Tier2Buckets: 3,
		Counts: map[reconcile.Kind]int{reconcile.Mismatch: 1},
		Rows:   []reconcile.Row{{Kind: reconcile.Mismatch, Scope: "tile", Lo: `["cust-0200"]`, Hi: `["cust-0400"]`, SourceRows: 200, TargetRows: 199}}}}
	var out bytes.Buffer
	printReconcile(&out, res, false)
	for _, want := range []string{`MISMATCH       tile [["cust-0200"], ["cust-0400"])  source 200 rows, silver 199`, "; 3 of 11 key tiles sampled"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed %q, want %q in it", out.String(), want)
		}
	}
}

// `mssqlcdc reconcile --sim` reads the simulated database stream --sim reads: after a
// bootstrap --sim and an apply, the stream's 500 workload transactions are changes silver
// has not applied (IN_FLIGHT, exit 0); after stream --sim --available-now and an apply,
// all MATCH. Its report is marked simulated, so a real reconcile refuses to write it; a
// --sim silver or report off local disk is refused.
func TestReconcileSim(t *testing.T) {
	dir := t.TempDir()
	at := func(n string) string { return filepath.Join(dir, n) }
	spec := at("spec.json")
	doc := fmt.Sprintf(`{"app_id":"orders-v1","bootstrap":true,"source":{"dsn":"sqlserver://sim@cdcsim?database=demo","captureInstance":"dbo_orders"},
		"bronze":%q,"checkpoint":%q,"facts_table":%q,"options":{"numPartitions":2},
		"silver":{"table":%q,"keys":["id"]},"reconcile":{"report_table":%q,"bucket_rows":2000,"sample":1}}`,
		at("bronze"), at("cp"), at("facts"), at("silver"), at("report"))
	if err := os.WriteFile(spec, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	step := func(args ...string) string { t.Helper(); return mustRunSpec(t, spec, args...) }
	step("bootstrap", "--sim")
	step("apply")
	c := summaryCounts(t, step("reconcile", "--sim"))
	if c["IN_FLIGHT"] < 100 || len(c) != 1+min(c["MATCH"], 1) {
		t.Fatalf("before the stream's changes are applied: %v, want IN_FLIGHT (and MATCH) only", c)
	}
	step("stream", "--sim", "--available-now")
	step("apply")
	if c := summaryCounts(t, step("reconcile", "--sim")); c["MATCH"] < 5 || len(c) != 1 {
		t.Fatalf("caught up: %v, want MATCH only", c)
	}

	if _, errOut, code := runCLI(t, "reconcile", "--spec", spec); code != 1 || !strings.Contains(errOut, "was made by a simulated run") {
		t.Errorf("a real reconcile onto the --sim report: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "reconcile", "--spec", spec, "--sim", "--report", "s3://real-lake/reports/reconcile"); code != 2 || !strings.Contains(errOut, "report is s3://real-lake/reports/reconcile") {
		t.Errorf("reconcile --sim with a report on S3: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "reconcile", "--spec", spec, "--sim", "--silver", "s3://real-lake/silver/orders"); code != 2 || !strings.Contains(errOut, "silver is s3://real-lake/silver/orders") {
		t.Errorf("reconcile --sim with silver on S3: exit %d: %s", code, errOut)
	}
}

// reconcile --sim while a chunked snapshot is half read (a stream --sim opened it, one
// backfill --sim wave read, applied to silver): the keys of the chunks not read are
// IN_FLIGHT, the chunks read MATCH, exit 0 (docs/reconcile.md § While a chunked snapshot is
// open); once every wave is read and applied, all MATCH.
func TestReconcileSimDuringAChunkedBackfill(t *testing.T) {
	spec := writeChunkedSimSpec(t)
	silver := filepath.Join(filepath.Dir(spec), "silver")
	step := func(args ...string) string { t.Helper(); return mustRunSpec(t, spec, args...) }
	step("stream", "--sim", "--available-now")
	step("backfill", "--sim", "--max-waves", "1")
	step("apply", "--silver", silver, "--keys", "id")
	out := step("reconcile", "--sim", "--silver", silver, "--bucket-rows", "1000", "--sample", "1", "-v")
	read := strings.Count(out, "MATCH          chunk ")
	unread := strings.Count(out, "IN_FLIGHT      chunk ")
	keys := strings.Count(out, "IN_FLIGHT      key ")
	if read != 2 || unread < 5 || keys < 5000 || !strings.Contains(out, "chunks of snapshot 0x") {
		t.Fatalf("half read: %d chunks MATCH, %d IN_FLIGHT, %d keys IN_FLIGHT; want 2 (one wave of two), the rest, and the keys of the rest:\n%s",
			read, unread, keys, lastLines(out, 5))
	}
	for calls := 0; !strings.Contains(step("backfill", "--sim"), `"state":"done"`); calls++ {
		if calls == 20 {
			t.Fatal("the backfill is not done after 20 calls")
		}
	}
	step("apply", "--silver", silver, "--keys", "id")
	out = step("reconcile", "--sim", "--silver", silver, "--bucket-rows", "1000", "--sample", "1")
	if c := summaryCounts(t, out); c["MATCH"] == 0 || len(c) != 1 {
		t.Fatalf("whole: %v, want MATCH only:\n%s", c, lastLines(out, 5))
	}
}

// mustRunSpec runs mssqlcdc with args and --spec spec, failing the test unless it exits 0;
// it returns stdout.
func mustRunSpec(t *testing.T, spec string, args ...string) string {
	t.Helper()
	out, errOut, code := runCLI(t, append(args, "--spec", spec)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s\n%s", args, code, errOut, out)
	}
	return out
}

// summaryCounts are the kinds and counts of reconcile's summary line in out.
func summaryCounts(t *testing.T, out string) map[string]int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^reconcile: ([^;]*);`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line:\n%s", out)
	}
	got := map[string]int{}
	for _, kv := range strings.Split(m[1], ", ") {
		var k string
		var n int
		if _, err := fmt.Sscanf(kv, "%s %d", &k, &n); err != nil {
			t.Fatalf("summary %q: %v", m[1], err)
		}
		got[k] = n
	}
	return got
}

// lastLines are the last n lines of out.
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// A ConfigError on a value the command line gave (--keys, --silver) names the flag, not
// "invalid table spec" of a spec that is fine; the same field from the spec stays the
// spec's ConfigError.
func TestReconcileFlagMistakeNamesTheFlag(t *testing.T) {
	keys := &config.ConfigError{Problems: []config.Problem{{Field: "keys", Reason: `key column "idd" is not a captured column`}}}
	err := reconcileFlagMistake(keys, map[string]bool{"keys": true})
	var ue *usageError
	if !errors.As(err, &ue) || err.Error() != `--keys: key column "idd" is not a captured column` {
		t.Errorf("--keys given: %v (%T)", err, err)
	}
	if err := reconcileFlagMistake(keys, map[string]bool{"silver": true}); err != keys {
		t.Errorf("keys from the spec: %v, want the ConfigError as it is", err)
	}
	silver := &config.ConfigError{Problems: []config.Problem{{Field: "silver", Reason: "no column \"x\": is it the silver table of this source table?"}}}
	if err := reconcileFlagMistake(silver, map[string]bool{"silver": true}); !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "--silver: no column") {
		t.Errorf("--silver given: %v", err)
	}
}
