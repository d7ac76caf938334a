package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func init() {
	register(command{
		name:    "apply",
		summary: "apply the spec's bronze table to a silver Delta table (the current table, docs/silver.md)",
		run:     runApply,
	})
}

// runApply is `mssqlcdc apply --spec FILE --silver URL`: silver.Apply on the spec's bronze
// (read only) and the silver table, until silver has caught up or --max-seconds passed.
// It prints the result as JSON; an apply that ran out of time exits 0 with caught_up false
// (run it again to go on).
func runApply(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("apply", stderr)
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md)")
	silverURL := fs.String("silver", "", "the silver Delta table (local path or s3:// URL); created by the first apply")
	keys := fs.String("keys", "", "silver's key columns, comma-separated (default: the spec's snapshotKeys, else the keys silver recorded)")
	maxSeconds := fs.Float64("max-seconds", 0, "stop starting key ranges after this many seconds (0: until caught up)")
	memoryMB := fs.Int64("memory-mb", silver.DefaultMemoryBytes>>20, "MiB of bronze rows one key range may hold")
	cow := fs.Bool("copy-on-write", false, "rewrite files instead of writing deletion vectors")
	verbose := fs.Bool("v", false, "log each key range")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *specPath == "" || *silverURL == "" || fs.NArg() > 0 || *maxSeconds < 0 || *memoryMB < 1 {
		return &usageError{msg: "usage: mssqlcdc apply --spec FILE --silver URL [--keys a,b] [--max-seconds S (>= 0)] [--memory-mb N (>= 1)] [--copy-on-write] [-v]"}
	}
	spec, err := connect.SpecFile(*specPath)
	if err != nil {
		return err
	}
	cfg := connect.Location(spec)
	b, err := connect.Table(ctx, spec.Bronze, cfg)
	if err != nil {
		return err
	}
	s, err := connect.Table(ctx, *silverURL, cfg)
	if err != nil {
		return err
	}
	opts := silver.Options{AppID: spec.AppID, Keys: spec.Options.SnapshotKeys, MemoryBytes: *memoryMB << 20, CopyOnWrite: *cow}
	if *keys != "" {
		opts.Keys = strings.Split(*keys, ",")
	}
	if *maxSeconds > 0 {
		opts.Deadline = time.Now().Add(time.Duration(*maxSeconds * float64(time.Second)))
	}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	res, err := silver.Apply(ctx, silver.Tables{Bronze: b, Silver: s}, opts)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	return nil
}
