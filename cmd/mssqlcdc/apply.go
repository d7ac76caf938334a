package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
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

// runApply is `mssqlcdc apply --spec FILE [--silver URL]`: silver.Apply on the spec's
// bronze (read only) and the silver table (--silver, else the spec's silver.table), until
// silver has caught up or --max-seconds passed (left out: the spec's silver.max_seconds;
// 0: no bound, as for stream and backfill). Keys, memory and copy-on-write default to
// the spec's silver section. It prints the result as JSON; an apply that ran out of time
// exits 0 with caught_up false (run it again to go on).
func runApply(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("apply", stderr)
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md)")
	silverURL := fs.String("silver", "", "the silver Delta table (local path or s3:// URL), created by the first apply (default: the spec's silver.table)")
	keys := fs.String("keys", "", "silver's key columns, comma-separated (default: the spec's silver.keys, else options.snapshotKeys, else the keys silver recorded)")
	maxSeconds := fs.Float64("max-seconds", 0, "stop starting key ranges after this many seconds (default: the spec's silver.max_seconds; 0: no bound)")
	memoryMB := fs.Int64("memory-mb", 0, "MiB of bronze rows one key range may hold (0: the spec's silver.memory_mb, else 256)")
	cow := fs.Bool("copy-on-write", false, "rewrite files instead of writing deletion vectors (default: the spec's silver.copy_on_write)")
	verbose := fs.Bool("v", false, "log each key range")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	const usage = "usage: mssqlcdc apply --spec FILE [--silver URL] [--keys a,b] [--max-seconds S (0 up to 31,622,400)] [--memory-mb N (>= 0)] [--copy-on-write] [-v]"
	if *specPath == "" || fs.NArg() > 0 || *memoryMB < 0 {
		return &usageError{msg: usage}
	}
	if err := secondsFlag("max-seconds", *maxSeconds, "0 = no bound", usage); err != nil {
		return err
	}
	spec, err := connect.SpecFile(*specPath)
	if err != nil {
		return err
	}
	sv := config.Silver{}
	if spec.Silver != nil {
		sv = *spec.Silver
	}
	if *silverURL != "" {
		sv.Table = *silverURL
	}
	if sv.Table == "" {
		return &usageError{msg: "the spec has no silver.table: give --silver URL\n" + usage}
	}
	if flagSet(fs, "max-seconds") {
		sv.MaxSeconds = *maxSeconds // 0: no bound, whatever the spec says
	}
	if *memoryMB > 0 {
		sv.MemoryMB = *memoryMB
	}
	sv.CopyOnWrite = sv.CopyOnWrite || *cow
	spec.Silver = &sv
	// The flags are checked as the spec's fields; the spec validated without them, so a
	// problem is a flag's, named as the flag (flagMistake).
	if err := spec.Validate(); err != nil {
		flags := map[string]string{}
		for field, flag := range map[string]string{"silver.table": "silver", "silver.memory_mb": "memory-mb", "silver.max_seconds": "max-seconds"} {
			if flagSet(fs, flag) {
				flags[field] = "--" + flag
			}
		}
		return flagMistake(err, flags)
	}
	cfg := connect.Location(spec)
	b, err := connect.Table(ctx, spec.Bronze, cfg)
	if err != nil {
		return err // read only: the location's own error says what it is
	}
	s, err := connect.Table(ctx, sv.Table, cfg)
	if err != nil {
		field := "silver.table"
		if *silverURL != "" {
			field = "--silver"
		}
		return unwritable(field, sv.Table, err)
	}
	opts := silver.Options{AppID: spec.AppID, Keys: spec.SilverKeys(), MemoryBytes: sv.MemoryMB << 20, CopyOnWrite: sv.CopyOnWrite}
	if *keys != "" {
		opts.Keys = strings.Split(*keys, ",")
	}
	if sv.MaxSeconds > 0 {
		opts.Deadline = time.Now().Add(time.Duration(sv.MaxSeconds * float64(time.Second)))
	}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	res, err := silver.Apply(ctx, silver.Tables{Bronze: b, Silver: s}, opts)
	var ke *silver.KeyError
	if errors.As(err, &ke) && ke.Column == "" && len(opts.Keys) == 0 {
		// No keys anywhere: the command line can give them too (the spec may have no
		// silver section at all).
		return &silver.KeyError{Reason: ke.Reason + ", or give --keys a,b"}
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	if res.CaughtUp && res.BronzeVersion < 0 && res.SilverVersion < 0 {
		fmt.Fprintf(stderr, "mssqlcdc apply: bronze %s holds no Delta table yet: nothing applied (bootstrap or stream it first, or check the path)\n", spec.Bronze)
	}
	return nil
}
