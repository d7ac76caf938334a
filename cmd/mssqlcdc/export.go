package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func init() {
	register(command{
		name:    "export",
		summary: "write the table's current rows as Parquet files (the stream's schema, stamped with an LSN) to an empty URL, and print the LSN",
		run:     runExport,
	})
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("export", stderr)
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md)")
	to := fs.String("to", "", "where the Parquet files go: an empty path, file:// or s3://bucket/prefix (one holding files is refused)")
	given := fs.String("snapshot-lsn", "", "stamp the rows with this LSN, recorded before the read started (default: max_lsn recorded now)")
	sim := fs.Bool("sim", false, "read a simulated database (the demo's orders table) instead of source.dsn")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *specPath == "" || *to == "" || fs.NArg() > 0 {
		return &usageError{msg: "usage: mssqlcdc export --spec FILE --to URL [--snapshot-lsn LSN] [--sim]"}
	}
	var l lsn.LSN
	if *given != "" {
		var err error
		if l, err = lsn.Parse(*given); err != nil {
			return &usageError{msg: "--snapshot-lsn: " + err.Error()}
		}
	}
	// export writes only --to (which it refuses unless empty), so it claims nothing; a
	// --sim export writes simulated rows, so --to must be local too.
	spec, deps, err := openSnapshot(ctx, *specPath, *sim, false, stderr, *to)
	if err != nil {
		return err
	}
	defer deps.Source.Close()
	dst, _, err := location.Open(ctx, *to, connect.Location(spec))
	if err != nil {
		return unwritable("--to", *to, err)
	}
	// An interrupted export leaves files without the completion marker in --to, which
	// a rerun refuses: say so instead of "rerun to continue".
	setRerun(ctx, fmt.Sprintf("%s holds a partial export (no %s): delete what is there and export again", *to, snapshot.ExportMarker))
	prog := newSnapshotProgress(ctx, stderr)
	prog.label = "export"
	deps.Options.Progress = prog.report
	res, err := snapshot.Export(ctx, deps, dst, l)
	var ahead *snapshot.StampAheadError
	if errors.As(err, &ahead) && !l.IsZero() {
		ahead.Field = "--snapshot-lsn" // the flag's stamp, not the spec's snapshotLsn
	}
	if err != nil {
		return err
	}
	if sum := prog.summary(); sum != "" {
		fmt.Fprintf(stderr, "export read: %s\n", sum)
	}
	fmt.Fprintf(stderr, "exported %d rows in %d files to %s; %s (written last) lists them: readers must check it\n",
		res.Rows, len(res.Files), *to, snapshot.ExportMarker)
	fmt.Fprintln(stdout, res.Snapshot.LSN)
	return nil
}
