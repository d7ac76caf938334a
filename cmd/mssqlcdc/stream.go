package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/connect"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
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

func runStream(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("stream", stderr)
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md)")
	availableNow := fs.Bool("available-now", false, "read up to the max_lsn recorded at the start, then stop")
	maxSeconds := fs.Float64("max-seconds", 0, "stop starting batches after this many seconds (0: no bound)")
	sim := fs.Bool("sim", false, "read a simulated database (the demo's orders table and workload) instead of source.dsn")
	verbose := fs.Bool("v", false, "log each batch as JSON on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *specPath == "" || fs.NArg() > 0 || *maxSeconds < 0 {
		return &usageError{msg: "usage: mssqlcdc stream --spec FILE [--available-now] [--max-seconds N] [--sim]"}
	}
	spec, err := connect.SpecFile(*specPath)
	if err != nil {
		return err
	}
	if *maxSeconds > 0 {
		spec.MaxSeconds = *maxSeconds
	}

	var src source.Source
	if *sim {
		ds, err := setupDemoSource(demoOptions{Rows: 10_000, Seed: 1}, stdout)
		if err != nil {
			return err
		}
		if err := ds.gen.Step(500); err != nil {
			return err
		}
		src = ds.db
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
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if *verbose {
		logger = slog.New(slog.NewJSONHandler(stderr, nil))
	}
	opts := stream.Options{Logger: logger, OnBatch: func(r stream.BatchReport) { printBatch(stdout, r) }}
	return streamLoop(ctx, spec, deps, opts, *availableNow, stdout)
}

// streamLoop runs invocations: once to the target with availableNow, else for ever,
// waiting streamPollInterval whenever it caught up, until ctx ends or max_seconds is spent.
func streamLoop(ctx context.Context, spec *config.Spec, deps stream.Deps, opts stream.Options, availableNow bool, out io.Writer) error {
	began := time.Now()
	for {
		res, err := stream.Run(ctx, spec, deps, opts)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		fmt.Fprintf(out, "invocation: %d batches, %d rows, offset %s, caught up: %v\n", res.Batches, res.Rows, res.Offset, res.CaughtUp)
		if spec.MaxSeconds > 0 && time.Since(began).Seconds() >= spec.MaxSeconds {
			return nil
		}
		if res.CaughtUp {
			if availableNow {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(streamPollInterval):
			}
		}
	}
}
