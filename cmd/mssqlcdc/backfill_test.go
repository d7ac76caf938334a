package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func writeChunkedSimSpec(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	spec := fmt.Sprintf(`{"app_id":"orders-v1","bootstrap":true,"snapshot":"chunked","chunk_rows":1500,"min_headroom_hours":0,"target_wave_seconds":0,
		"source":{"dsn":"sqlserver://sim@cdcsim?database=demo","captureInstance":"dbo_orders"},
		"bronze":%q,"checkpoint":%q,"facts_table":%q,"options":{"numPartitions":2}}`,
		filepath.Join(dir, "bronze"), filepath.Join(dir, "cp"), filepath.Join(dir, "facts"))
	p := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// mssqlcdc bootstrap with snapshot "chunked" runs the stream (which opens the snapshot at
// S) and the backfill together until done, printing a progress line per wave: chunks
// done/total, rows, MB/s and the ETA.
func TestBootstrapChunkedRunsStreamAndBackfill(t *testing.T) {
	spec := writeChunkedSimSpec(t)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"bootstrap", "--spec", spec, "--sim"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	o := out.String()
	waves := regexp.MustCompile(`(?m)^wave +\d+  chunks \d+-\d+  (\d+)/(\d+) done +(\d+) rows +[0-9.]+ MB/s  stamp 0x[0-9A-F]{20}  ETA \S+$`).FindAllStringSubmatch(o, -1)
	if len(waves) < 2 {
		t.Fatalf("want a progress line per wave (10,000 rows in chunks of 1,500, two per wave):\n%s", o)
	}
	last := waves[len(waves)-1]
	if last[1] != last[2] {
		t.Errorf("the last wave leaves chunks undone: %s", last[0])
	}
	for _, want := range []string{"backfill: done (", "chunked snapshot 0x", "caught up: true"} {
		if !strings.Contains(o, want) {
			t.Errorf("output lacks %q:\n%s", want, o)
		}
	}
	if code := run(context.Background(), []string{"bootstrap", "--spec", spec, "--sim", "--no-stream"}, &out, &errOut); code == 0 {
		t.Error("--no-stream with snapshot chunked was accepted")
	}
}

// mssqlcdc backfill refuses a spec whose snapshot mode is not chunked, by name, before it
// opens anything.
func TestBackfillRefusesFullSpec(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"backfill", "--spec", writeSimSpec(t)}, &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), `snapshot "chunked"`) {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if code := run(context.Background(), []string{"backfill"}, &out, &errOut); code == 0 {
		t.Fatal("backfill without --spec was accepted")
	}
}

// A negative --max-waves or --max-seconds is a usage error (it was taken silently as "the
// spec's value"), as is a --max-seconds past the spec's 366-day bound (1e12 once reached
// the call and overflowed its deadline), saying which flag and the range; -h shows no
// "(default -1)" beside "default: the spec's".
func TestBackfillFlagsRefuseNegatives(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"--max-waves", "-2"}, "usage: mssqlcdc backfill"},
		{[]string{"--max-seconds", "-5"}, "--max-seconds -5: want seconds from 0 up to 366 days (31,622,400 s); 0 = no bound"},
		{[]string{"--max-seconds", "1e12"}, "--max-seconds 1000000000000: want seconds from 0 up to 366 days (31,622,400 s); 0 = no bound"},
		{[]string{"--max-seconds", "NaN"}, "--max-seconds NaN: want seconds"},
	} {
		errOut.Reset()
		if code := run(context.Background(), append([]string{"backfill", "--spec", "x.json"}, c.args...), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.say) {
			t.Errorf("%v: exit %d (%s), want 2 saying %q", c.args, code, errOut.String(), c.say)
		}
	}
	help, _, _ := runCLI(t, "backfill", "-h")
	if strings.Contains(help, "(default -1)") {
		t.Errorf("backfill -h shows a default of -1:\n%s", help)
	}
}

// The demo's chunked bootstrap passes its own check: the plan, the plans table, the facts
// and bronze's snapshot rows agree, no key read twice, no stamp below S, and the rebuild
// and silver equal the table.
func TestDemoChunked(t *testing.T) {
	lake := filepath.Join(t.TempDir(), "lake")
	var out bytes.Buffer
	code := run(context.Background(), []string{"demo", "--bootstrap", "chunked", "--lake", lake, "--rows", "2400", "--seconds", "0.5", "--seed", "3"}, &out, &out)
	if code != 0 || !strings.Contains(out.String(), "OK: every change") {
		t.Fatalf("demo exit %d:\n%s", code, out.String())
	}
	m := regexp.MustCompile(`(?m)^chunked: +snapshot 0x[0-9A-F]{20}, (\d+) chunks in the plan, (\d+) in the plans table, (\d+) snapshot_chunk facts rows, (\d+) snapshot rows in bronze \((\d+) per the facts\), 0 keys read twice, 0 stamps below S$`).FindStringSubmatch(out.String())
	if m == nil || m[1] != m[2] || m[1] != m[3] || m[4] != m[5] || m[1] == "0" {
		t.Fatalf("chunked line: %q\n%s", m, out.String())
	}
	// Silver, applied wave by wave beside the stream, equals the table (docs/silver.md §
	// Chunk waves).
	if !regexp.MustCompile(`(?m)^silver: .*\(\d+ rows, \d+ files, \d+ with a deletion vector\): identical$`).MatchString(out.String()) ||
		!strings.Contains(out.String(), "silver, applied wave by wave, equals it") {
		t.Errorf("the demo kept no silver equal to the table:\n%s", out.String())
	}
	if !strings.Contains(out.String(), filepath.Join(lake, "bronze", "orders_snapshot_plans")) {
		t.Errorf("the tables line does not name the plans table:\n%s", out.String())
	}
	if code := run(context.Background(), []string{"demo", "--bootstrap", "half", "--lake", lake}, &out, &out); code != 2 && code != 1 {
		t.Errorf("--bootstrap half: exit %d", code)
	}
}

// The chunked bootstrap's wait after a paused backfill (waiting_headroom: a fresh capture
// instance under the default min_headroom_hours) ends with the context, so Ctrl-C stops
// it at once, not after the 30 s time.Sleep it was. waitCtx with a cancelled context and
// an hour to wait returns (a wait that ignored the context would hang the test).
func TestChunkedWaitEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	waitCtx(ctx, time.Hour)
	var got context.Context
	spec := writeChunkedSimSpec(t)
	doc, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, bytes.Replace(doc, []byte(`"min_headroom_hours":0`), []byte(`"min_headroom_hours":24`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	s, deps, err := openSnapshot(context.Background(), spec, true, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer deps.Source.Close()
	run, stop := context.WithCancel(context.Background())
	err = chunkedBootstrap(run, s, deps, io.Discard, func(ctx context.Context, d time.Duration) {
		got = ctx
		stop() // Ctrl-C during the wait
	})
	if got != run || !errors.Is(err, context.Canceled) {
		t.Errorf("wait got ctx %v (want the run's), chunkedBootstrap = %v; want the wait to get the run's context and the run to end canceled", got, err)
	}
}

// `mssqlcdc backfill --sim` reads the simulated database stream --sim reads: the chunked
// snapshot a stream --sim --available-now run opened (after the stream's 500 workload
// transactions) is read wave by wave, one call per wave, until done, and a later call says
// done without reading. (A database without those transactions would not hold S: the
// backfill would stop with LSNRewoundError.)
func TestBackfillSim(t *testing.T) {
	spec := writeChunkedSimSpec(t)
	if out, errOut, code := runCLI(t, "stream", "--spec", spec, "--sim", "--available-now"); code != 0 {
		t.Fatalf("stream --sim: exit %d: %s\n%s", code, errOut, out)
	}
	var st struct {
		State       string `json:"state"`
		ChunksDone  int    `json:"chunks_done"`
		ChunksTotal int    `json:"chunks_total"`
	}
	calls := 0
	for ; calls < 20 && st.State != "done"; calls++ {
		out, errOut, code := runCLI(t, "backfill", "--spec", spec, "--sim", "--max-waves", "1")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || json.Unmarshal([]byte(lines[len(lines)-1]), &st) != nil {
			t.Fatalf("backfill --sim call %d: exit %d: %s\n%s", calls+1, code, errOut, out)
		}
	}
	// 10,000 rows and the stream's inserts in chunks of 1,500, two a wave: at least 4
	// waves, and a last call that finds the snapshot done.
	if st.State != "done" || st.ChunksDone != st.ChunksTotal || st.ChunksTotal < 7 || calls < 4 {
		t.Fatalf("after %d calls: %+v, want done with every chunk", calls, st)
	}
	out, _, code := runCLI(t, "backfill", "--spec", spec, "--sim")
	if code != 0 || !strings.Contains(out, "backfill: done (") || strings.Contains(out, "wave ") {
		t.Fatalf("a call after done: exit %d:\n%s", code, out)
	}
}
