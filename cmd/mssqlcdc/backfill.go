package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func init() {
	register(command{
		name:    "backfill",
		summary: "one backfill call of a chunked snapshot: plan on the first call, then read waves of chunks beside the stream, printing progress per wave",
		run:     runBackfill,
	})
}

const backfillUsage = "usage: mssqlcdc backfill --spec FILE [--max-waves N (>= 0)] [--max-seconds S (0 up to 31,622,400)] [--sim]"

// runBackfill is one backfill call (docs/snapshots.md "Chunked snapshots"), as the backfill
// machine's backfill-wave Task makes it: the spec's chunked parameters, max_waves and
// max_seconds overridden by the flags. It prints a line per wave and the BackfillStatus as
// JSON at the end; a waiting_* or no_snapshot state exits 0 with its reason printed, so a
// scheduler loops as the seed's example does. With --sim it reads the simulated database
// stream --sim reads (simStreamSource), where a stream --sim --available-now run opened
// the snapshot.
func runBackfill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("backfill", stderr)
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md), with snapshot: \"chunked\"")
	maxWaves := fs.Int("max-waves", 0, "waves this call reads at most (default: the spec's max_waves; 0: no bound)")
	maxSeconds := fs.Float64("max-seconds", 0, "this call's time budget in seconds (default: the spec's max_seconds; 0: no bound)")
	sim := fs.Bool("sim", false, fmt.Sprintf("read a simulated database instead of source.dsn: the one stream --sim reads (the demo's orders table with %d rows and %d workload transactions)", simRows, simStreamStart))
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *specPath == "" || fs.NArg() > 0 || *maxWaves < 0 {
		return &usageError{msg: backfillUsage}
	}
	// The spec's bound for max_seconds (a NaN, an infinity or 1e12 would overflow the
	// call's deadline).
	if err := secondsFlag("max-seconds", *maxSeconds, "0 = no bound", backfillUsage); err != nil {
		return err
	}
	// The mode first: a spec for a full snapshot is refused before anything is opened.
	if spec, err := connect.SpecFile(*specPath); err != nil {
		return err
	} else if spec.Snapshot != config.SnapshotChunked {
		return &config.ConfigError{Problems: []config.Problem{{Field: "snapshot", Reason: "mssqlcdc backfill reads a chunked snapshot: set snapshot \"chunked\" " +
			"(with bootstrap true; the stream's first run opens it)"}}}
	}
	spec, deps, err := openSnapshotAs(ctx, *specPath, simSetup(*sim, simStreamSource), true, stderr)
	if err != nil {
		return err
	}
	defer deps.Source.Close()
	p := snapshot.ParamsOf(spec)
	if flagSet(fs, "max-waves") {
		p.MaxWaves = *maxWaves
	}
	if flagSet(fs, "max-seconds") {
		p.MaxSeconds = *maxSeconds
	}
	st, err := backfillCall(ctx, deps, p, stdout)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(st)
	fmt.Fprintln(stdout, string(b))
	return nil
}

// backfillCall runs one backfill call with a progress line per wave: chunks done/total,
// rows, MB/s and the ETA at this call's pace.
func backfillCall(ctx context.Context, deps snapshot.Deps, p snapshot.BackfillParams, out io.Writer) (snapshot.BackfillStatus, error) {
	began := time.Now()
	first := -1
	deps.Options.OnWave = func(r snapshot.WaveReport) {
		if first < 0 {
			first = r.ChunksDone - (r.LastChunk - r.FirstChunk + 1)
		}
		fmt.Fprintln(out, waveLine(r, time.Since(began), r.ChunksDone-first))
	}
	st, err := snapshot.Backfill(ctx, deps, p)
	if err != nil {
		return st, err
	}
	fmt.Fprintf(out, "backfill: %s (%d/%d chunks): %s\n", st.State, st.ChunksDone, st.ChunksTotal, st.Reason)
	return st, nil
}

// waveLine is one wave's progress line; elapsed and chunks are this call's time and the
// chunks it read so far, the pace the ETA assumes.
func waveLine(r snapshot.WaveReport, elapsed time.Duration, chunks int) string {
	mbps := 0.0
	if s := r.Duration.Seconds(); s > 0 {
		mbps = r.MB / s
	}
	eta := "-"
	if left := r.ChunksTotal - r.ChunksDone; left == 0 {
		eta = "0s"
	} else if chunks > 0 {
		eta = (time.Duration(float64(elapsed) / float64(chunks) * float64(left))).Round(time.Second).String()
	}
	extra := ""
	if r.Replayed {
		extra = " (already in bronze: recorded, not read again)"
	}
	return fmt.Sprintf("wave %4d  chunks %d-%d  %d/%d done  %8d rows  %6.1f MB/s  stamp %s  ETA %s%s",
		r.Wave, r.FirstChunk, r.LastChunk, r.ChunksDone, r.ChunksTotal, r.Rows, mbps, r.Stamp, eta, extra)
}
