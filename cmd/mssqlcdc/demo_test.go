package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// The demo passes on a small run, and the bronze table it writes reads the same through
// `mssqlcdc inspect` (Delta stats) and through an independent Parquet reader
// (parquet-go, not the arrow-go code that wrote it).
func TestDemo(t *testing.T) {
	lake := filepath.Join(t.TempDir(), "lake")
	var out bytes.Buffer
	code := run(context.Background(), []string{"demo", "--lake", lake, "--rows", "3000", "--seconds", "0.5", "--seed", "7"}, &out, &out)
	if code != 0 || !strings.Contains(out.String(), "OK: every change") {
		t.Fatalf("demo exit %d:\n%s", code, out.String())
	}
	bronze := filepath.Join(lake, "bronze", "orders")
	if !strings.Contains(out.String(), "try:       go run ./cmd/mssqlcdc inspect "+bronze+"\n") {
		t.Errorf("the last line does not show how to inspect bronze from the source tree:\n%s", out.String())
	}
	var js bytes.Buffer
	if code := run(context.Background(), []string{"inspect", bronze, "--json"}, &js, &js); code != 0 {
		t.Fatalf("inspect exit %d: %s", code, js.String())
	}
	var rep struct {
		Rows      *int64 `json:"rows"`
		LiveFiles int    `json:"liveFiles"`
	}
	if err := json.Unmarshal(js.Bytes(), &rep); err != nil || rep.Rows == nil {
		t.Fatalf("inspect json: %v %s", err, js.String())
	}
	var parquetRows int64
	files, _ := filepath.Glob(filepath.Join(bronze, "*.parquet"))
	if len(files) != rep.LiveFiles {
		t.Errorf("%d parquet files on disk, inspect lists %d live", len(files), rep.LiveFiles)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			t.Fatalf("parquet-go cannot open %s: %v", name, err)
		}
		parquetRows += pf.NumRows()
		f.Close()
	}
	if parquetRows != *rep.Rows {
		t.Errorf("parquet-go counts %d rows, inspect %d", parquetRows, *rep.Rows)
	}
	if !strings.Contains(out.String(), "change rows in") || !strings.Contains(out.String(), "identical") {
		t.Errorf("summary:\n%s", out.String())
	}
	// A rerun clears the demo's own directory and passes again.
	out.Reset()
	if code := run(context.Background(), []string{"demo", "--lake", lake, "--rows", "100", "--seconds", "0"}, &out, &out); code != 0 {
		t.Fatalf("rerun exit %d:\n%s", code, out.String())
	}
}

func TestDemoRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"demo", "--lake", dir, "--rows", "10", "--seconds", "0"}, &out, &out); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "precious.txt")); err != nil {
		t.Errorf("demo touched a foreign directory: %v", err)
	}
	if got := out.String(); !strings.HasPrefix(got, "mssqlcdc demo: "+dir+" exists and was not made by the demo; choose another --lake") {
		t.Errorf("stderr %q; want one prefix, then the directory and what to do", got)
	}
	// A --lake that is a file says so and what to give, not "mkdir ...: not a directory".
	file := filepath.Join(dir, "precious.txt")
	out.Reset()
	if code := run(context.Background(), []string{"demo", "--lake", file, "--rows", "10", "--seconds", "0"}, &out, &out); code != 1 ||
		!strings.Contains(out.String(), "--lake "+file+" is a file: give a directory") {
		t.Errorf("--lake FILE: exit %d, stderr %q; want exit 1 saying the file is no directory", code, out.String())
	}
}

func TestStreamSim(t *testing.T) {
	dir := t.TempDir()
	spec := `{"app_id":"cli","source":{"dsn":"sqlserver://r@localhost?database=d","captureInstance":"dbo_orders"},
	"options":{"maxCommitsPerBatch":200},"bronze":"` + dir + `/b","checkpoint":"` + dir + `/cp","facts_table":"` + dir + `/f"}`
	path := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := run(context.Background(), []string{"stream", "--spec", path, "--sim", "--available-now"}, &out, &out)
	if code != 0 || !strings.Contains(out.String(), "caught up: true") || !strings.Contains(out.String(), "batch    0") {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"stream", "--spec", filepath.Join(dir, "missing.json")}, &out, &out); code != 1 {
		t.Errorf("missing spec: exit %d", code)
	}
}

// --min-batches keeps the workload going until the stream has committed that many batches,
// however fast or slow the machine: a zero-second run still ends with them.
func TestDemoMinBatches(t *testing.T) {
	lake := filepath.Join(t.TempDir(), "lake")
	var out bytes.Buffer
	code := run(context.Background(), []string{"demo", "--lake", lake, "--rows", "100", "--seconds", "0", "--min-batches", "3", "--seed", "3"}, &out, &out)
	if code != 0 {
		t.Fatalf("demo exit %d:\n%s", code, out.String())
	}
	batches := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "batch ") {
			batches++
		}
	}
	if batches < 3 {
		t.Errorf("%d batches, want at least 3:\n%s", batches, out.String())
	}
	if code := run(context.Background(), []string{"demo", "--lake", lake, "--min-batches", "-1"}, &out, &out); code == 0 {
		t.Error("--min-batches -1 accepted")
	}
}

// issue 14: demo --data-loss purges past the stream's checkpoint part-way through; with
// on_data_loss "resnapshot" the stream opens generation 1 by itself, the demo prints the
// generation and the lost window, and its own check still passes (bronze rebuilt from the
// re-snapshot equals the table, every change after it exactly once, one resnapshot row).
func TestDemoDataLoss(t *testing.T) {
	for _, secs := range []string{"0.5", "0"} {
		lake := filepath.Join(t.TempDir(), "lake")
		var out bytes.Buffer
		code := run(context.Background(), []string{"demo", "--data-loss", "--lake", lake, "--rows", "2000", "--seconds", secs, "--seed", "9"}, &out, &out)
		for _, want := range []string{"OK: every change", "data loss: the stream paused", "lost window ", "opening generation 1",
			"generation 1 opened: snapshot at", "recovery:  generation 1, 1 resnapshot row(s)"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("--seconds %s: output lacks %q", secs, want)
			}
		}
		if code != 0 || t.Failed() {
			t.Fatalf("demo --data-loss --seconds %s exit %d:\n%s", secs, code, out.String())
		}
	}
}

// issue 14: demo --data-loss --bootstrap chunked: the purge comes after the stream's first
// run opened generation 0's chunked snapshot; the stream finds the loss, opens generation 1
// with a chunked re-snapshot at S1 by itself and goes on from S1, the backfill reads
// generation 1's snapshot (generation 0's, if still open, is abandoned), and the demo's own
// check passes: the rebuild from S1 equals the table, the changes after S1 are in bronze
// once each, one resnapshot row, and generation 1's plan, chunk rows, facts and bronze
// rows agree.
func TestDemoDataLossChunked(t *testing.T) {
	for _, secs := range []string{"0.5", "0"} {
		lake := filepath.Join(t.TempDir(), "lake")
		var out bytes.Buffer
		code := run(context.Background(), []string{"demo", "--data-loss", "--bootstrap", "chunked", "--lake", lake, "--rows", "2400", "--seconds", secs, "--seed", "3"}, &out, &out)
		for _, want := range []string{"OK: every change and every chunk", "data loss: the stream paused", "lost window ",
			"generation 1 opened with a chunked re-snapshot at 0x", "recovery:  generation 1, 1 resnapshot row(s)"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("--seconds %s: output lacks %q", secs, want)
			}
		}
		gen1 := regexp.MustCompile(`generation 1 opened with a chunked re-snapshot at (0x[0-9A-F]{20})`).FindStringSubmatch(out.String())
		m := regexp.MustCompile(`(?m)^chunked: +snapshot (0x[0-9A-F]{20}), (\d+) chunks in the plan, (\d+) in the plans table, (\d+) snapshot_chunk facts rows, (\d+) snapshot rows in bronze \((\d+) per the facts\), 0 keys read twice, 0 stamps below S$`).FindStringSubmatch(out.String())
		if gen1 == nil || m == nil || m[1] != gen1[1] || m[2] != m[3] || m[2] != m[4] || m[5] != m[6] || m[2] == "0" {
			t.Errorf("--seconds %s: generation 1 at %q, chunked line %q", secs, gen1, m)
		}
		if code != 0 || t.Failed() {
			t.Fatalf("demo --data-loss --bootstrap chunked --seconds %s exit %d:\n%s", secs, code, out.String())
		}
	}
}

// The demo with --bootstrap seed: a copy exported while the workload runs, bronze seeded
// from it with as_of before the export, then the stream: the demo's own check passes.
func TestDemoBootstrapSeed(t *testing.T) {
	lake := filepath.Join(t.TempDir(), "lake")
	var out bytes.Buffer
	code := run(context.Background(), []string{"demo", "--lake", lake, "--rows", "3000", "--seconds", "1", "--seed", "5", "--bootstrap", "seed"}, &out, &out)
	if code != 0 || !strings.Contains(out.String(), "OK: every change") || !strings.Contains(out.String(), "identical") {
		t.Fatalf("demo exit %d:\n%s", code, out.String())
	}
	for _, want := range []string{"copy:     ", "rows of dbo.orders exported to ", "seed:     ", "one Delta commit; the stream starts after it"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
	if files, _ := filepath.Glob(filepath.Join(lake, "copy", "orders", "*.parquet")); len(files) != demoCopyParts {
		t.Errorf("the export wrote %d files, want %d", len(files), demoCopyParts)
	}
	out.Reset()
	if code := run(context.Background(), []string{"demo", "--lake", lake, "--bootstrap", "copy"}, &out, &out); code != 2 {
		t.Errorf("--bootstrap copy: exit %d, want 2 (usage)", code)
	}
}

// The demo's last line names the program as it was run: `go run ./cmd/mssqlcdc` only for a
// go run (its binary is in a go-build directory), else the binary as invoked; a path with
// a space is quoted so the line can be pasted.
func TestInvokedAs(t *testing.T) {
	for argv0, want := range map[string]string{
		"/tmp/go-build2671/b001/exe/mssqlcdc":      "go run ./cmd/mssqlcdc",
		`C:\Temp\go-build11\b001\exe\mssqlcdc.exe`: "go run ./cmd/mssqlcdc",
		"./mssqlcdc":                   "./mssqlcdc",
		"mssqlcdc":                     "mssqlcdc",
		"/usr/local/bin/mssqlcdc":      "/usr/local/bin/mssqlcdc",
		"/home/me/my tools/mssqlcdc":   "'/home/me/my tools/mssqlcdc'",
		"/home/me/go-builder/mssqlcdc": "/home/me/go-builder/mssqlcdc",
	} {
		if got := invokedAs(argv0); got != want {
			t.Errorf("invokedAs(%q) = %q, want %q", argv0, got, want)
		}
	}
}
