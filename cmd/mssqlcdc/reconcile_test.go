package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/reconcile"
)

// With silver and reconcile sections in the spec, `mssqlcdc invoke reconcile` runs the
// reconcile Lambda's handler (through aws-lambda-go) on the --sim database: after a
// snapshot and an apply silver matches (ok, run 1), and the same run again returns that
// report instead of writing a second.
func TestInvokeReconcile(t *testing.T) {
	ctx := context.Background()
	plain := writeSimSpec(t)
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"snapshot", "--spec", plain, "--sim"}, &out, &errOut); code != 0 {
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
	doc["silver"] = map[string]any{"table": filepath.Join(dir, "silver"), "keys": []string{"id"}}
	doc["reconcile"] = map[string]any{"report_table": filepath.Join(dir, "report"), "bucket_rows": 100, "sample": 1}
	specPath := filepath.Join(dir, "with-reconcile.json")
	data, _ = json.Marshal(doc)
	if err := os.WriteFile(specPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
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
