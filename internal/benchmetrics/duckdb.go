package benchmetrics

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// DuckDB is a DuckDB process holding one table in memory, loaded from a Parquet file, that
// writes it again as Parquet on demand: the peer of our Parquet writer in the writer
// benchmarks (docs/performance.md § The writer against DuckDB). It runs duckdbcopy.mjs in
// a node child process with the @duckdb/node-api the repository's package.json pins
// (installed in node_modules by scripts/test.sh), so a benchmark can alternate its own
// writes with DuckDB's under the same machine load.
type DuckDB struct {
	tb    testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// DuckDBCopy is what one COPY measured.
type DuckDBCopy struct {
	// CPU is the user + system time of the COPY alone, every thread of DuckDB's process;
	// Wall its wall-clock time.
	CPU, Wall time.Duration
	// Bytes is the size of the Parquet file written; Threads DuckDB's thread count.
	Bytes   int64
	Threads int
}

// StartDuckDB starts DuckDB with the Parquet file in loaded into an in-memory table, with
// threads threads (0: DuckDB's default, one per core). Without node or the package the
// benchmark is skipped, and fails when CI is set. Close stops it.
func StartDuckDB(tb testing.TB, in string, threads int) *DuckDB {
	tb.Helper()
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Dir(self)
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "..", "..", "node_modules", "@duckdb", "node-api"))
	}
	if err != nil {
		msg := fmt.Sprintf("DuckDB peer unavailable (%v): run `npm ci` in the repository root", err)
		if os.Getenv("CI") != "" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	args := []string{filepath.Join(dir, "duckdbcopy.mjs"), in}
	if threads > 0 {
		args = append(args, strconv.Itoa(threads))
	}
	d := &DuckDB{tb: tb, cmd: exec.Command(node, args...)}
	d.cmd.Stderr = os.Stderr
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		tb.Fatalf("start duckdb: %v", err)
	}
	tb.Cleanup(d.Close)
	d.out = bufio.NewScanner(stdout)
	if !d.out.Scan() || d.out.Text() != "ready" {
		tb.Fatalf("duckdb did not load %s: %q %v", in, d.out.Text(), d.out.Err())
	}
	return d
}

// Copy writes the table to the Parquet file out with COPY ... TO (FORMAT parquet) and
// returns what it measured.
func (d *DuckDB) Copy(out string) DuckDBCopy {
	d.tb.Helper()
	if _, err := fmt.Fprintf(d.stdin, "copy %s\n", out); err != nil {
		d.tb.Fatalf("duckdb copy: %v", err)
	}
	if !d.out.Scan() {
		d.tb.Fatalf("duckdb copy: no answer (%v)", d.out.Err())
	}
	var r struct {
		CopyCPU  float64 `json:"copy_cpu_s"`
		CopyWall float64 `json:"copy_wall_s"`
		Bytes    int64   `json:"bytes"`
		Threads  int     `json:"threads"`
	}
	if err := json.Unmarshal(d.out.Bytes(), &r); err != nil {
		d.tb.Fatalf("duckdb copy output %q: %v", d.out.Text(), err)
	}
	return DuckDBCopy{CPU: time.Duration(r.CopyCPU * float64(time.Second)), Wall: time.Duration(r.CopyWall * float64(time.Second)),
		Bytes: r.Bytes, Threads: r.Threads}
}

// Close ends the DuckDB process (it exits at the end of its input).
func (d *DuckDB) Close() {
	if d.stdin != nil {
		d.stdin.Close()
		d.stdin = nil
		_ = d.cmd.Wait()
	}
}
