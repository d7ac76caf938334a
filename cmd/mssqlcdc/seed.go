package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func init() {
	register(command{
		name:    "seed",
		summary: "seed bronze from an existing copy of the table (a Delta table or Parquet files) at the LSN of --as-of, and print the offset the stream starts after",
		run:     runSeed,
	})
}

const seedUsage = "usage: mssqlcdc seed --spec FILE --copy URL --as-of TIME|LSN [--copy-format delta|parquet] [--allow-missing-columns] [--reseed] [--sim]"

func runSeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("seed", stderr)
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md)")
	var req seed.Request
	fs.StringVar(&req.Copy, "copy", "", "the copy: a Delta table, a folder or prefix of Parquet files, or one Parquet file (a path, file:// or s3://)")
	fs.StringVar(&req.AsOf, "as-of", "", "where the copy ends: the UTC time it started being read (RFC 3339) or an LSN recorded before it (0x...); docs/seed.md § as_of")
	fs.StringVar(&req.CopyFormat, "copy-format", "", "delta or parquet (default: delta when the URL holds a _delta_log)")
	fs.BoolVar(&req.AllowMissingColumns, "allow-missing-columns", false, "seed captured columns the copy lacks as NULL instead of refusing the copy")
	fs.BoolVar(&req.Reseed, "reseed", false, "seed a newer copy over an older snapshot in bronze (a new stream: new app_id and checkpoint in the spec)")
	sim := fs.Bool("sim", false, "read a simulated database (the demo's orders table) instead of source.dsn")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *specPath == "" || req.Copy == "" || req.AsOf == "" || fs.NArg() > 0 {
		return &usageError{msg: seedUsage}
	}
	spec, err := connect.SpecFile(*specPath)
	if err != nil {
		return err
	}
	if err := claimSpecLocations(ctx, spec, *sim); err != nil {
		return err
	}
	src, _, err := openSource(ctx, spec, *sim, stderr)
	if err != nil {
		return err
	}
	defer src.Close()
	deps, err := connect.SeedDeps(ctx, spec, src)
	if err != nil {
		return err
	}
	deps.Options.Progress = func(p seed.Progress) { printSeedProgress(stderr, p) }
	res, err := seed.Run(ctx, deps, req)
	if err != nil {
		return seedFlagMistake(err)
	}
	printSeedResult(stderr, res)
	printOffset(stdout, res.Offset)
	return nil
}

// seedFlags names the flag of each field of the seed's request.
var seedFlags = map[string]string{"as_of": "--as-of", "copy": "--copy", "copy_format": "--copy-format"}

// seedFlagNames turns the request's field names in a reason's advice into the flags
// ("give copy_format parquet" is "give --copy-format parquet" on the command line).
var seedFlagNames = strings.NewReplacer("copy_format", "--copy-format", "allow_missing_columns", "--allow-missing-columns", "as_of", "--as-of")

// seedFlagMistake returns the seed's ConfigError on fields of its request (as_of, copy,
// copy_format) as the usage mistake of the flags that gave them (flagMistake), its advice
// naming flags (seedFlagNames).
func seedFlagMistake(err error) error {
	err = flagMistake(err, seedFlags)
	if ue, ok := err.(*usageError); ok {
		ue.msg = seedFlagNames.Replace(ue.msg)
	}
	return err
}

// printSeedProgress prints one line per file group converted: groups, files and rows so
// far, the copy's MB read and the rate.
func printSeedProgress(out io.Writer, p seed.Progress) {
	mb := float64(p.CopyBytes) / 1e6
	rate := 0.0
	if s := p.Elapsed.Seconds(); s > 0 {
		rate = mb / s
	}
	fmt.Fprintf(out, "seed: group %d/%d  files %d/%d  %d rows  %.1f/%.1f MB of the copy  %.1f MB/s\n",
		p.Groups, p.GroupsTotal, p.Files, p.FilesTotal, p.Rows, mb, float64(p.CopyBytesTotal)/1e6, rate)
}

// printSeedResult says what the seed did.
func printSeedResult(out io.Writer, res seed.RunResult) {
	rows := "an unknown number of"
	if res.Commit.Rows != nil {
		rows = fmt.Sprint(*res.Commit.Rows)
	}
	switch {
	case res.Plan.Status == seed.Found:
		fmt.Fprintf(out, "bronze already holds the seed at %s (%s rows): nothing converted or committed\n", res.Offset.LSN, rows)
	case res.Commit.Skipped:
		fmt.Fprintf(out, "bronze already held the seed's commit at %s (%s rows): nothing more committed\n", res.Offset.LSN, rows)
	case res.Commit.Version < 0:
		fmt.Fprintf(out, "the copy holds no rows: the seed at %s is recorded by its txn alone\n", res.Offset.LSN)
	default:
		fmt.Fprintf(out, "seeded %s rows of %d files at %s into bronze as version %d; the stream starts after it\n",
			rows, res.Plan.Files, res.Offset.LSN, res.Commit.Version)
	}
}
