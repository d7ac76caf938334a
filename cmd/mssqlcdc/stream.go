package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func init() {
	register(command{
		name:    "stream",
		summary: "run the stream for a table spec: CDC batches into bronze with facts, as the Lambda does",
		run:     runStream,
	})
}

// streamPollInterval is how long the continuous stream waits after catching up.
const streamPollInterval = 5 * time.Second

// simStreamStep is the workload transactions --sim commits before each poll of the
// continuous stream (5 s at 20 transactions per second).
const simStreamStep = 100

func runStream(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("stream", stderr)
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md)")
	availableNow := fs.Bool("available-now", false, "read up to the max_lsn recorded at the start, then stop")
	maxSeconds := fs.Float64("max-seconds", 0, "stop starting batches after this many seconds (default: the spec's max_seconds; 0: no bound)")
	sim := fs.Bool("sim", false, fmt.Sprintf("read a simulated database instead of source.dsn: the demo's orders table with %d rows and %d workload transactions; "+
		"without --available-now the workload writes %d more before each poll (every %s)", simRows, simStreamStart, simStreamStep, streamPollInterval))
	verbose := fs.Bool("v", false, "log each batch as JSON on stderr")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	const usage = "usage: mssqlcdc stream --spec FILE [--available-now] [--max-seconds S (0 up to 31,622,400)] [--sim] [-v]"
	if *specPath == "" || fs.NArg() > 0 {
		return &usageError{msg: usage}
	}
	// The flag is bounded as the spec's max_seconds is (NaN, Inf and 1e10 would overflow
	// a duration).
	if err := secondsFlag("max-seconds", *maxSeconds, "0 = no bound", usage); err != nil {
		return err
	}
	spec, err := connect.SpecFile(*specPath)
	if err != nil {
		return err
	}
	if flagSet(fs, "max-seconds") {
		spec.MaxSeconds = *maxSeconds // 0: no bound, whatever the spec says
	}

	if err := claimSpecLocations(ctx, spec, *sim); err != nil {
		return err
	}
	lo := loopOptions{availableNow: *availableNow, poll: streamPollInterval}
	var src source.Source
	if *sim {
		ds, err := simStreamSource(stdout)
		if err != nil {
			return err
		}
		src = ds.db
		lo.beforePoll = func() error { return ds.gen.Step(simStreamStep) }
	} else {
		db, err := connect.SQLServer(ctx, spec, os.Getenv, nil)
		if err != nil {
			return err
		}
		src = db
	}
	defer src.Close()
	deps, err := connect.StreamDeps(ctx, spec, src)
	if err != nil {
		return err
	}
	lo.recover = func(ctx context.Context) (stream.RecoverCommitResult, error) {
		sd, err := connect.SnapshotDeps(ctx, spec, src)
		if err != nil {
			return stream.RecoverCommitResult{}, err
		}
		return stream.Recover(ctx, sd)
	}
	opts := quietStreamOptions(stdout)
	if *verbose {
		opts.Logger = slog.New(slog.NewJSONHandler(stderr, nil))
	}
	return streamLoop(ctx, spec, deps, opts, lo, stdout)
}

// simStreamStart is the workload transactions --sim commits before the stream starts.
const simStreamStart = 500

// simStreamSource is the simulated database stream --sim reads: the demo's table
// (simOptions) and simStreamStart workload transactions. backfill --sim and reconcile --sim
// build the same, so they find the history a stream --sim --available-now run read (the S
// it opened, the changes it streamed).
func simStreamSource(out io.Writer) (*demoSource, error) {
	ds, err := setupDemoSource(simOptions(), out)
	if err != nil {
		return nil, err
	}
	if err := ds.gen.Step(simStreamStart); err != nil {
		return nil, err
	}
	return ds, nil
}

// quietStreamOptions print each batch on out and log nothing.
func quietStreamOptions(out io.Writer) stream.Options {
	return stream.Options{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), OnBatch: func(r stream.BatchReport) { printBatch(out, r) }}
}

// loopOptions shape streamLoop.
type loopOptions struct {
	// availableNow stops once caught up; otherwise the loop polls until ctx ends.
	availableNow bool
	// poll is the wait after an invocation that caught up.
	poll time.Duration
	// beforePoll, when set, runs before each poll (--sim: the workload writes).
	beforePoll func() error
	// wait, when set, replaces the poll wait: it returns when d has passed or ctx is
	// done (tests count polls with it instead of the clock).
	wait func(ctx context.Context, d time.Duration)
	// recover takes the full re-snapshot an invocation asked for
	// (stream.OutcomeResnapshotRequired), or the switch snapshot
	// (stream.OutcomeSwitchSnapshotRequired), in-process, as the recover state machine
	// does on AWS; nil makes those outcomes errors.
	recover func(ctx context.Context) (stream.RecoverCommitResult, error)
}

// waitPoll waits lo.poll or until ctx is done.
func (lo loopOptions) waitPoll(ctx context.Context) {
	if lo.wait != nil {
		lo.wait(ctx, lo.poll)
		return
	}
	waitCtx(ctx, lo.poll)
}

// waitCtx waits d or until ctx is done.
func waitCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// streamLoop runs invocations: until caught up with availableNow, else for ever, waiting
// lo.poll whenever it caught up, until ctx ends (its error is returned: the stop was
// early) or max_seconds is spent. Each batch is recorded (recordDone) for the interrupted line. An invocation
// line is printed unless it found nothing new after an idle one, and "caught up" once:
// idle polls print nothing.
func streamLoop(ctx context.Context, spec *config.Spec, deps stream.Deps, opts stream.Options, lo loopOptions, out io.Writer) error {
	began := time.Now()
	idle, announced := false, false
	onBatch := opts.OnBatch
	opts.OnBatch = func(r stream.BatchReport) {
		recordDone(ctx, "batch %d (offset %s)", r.Batch, r.End.LSN)
		if onBatch != nil {
			onBatch(r)
		}
	}
	for {
		res, err := stream.Run(ctx, spec, deps, opts)
		if err != nil {
			return err // an interruption included: run says it in one line
		}
		if res.Outcome == stream.OutcomeResnapshotRequired {
			if err := recoverInProcess(ctx, res, lo, out); err != nil {
				return err
			}
			idle = false
			continue
		}
		if res.Outcome == stream.OutcomeSwitchSnapshotRequired {
			if err := switchSnapshotInProcess(ctx, res, lo, out); err != nil {
				return err
			}
			idle = false
			continue
		}
		quiet := idle && res.Batches == 0 && res.CaughtUp
		if !quiet {
			fmt.Fprintf(out, "invocation: %d batches, %d rows, offset %s, caught up: %v\n", res.Batches, res.Rows, res.Offset, res.CaughtUp)
		}
		if spec.MaxSeconds > 0 && time.Since(began).Seconds() >= spec.MaxSeconds {
			return nil
		}
		if !res.CaughtUp {
			idle = false
			continue
		}
		if lo.availableNow {
			return nil
		}
		if !announced {
			fmt.Fprintf(out, "caught up; polling every %s for new changes (Ctrl-C stops)\n", lo.poll)
			announced = true
		}
		idle = true
		lo.waitPoll(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if lo.beforePoll != nil {
			if err := lo.beforePoll(); err != nil {
				return fmt.Errorf("workload: %w", err)
			}
		}
	}
}

// recoverInProcess takes the full re-snapshot res asks for (docs/stream.md "Data loss"),
// printing the lost window and the generation it opens.
func recoverInProcess(ctx context.Context, res stream.Result, lo loopOptions, out io.Writer) error {
	rc := res.Recovery
	if lo.recover == nil || rc == nil {
		return fmt.Errorf("the stream needs a full re-snapshot (generation %d) and nothing here takes it", res.Generation+1)
	}
	fmt.Fprintf(out, "data loss: changes after %s were purged by CDC cleanup before the stream read them (lost window %s .. %s); "+
		"opening generation %d with a full re-snapshot (attempt %d)\n", rc.From.LSN, timeText(rc.LostFromTS), timeText(rc.LostToTS), rc.Generation, rc.Attempt)
	cr, err := lo.recover(ctx)
	if err != nil {
		return fmt.Errorf("re-snapshot of generation %d: %w", rc.Generation, err)
	}
	rows := "rows unknown (reused)"
	if cr.Rows != nil {
		rows = fmt.Sprintf("%d rows", *cr.Rows)
	}
	fmt.Fprintf(out, "generation %d opened: snapshot at %s (%s); the stream goes on from there\n", cr.Generation, cr.Snapshot.LSN, rows)
	return nil
}

// switchSnapshotInProcess takes the whole snapshot snapshot_on_switch asks for after res's
// switch to a newer capture instance (docs/stream.md "Schema changes") through the same
// steps as the recover state machine.
func switchSnapshotInProcess(ctx context.Context, res stream.Result, lo loopOptions, out io.Writer) error {
	sw := res.Switch
	if lo.recover == nil || sw == nil {
		return fmt.Errorf("snapshot_on_switch: the stream asks for a whole snapshot after its switch to a newer capture instance and nothing here takes it")
	}
	fmt.Fprintf(out, "snapshot_on_switch: switched %s -> %s at %s; appending a whole snapshot with the new instance's columns\n", sw.From, sw.To, sw.S)
	cr, err := lo.recover(ctx)
	if err != nil {
		return fmt.Errorf("snapshot after the switch to %s: %w", sw.To, err)
	}
	rows := "rows unknown (committed before)"
	if cr.Rows != nil {
		rows = fmt.Sprintf("%d rows", *cr.Rows)
	}
	fmt.Fprintf(out, "switch snapshot committed at %s (%s)\n", cr.Snapshot.LSN, rows)
	return nil
}

// timeText is t in the facts' form, "unknown" for nil.
func timeText(t *time.Time) string {
	if t == nil {
		return "unknown"
	}
	return lsn.FormatTime(*t)
}
