package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func init() {
	register(command{
		name:    "bootstrap",
		summary: "run the bootstrap machine's steps in-process (open, plan, read, commit, close), then the stream until caught up (--no-stream: the snapshot alone); with snapshot \"chunked\", the stream and the backfill together until done",
		run:     runBootstrap,
	})
}

func runBootstrap(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bootstrap", stderr)
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md), with bootstrap: true")
	noStream := fs.Bool("no-stream", false, "stop after the snapshot; do not run the stream")
	sim := fs.Bool("sim", false, "read a simulated database (the demo's orders table) instead of source.dsn")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *specPath == "" || fs.NArg() > 0 {
		return &usageError{msg: "usage: mssqlcdc bootstrap --spec FILE [--no-stream] [--sim]"}
	}
	spec, deps, err := openSnapshot(ctx, *specPath, *sim, true, stderr)
	if err != nil {
		return err
	}
	defer deps.Source.Close()
	if !spec.Bootstrap {
		return &config.ConfigError{Problems: []config.Problem{{Field: "bootstrap", Reason: "mssqlcdc bootstrap needs bootstrap: true in the spec (the stream then starts at the snapshot); use mssqlcdc snapshot for a snapshot alone"}}}
	}
	if spec.Snapshot == config.SnapshotChunked {
		if *noStream {
			return &usageError{msg: "mssqlcdc bootstrap: --no-stream does not apply to snapshot \"chunked\": the stream opens the snapshot and runs beside the backfill"}
		}
		return chunkedBootstrap(ctx, spec, deps, stdout, waitCtx)
	}
	prog := newSnapshotProgress(ctx, stderr)
	deps.Options.Progress = prog.report
	off, err := snapshot.Run(ctx, deps)
	if err != nil {
		return err
	}
	recordDone(ctx, "the snapshot at %s", off.LSN)
	if sum := prog.summary(); sum != "" {
		fmt.Fprintf(stderr, "snapshot read: %s, committed\n", sum)
	}
	fmt.Fprint(stdout, "snapshot: ")
	printOffset(stdout, off)
	if *noStream {
		return nil
	}
	sdeps, err := connect.StreamDeps(ctx, spec, deps.Source)
	if err != nil {
		return err
	}
	return streamLoop(ctx, spec, sdeps, quietStreamOptions(stdout), loopOptions{availableNow: true}, stdout)
}

// setupBootstrapDemoSource makes the demo's simulated database for a bootstrap: o.Rows
// rows loaded into dbo.orders before CDC is enabled, so only a snapshot holds them.
func setupBootstrapDemoSource(o demoOptions, out io.Writer) (*demoSource, error) {
	db := cdcsim.New(cdcsim.Config{Seed: o.Seed, Start: time.Now().UTC(), IdleEvery: 5 * time.Minute})
	gen := workload.New(db, workload.Config{Seed: o.Seed, TxnSize: 6, Rate: demoRate, Tables: []string{"orders"}})
	def := workload.Orders()
	if err := db.CreateTable(def.Spec); err != nil {
		return nil, err
	}
	if err := gen.Adopt(def); err != nil {
		return nil, err
	}
	if o.Rows > 0 {
		if err := loadWithProgress(gen, o.Rows, out); err != nil {
			return nil, err
		}
	}
	db.Advance(time.Second)
	if _, err := db.EnableCapture(def.Spec.Name, cdcsim.CaptureOptions{}); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "source: %s rows in dbo.orders, then CDC enabled (capture instance dbo_orders): only a snapshot (or a copy) holds those rows\n", config.Grouped(int64(o.Rows)))
	return &demoSource{db: db, gen: gen}, nil
}

// demoSnapshot runs the bootstrap's snapshot steps in-process while the workload writes,
// and returns the snapshot's LSN: the stream starts after it.
func demoSnapshot(ctx context.Context, spec *config.Spec, ds *demoSource, out io.Writer) (lsn.LSN, error) {
	deps, err := connect.SnapshotDeps(ctx, spec, ds.db)
	if err != nil {
		return lsn.Zero, err
	}
	prog := newSnapshotProgress(ctx, out)
	deps.Options.Progress = prog.report
	off, err := snapshot.Run(ctx, deps)
	if err != nil {
		return lsn.Zero, fmt.Errorf("snapshot: %w", err)
	}
	recordDone(ctx, "the snapshot at %s", off.LSN)
	fmt.Fprintf(out, "snapshot: dbo.orders at %s: %s, one Delta commit\n", off, prog.summary())
	return off.LSN, nil
}

// loadWithProgress loads n rows into the simulated dbo.orders in transactions of 1,000,
// saying how far it is at each quarter of a large load.
func loadWithProgress(gen *workload.Generator, n int, out io.Writer) error {
	step := n
	if n >= 20_000 {
		step = (n + 3) / 4
	}
	for done := 0; done < n; {
		k := min(step, n-done)
		if err := gen.Load("orders", k, 1000); err != nil {
			return err
		}
		done += k
		if done < n {
			fmt.Fprintf(out, "source: loaded %s of %s rows into dbo.orders\n", config.Grouped(int64(done)), config.Grouped(int64(n)))
		}
	}
	return nil
}

// chunkedWait is how long chunkedBootstrap waits after a backfill call that paused
// (waiting_headroom, waiting_metrics) before the stream runs and the backfill is called
// again.
const chunkedWait = 30 * time.Second

// chunkedBootstrap runs a chunked snapshot's stream and backfill together, in turn, until
// the backfill is done and the stream has caught up (docs/snapshots.md "Chunked
// snapshots"): the stream's first run opens the snapshot at S; then one wave per backfill
// call, the stream catching up after each, so it keeps running beside the waves. A paused
// backfill (min_headroom_hours) waits chunkedWait (wait: until then or ctx is done, so
// Ctrl-C stops it at once) with the stream running.
func chunkedBootstrap(ctx context.Context, spec *config.Spec, deps snapshot.Deps, out io.Writer, wait func(context.Context, time.Duration)) error {
	sdeps, err := connect.StreamDeps(ctx, spec, deps.Source)
	if err != nil {
		return err
	}
	catchUp := func() error {
		return streamLoop(ctx, spec, sdeps, quietStreamOptions(out), loopOptions{availableNow: true}, out)
	}
	if err := catchUp(); err != nil {
		return err
	}
	p := snapshot.ParamsOf(spec)
	p.MaxWaves = 1
	for ctx.Err() == nil {
		st, err := backfillCall(ctx, deps, p, out)
		if err != nil {
			return err
		}
		switch st.State {
		case snapshot.StateNoSnapshot:
			return fmt.Errorf("backfill: %s", st.Reason)
		case snapshot.StateWaitingHeadroom, snapshot.StateWaitingMetrics:
			wait(ctx, chunkedWait)
		}
		if err := catchUp(); err != nil {
			return err
		}
		if st.State == snapshot.StateDone {
			fmt.Fprintf(out, "chunked snapshot %s: all %d chunks in bronze; the stream has caught up\n", st.Snapshot, st.ChunksTotal)
			return nil
		}
	}
	return ctx.Err()
}
