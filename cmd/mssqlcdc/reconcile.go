package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/reconcile"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func init() {
	register(command{
		name:    "reconcile",
		summary: "compare a silver table with the SQL Server table it mirrors; nothing is written to SQL Server",
		run:     runReconcile,
	})
}

func runReconcile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reconcile", stderr)
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md)")
	silverURL := fs.String("silver", "", "the silver Delta table (local path or s3:// URL)")
	reportURL := fs.String("report", "", "a Delta table the report rows are appended to (optional)")
	keys := fs.String("keys", "", "silver's key columns, comma-separated (default: snapshotKeys, else the unique index)")
	bucketRows := fs.Int64("bucket-rows", reconcile.DefaultBucketRows, "rows a tier-1 bucket aims to hold")
	sample := fs.Float64("sample", 0.01, "fraction of matching buckets also compared row by row (0..1)")
	seed := fs.Uint64("seed", 1, "seed of the sample")
	verbose := fs.Bool("v", false, "print every report row, not only the differences")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *specPath == "" || *silverURL == "" || fs.NArg() > 0 || *bucketRows < 1 || !(*sample >= 0 && *sample <= 1) {
		return &usageError{msg: "usage: mssqlcdc reconcile --spec FILE --silver URL [--report URL] [--keys a,b] [--bucket-rows N (>= 1)] [--sample F (0..1)] [--seed K] [-v]"}
	}
	spec, err := connect.SpecFile(*specPath)
	if err != nil {
		return err
	}
	src, err := connect.SQLServer(ctx, spec, os.Getenv, nil)
	if err != nil {
		return err
	}
	defer src.Close()
	cfg := connect.Location(spec)
	open := func(url string) (*deltalog.Table, error) {
		if url == "" {
			return nil, nil
		}
		return connect.Table(ctx, url, cfg)
	}
	job := reconcile.Job{Spec: spec, Source: src, BucketRows: *bucketRows, Sample: *sample, Seed: *seed,
		Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	if *keys != "" {
		job.Keys = strings.Split(*keys, ",")
	}
	if job.Silver, err = open(*silverURL); err != nil {
		return err
	}
	if job.Bronze, err = open(spec.Bronze); err != nil {
		return err
	}
	if job.Report, err = open(*reportURL); err != nil {
		return err
	}
	// The chunk checks of a chunked snapshot read the facts and plans tables.
	if job.Facts, err = open(spec.FactsTable); err != nil {
		return err
	}
	if job.Plans, err = open(spec.PlansTable()); err != nil {
		return err
	}
	res, err := job.Run(ctx)
	if err != nil {
		return err
	}
	printReconcile(stdout, res, *verbose)
	if !res.OK() {
		return fmt.Errorf("reconcile: silver differs from the source (see the rows above)")
	}
	return nil
}

// printReconcile prints the differences (every row with verbose) and a summary line.
func printReconcile(out io.Writer, res reconcile.JobResult, verbose bool) {
	for _, r := range res.Rows {
		if !verbose && (r.Kind == reconcile.Match || r.Kind == reconcile.InFlight) {
			continue
		}
		switch r.Scope {
		case "bucket", "tile":
			fmt.Fprintf(out, "%-14s %s [%s, %s)  source %d rows, silver %d\n", r.Kind, r.Scope, r.Lo, r.Hi, r.SourceRows, r.TargetRows)
		case "chunk":
			fmt.Fprintf(out, "%-14s chunk %d  recorded %d rows, bronze %d", r.Kind, r.Chunk, r.SourceRows, r.TargetRows)
			if r.Detail != "" {
				fmt.Fprintf(out, ": %s", r.Detail)
			}
			fmt.Fprintln(out)
		default:
			fmt.Fprintf(out, "%-14s key %s", r.Kind, strings.Join(r.Key, ", "))
			if len(r.Columns) > 0 {
				fmt.Fprintf(out, "  columns %s", strings.Join(r.Columns, ", "))
			}
			fmt.Fprintln(out)
		}
	}
	kinds := make([]string, 0, len(res.Counts))
	for k, n := range res.Counts {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintf(out, "reconcile: %s; tier 2 read %d buckets; source max LSN %s, silver at %s", strings.Join(kinds, ", "), res.Tier2Buckets, res.MaxLSN, res.AppliedLSN)
	if res.ChunkedSnapshot != "" {
		fmt.Fprintf(out, "; chunks of snapshot %s checked", res.ChunkedSnapshot)
	}
	if res.Tiles > 0 {
		fmt.Fprintf(out, "; %d of %d key tiles sampled", res.TilesSampled, res.Tiles)
	}
	if res.Run > 0 {
		fmt.Fprintf(out, "; report run %d", res.Run)
	}
	fmt.Fprintln(out)
}
