package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func init() {
	register(command{
		name:    "snapshot",
		summary: "take a full snapshot of the table into bronze (or find the one there) and print its offset",
		run:     runSnapshot,
	})
}

// simRows is the size of the simulated orders table --sim starts with.
const simRows = 10_000

// simOptions is the simulated database every --sim command builds. It starts at the hour,
// not the instant: a rerun (after Ctrl-C, or the next step of a bootstrap) is a new process
// and must find the same commit times, or source continuity refuses it as rewound.
func simOptions() demoOptions {
	return demoOptions{Rows: simRows, Seed: 1, Start: time.Now().UTC().Truncate(time.Hour)}
}

// openSource opens the spec's SQL Server, or with sim the demo's simulated database.
func openSource(ctx context.Context, spec *config.Spec, sim bool, out io.Writer) (source.Source, *demoSource, error) {
	return openSourceAs(ctx, spec, simSetup(sim, setupDemoSimSource), out)
}

// simBuild builds a simulated database, printing what it made on out.
type simBuild func(out io.Writer) (*demoSource, error)

// setupDemoSimSource is the simulated database most --sim commands read: the demo's table
// as simOptions loads it, no workload yet.
func setupDemoSimSource(out io.Writer) (*demoSource, error) {
	return setupDemoSource(simOptions(), out)
}

// simSetup is build when sim is set, else nil (SQL Server).
func simSetup(sim bool, build simBuild) simBuild {
	if !sim {
		return nil
	}
	return build
}

// openSourceAs is openSource with the simulated database sim builds (nil: the spec's SQL
// Server); simStreamSource builds the stream's history.
func openSourceAs(ctx context.Context, spec *config.Spec, sim simBuild, out io.Writer) (source.Source, *demoSource, error) {
	if sim != nil {
		if err := checkSimLocal(spec); err != nil {
			return nil, nil, err
		}
		ds, err := sim(out)
		if err != nil {
			return nil, nil, err
		}
		return ds.db, ds, nil
	}
	db, err := connect.SQLServer(ctx, spec, os.Getenv, nil)
	if err != nil {
		return nil, nil, err
	}
	return db, nil, nil
}

// openSnapshot loads the spec file at path, opens its SQL Server (or with sim the demo's
// simulated database) and the snapshot steps' connections around it. With claim, the
// spec's locations are claimed for this kind of run first (claimSpecLocations); extra are
// more locations a --sim run writes (export's --to). The caller closes deps.Source.
func openSnapshot(ctx context.Context, path string, sim, claim bool, out io.Writer, extra ...string) (spec *config.Spec, deps snapshot.Deps, err error) {
	return openSnapshotAs(ctx, path, simSetup(sim, setupDemoSimSource), claim, out, extra...)
}

// openSnapshotAs is openSnapshot on the simulated database sim builds (nil: SQL Server).
func openSnapshotAs(ctx context.Context, path string, sim simBuild, claim bool, out io.Writer, extra ...string) (spec *config.Spec, deps snapshot.Deps, err error) {
	if spec, err = connect.SpecFile(path); err != nil {
		return nil, snapshot.Deps{}, err
	}
	if sim != nil {
		if err := checkSimLocal(spec, extra...); err != nil {
			return nil, snapshot.Deps{}, err
		}
	}
	if claim {
		if err := claimSpecLocations(ctx, spec, sim != nil); err != nil {
			return nil, snapshot.Deps{}, err
		}
	}
	src, _, err := openSourceAs(ctx, spec, sim, out)
	if err != nil {
		return nil, snapshot.Deps{}, err
	}
	if deps, err = connect.SnapshotDeps(ctx, spec, src); err != nil {
		src.Close()
		return nil, snapshot.Deps{}, err
	}
	// In-process reads have no Lambda time limit: a range may hold any size.
	deps.Options.MaxRangeBytes = -1
	return spec, deps, nil
}

func printOffset(out io.Writer, o lsn.Offset) {
	b, _ := json.Marshal(o)
	fmt.Fprintln(out, string(b))
}

func runSnapshot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("snapshot", stderr)
	specPath := fs.String("spec", "", "table spec JSON file (docs/spec.md)")
	resnapshot := fs.Bool("resnapshot", false, "take a new snapshot even when bronze holds one (manual recovery)")
	sim := fs.Bool("sim", false, "read a simulated database (the demo's orders table) instead of source.dsn")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *specPath == "" || fs.NArg() > 0 {
		return &usageError{msg: "usage: mssqlcdc snapshot --spec FILE [--resnapshot] [--sim]"}
	}
	spec, deps, err := openSnapshot(ctx, *specPath, *sim, true, stderr)
	if err != nil {
		return err
	}
	defer deps.Source.Close()
	bronzeT, err := connect.Table(ctx, spec.Bronze, connect.Location(spec))
	if err != nil {
		return err
	}
	before, err := bronzeT.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("read bronze: %w", err)
	}
	// snapshot(target): no facts rows of its own, and no checkpoint to resume from: its
	// offset starts a new checkpoint (seed "A snapshot without the stream").
	deps.Options.Standalone, deps.Options.Resnapshot = true, *resnapshot
	prog := newSnapshotProgress(ctx, stderr)
	deps.Options.Progress = prog.report
	off, err := snapshot.Run(ctx, deps)
	if err != nil {
		return err
	}
	recordDone(ctx, "the snapshot at %s", off.LSN)
	after, err := bronzeT.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("read bronze: %w", err)
	}
	_, held := before.TxnVersion(snapshot.TxnAppID(spec.AppID, off.LSN))
	switch {
	case held && *resnapshot:
		fmt.Fprintf(stderr, "bronze already holds the snapshot at %s: nothing committed (the source's max_lsn has not moved since it was taken, so --resnapshot stamped the same LSN); the offset below is that snapshot's\n", off.LSN)
	case held:
		fmt.Fprintf(stderr, "bronze already holds the snapshot at %s: nothing read or committed\n", off.LSN)
	case after.Version() == before.Version():
		fmt.Fprintf(stderr, "nothing committed to bronze: the table has no rows at %s, or bronze already holds a snapshot of it\n", off.LSN)
	default:
		fmt.Fprintf(stderr, "committed the snapshot at %s to bronze as version %d\n", off.LSN, after.Version())
	}
	if sum := prog.summary(); sum != "" {
		fmt.Fprintf(stderr, "snapshot read: %s\n", sum)
	}
	printOffset(stdout, off)
	return nil
}
