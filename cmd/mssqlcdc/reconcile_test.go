package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
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
