package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// mssqlcdc seed --sim: a copy of the simulated orders table (exported from an identical
// simulator, as `invoke --serve --sim` runs one) seeded at an LSN, with progress on stderr
// and the offset on stdout; a second run finds the seed and writes nothing.
func TestSeedCommandSim(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ds, err := setupDemoSource(demoOptions{Rows: simRows, Seed: 1}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	max, err := ds.db.MaxLSN(ctx)
	if err != nil {
		t.Fatal(err)
	}
	copyDir := filepath.Join(dir, "copy")
	rows, err := exportCopy(ctx, ds.db, copyDir, []int64{2500, 5000, 7500}, nil)
	ds.db.Close()
	if err != nil || rows != simRows {
		t.Fatalf("export: %d rows, %v", rows, err)
	}
	spec := `{"app_id":"cli-seed","bootstrap":true,"source":{"dsn":"sqlserver://r@localhost?database=d","captureInstance":"dbo_orders"},
	"bronze":"` + dir + `/b","checkpoint":"` + dir + `/cp","facts_table":"` + dir + `/f"}`
	path := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"seed", "--spec", path, "--copy", copyDir, "--as-of", max.String(), "--sim"}
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("seed exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	var off lsn.Offset
	if err := json.Unmarshal(stdout.Bytes(), &off); err != nil || off.LSN != max {
		t.Fatalf("offset %s (%v), want %s", stdout.String(), err, max)
	}
	for _, want := range []string{"seed: group 1/1  files 4/4  10000 rows", "MB/s", "seeded 10000 rows of 4 files at " + max.String()} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(ctx, args, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "bronze already holds the seed at "+max.String()+" (10000 rows)") {
		t.Fatalf("rerun exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	stderr.Reset()
	if code := run(ctx, []string{"seed", "--spec", path, "--copy", copyDir}, &stdout, &stderr); code != 2 {
		t.Errorf("no --as-of: exit %d, want 2", code)
	}
	stderr.Reset()
	// A mistaken flag is a usage mistake naming the flag, not "invalid table spec" of a
	// spec that is fine.
	fresh := filepath.Join(dir, "fresh.json") // bronze without the seed, so the copy is opened
	if err := os.WriteFile(fresh, []byte(strings.ReplaceAll(spec, dir+"/", dir+"/fresh-")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"--as-of", "yesterday", `--as-of: "yesterday" is neither an RFC 3339 time`},
		{"--copy", filepath.Join(dir, "nothing-here"), "--copy: no Parquet files (*.parquet) under "},
		// The advice names the flag too, not the request field (copy_format).
		{"--copy-format", "delta", "(no _delta_log): give --copy-format parquet to read its Parquet files"},
	} {
		stderr.Reset()
		bad := []string{"seed", "--spec", fresh, "--copy", copyDir, "--as-of", max.String(), "--sim", tc.flag, tc.value}
		if code := run(ctx, bad, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "invalid table spec") {
			t.Errorf("bad %s: exit %d, stderr:\n%s\nwant exit 2 saying %q", tc.flag, code, stderr.String(), tc.want)
		}
	}
}

// A partial mssqlcdc export (killed before its _SUCCESS) is refused as a seed's copy,
// naming what it is: it was seeded, silently short of the rows it never wrote (7,500 of
// 10,000 here, one file gone with the marker). A finished export seeds as before.
func TestSeedRefusesAPartialExport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spec := writeSpecWith(t, filepath.Join(dir, "b"), filepath.Join(dir, "cp"), filepath.Join(dir, "f"))
	exp := filepath.Join(dir, "export")
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"export", "--spec", spec, "--sim", "--to", exp}, &stdout, &stderr); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr.String())
	}
	stamp := strings.TrimSpace(stdout.String())
	if err := os.Rename(filepath.Join(exp, "_SUCCESS"), filepath.Join(dir, "_SUCCESS")); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(exp, "*.parquet"))
	if len(files) < 2 {
		t.Fatalf("export wrote %d files", len(files))
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	code := run(ctx, []string{"seed", "--spec", spec, "--sim", "--copy", exp, "--as-of", stamp}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--copy: "+exp+" holds a partial mssqlcdc export") {
		t.Fatalf("seed of a partial export: exit %d, stderr %q", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "b", "_delta_log")); err == nil {
		t.Error("the refused seed committed to bronze")
	}
}
