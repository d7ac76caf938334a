package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/config"
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
	var f reconcileFlags
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md)")
	fs.StringVar(&f.Silver, "silver", "", "the silver Delta table (local path or s3:// URL) (default: the spec's silver.table)")
	fs.StringVar(&f.Report, "report", "", "a Delta table the report rows are appended to (default: the spec's reconcile.report_table, else none)")
	keys := fs.String("keys", "", "silver's key columns, comma-separated (default with a silver section: its keys, else snapshotKeys, as the reconcile function; without: the keys silver recorded, else snapshotKeys, else the unique index)")
	fs.Int64Var(&f.BucketRows, "bucket-rows", 0, "rows a tier-1 bucket aims to hold (default: the spec's reconcile.bucket_rows, else 1000000)")
	fs.Float64Var(&f.Sample, "sample", 0, "fraction of matching buckets also compared row by row, from 0 up to 1 (default: the spec's reconcile.sample, else 0.01)")
	fs.Uint64Var(&f.Seed, "seed", 1, "seed of the sample")
	verbose := fs.Bool("v", false, "print every report row, not only the differences")
	sim := fs.Bool("sim", false, fmt.Sprintf("read a simulated database instead of source.dsn: the one stream --sim reads (the demo's orders table with %d rows and %d workload transactions)", simRows, simStreamStart))
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if *keys != "" {
		f.Keys = strings.Split(*keys, ",")
	}
	if *specPath == "" || fs.NArg() > 0 || (f.set["bucket-rows"] && f.BucketRows < 1) || !(f.Sample >= 0 && f.Sample <= 1) {
		return &usageError{msg: reconcileUsage}
	}
	spec, err := connect.SpecFile(*specPath)
	if err != nil {
		return err
	}
	if f, err = reconcileSettings(spec, f); err != nil {
		return err
	}
	cfg := connect.Location(spec)
	if *sim {
		// A --sim report holds simulated rows: local locations only.
		if err := checkSimLocations(spec, append(urlsOf("silver", []string{f.Silver}), urlsOf("report", []string{f.Report})...)...); err != nil {
			return err
		}
	}
	if f.Report != "" {
		// The report is the one table reconcile writes: a --sim run's is marked simulated,
		// and a real run refuses it (and a --sim run a real one's).
		tbl, err := connect.Table(ctx, f.Report, cfg)
		if err == nil {
			err = tbl.Claim(ctx, deltalog.Location{Sim: *sim})
		}
		if err != nil {
			return unwritable("report", f.Report, err)
		}
	}
	src, _, err := openSourceAs(ctx, spec, simSetup(*sim, simStreamSource), stderr)
	if err != nil {
		return err
	}
	defer src.Close()
	open := func(url string) (*deltalog.Table, error) {
		if url == "" {
			return nil, nil
		}
		return connect.Table(ctx, url, cfg)
	}
	job := reconcile.Job{Spec: spec, Source: src, Keys: f.Keys, BucketRows: f.BucketRows, Sample: f.Sample, Seed: f.Seed,
		Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	if job.Silver, err = open(f.Silver); err != nil {
		return err
	}
	if job.Bronze, err = open(spec.Bronze); err != nil {
		return err
	}
	if job.Report, err = open(f.Report); err != nil {
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
		return reconcileFlagMistake(err, f.set)
	}
	printReconcile(stdout, res, *verbose)
	if !res.OK() {
		return fmt.Errorf("reconcile: silver differs from the source (see the rows above)")
	}
	return nil
}

// reconcileFlagMistake returns the job's ConfigError on its keys or its silver table as
// the usage mistake of --keys or --silver when the command line gave them (flagMistake);
// from the spec, it stays the spec's ConfigError.
func reconcileFlagMistake(err error, set map[string]bool) error {
	flags := map[string]string{}
	for field, flag := range map[string]string{"keys": "--keys", "silver": "--silver"} {
		if set[flag[2:]] {
			flags[field] = flag
		}
	}
	return flagMistake(err, flags)
}

const reconcileUsage = "usage: mssqlcdc reconcile --spec FILE [--silver URL] [--report URL] [--keys a,b] [--bucket-rows N (>= 1)] [--sample F (from 0 up to 1)] [--seed K] [--sim] [-v] (--silver when the spec has no silver section)"

// reconcileFlags are reconcile's settings: the flags as given (set names those given on
// the command line), then as reconcileSettings completes them from the spec.
type reconcileFlags struct {
	Silver, Report string
	Keys           []string
	BucketRows     int64
	Sample         float64
	Seed           uint64
	set            map[string]bool
}

// reconcileSettings fills what the command line left out from the spec's silver and
// reconcile sections, as the reconcile function reads them (docs/spec.md § Reconcile),
// else the function's defaults; keys are the function's (config.Spec.SilverKeys) with a
// silver section, else empty for the job to choose (silver's recorded keys, else
// snapshotKeys, else the unique index). A usage error when no silver table is
// named anywhere.
func reconcileSettings(spec *config.Spec, f reconcileFlags) (reconcileFlags, error) {
	out := reconcileFlags{Silver: f.Silver, Report: f.Report, Keys: f.Keys, BucketRows: f.BucketRows, Sample: f.Sample, Seed: f.Seed}
	if !f.set["seed"] {
		out.Seed = 1
	}
	rc := spec.Reconcile
	if rc == nil {
		rc = &config.Reconcile{}
	}
	if !f.set["silver"] && spec.Silver != nil {
		out.Silver = spec.Silver.Table
	}
	if !f.set["keys"] && spec.Silver != nil {
		out.Keys = spec.SilverKeys() // the reconcile function's keys: silver.keys, else snapshotKeys
	}
	if !f.set["report"] {
		out.Report = rc.ReportTable
	}
	if !f.set["bucket-rows"] {
		out.BucketRows = cmp.Or(rc.BucketRows, reconcile.DefaultBucketRows)
	}
	if !f.set["sample"] {
		out.Sample = rc.SampleOr()
	}
	if out.Silver == "" {
		return out, &usageError{msg: reconcileUsage}
	}
	return out, nil
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
