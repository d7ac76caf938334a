package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

func init() {
	register(command{
		name:    "demo",
		summary: "stream a simulated SQL Server table into local Delta tables under a live workload, then prove bronze rebuilds it exactly",
		run:     runDemo,
	})
}

// demoOptions are the demo's flags.
type demoOptions struct {
	Lake    string
	Rows    int
	Seconds float64
	Seed    uint64
	// Start is the simulator's clock when it is made (zero: now). Its commit times follow
	// from it, so two processes with one Start and Seed build the same history: a --sim
	// rerun then finds the commits its checkpoint recorded (source continuity checks them).
	Start time.Time
	// MinBatches keeps the workload running past Seconds until the stream has committed
	// this many batches, so a run's shape does not depend on the machine's speed.
	MinBatches int
	// DataLoss pauses the stream part-way while CDC cleanup purges past its checkpoint;
	// with on_data_loss "resnapshot" it recovers by itself into generation 1.
	DataLoss bool
	// Bootstrap is how bronze gets the table's rows before the stream: "full" reads the
	// table in one snapshot (the bootstrap's steps, then the stream; "snapshot" is the same);
	// "chunked" has the stream open a chunked snapshot at S with backfill waves beside it;
	// "seed" exports a copy of it while the workload runs and seeds bronze from the copy
	// (docs/seed.md).
	Bootstrap string
}

// Demo defaults.
const (
	demoDefaultLake    = "./demo-lake"
	demoDefaultRows    = 100_000
	demoDefaultSeconds = 10
	// demoRate is the workload's transactions per second (real and simulated time agree).
	demoRate = 200
	// demoMaxSeconds bounds --seconds (a day), so the workload's deadline cannot overflow.
	demoMaxSeconds = 24 * 3600
	// demoMaxBatches bounds --min-batches.
	demoMaxBatches = 10_000
	// demoMarker marks a directory the demo made, so a rerun may clear it.
	demoMarker = ".mssqlcdc-demo"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	var o demoOptions
	fs.StringVar(&o.Lake, "lake", demoDefaultLake, "directory of the Delta tables (bronze, facts, silver) and the checkpoint; a rerun clears what the demo made there")
	fs.IntVar(&o.Rows, "rows", demoDefaultRows, "rows inserted into orders before the workload starts")
	fs.Float64Var(&o.Seconds, "seconds", demoDefaultSeconds, "seconds the workload runs while the stream runs")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the simulator and the workload")
	fs.IntVar(&o.MinBatches, "min-batches", 0, "keep the workload running past --seconds until the stream has committed this many batches")
	fs.BoolVar(&o.DataLoss, "data-loss", false, "part-way through, pause the stream while CDC cleanup purges past its checkpoint: it re-snapshots by itself (on_data_loss resnapshot)")
	fs.StringVar(&o.Bootstrap, "bootstrap", config.SnapshotFull, "how bronze starts: full (one snapshot, then the stream), chunked (the stream starts at once; backfill waves read the table beside it) or seed (export a copy under the workload and seed bronze from it)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	const usage = "usage: mssqlcdc demo [--lake DIR] [--rows N] [--seconds S (0 up to 86,400)] [--min-batches N (0 up to 10,000)] [--seed K] [--data-loss] [--bootstrap full|chunked|seed]"
	// Each flag out of range is named with its range, then the usage.
	var bad string
	switch {
	case fs.NArg() > 0:
		bad = fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	case o.Rows < 0:
		bad = fmt.Sprintf("--rows %d: want 0 or more", o.Rows)
	case !(o.Seconds >= 0 && o.Seconds <= demoMaxSeconds):
		bad = fmt.Sprintf("--seconds %s: want seconds from 0 up to %s (a day)", config.PlainNumber(o.Seconds), config.Grouped(demoMaxSeconds))
	case o.MinBatches < 0 || o.MinBatches > demoMaxBatches:
		bad = fmt.Sprintf("--min-batches %d: want from 0 up to %s", o.MinBatches, config.Grouped(demoMaxBatches))
	case o.Bootstrap != "snapshot" && o.Bootstrap != config.SnapshotFull && o.Bootstrap != config.SnapshotChunked && o.Bootstrap != "seed":
		bad = fmt.Sprintf("--bootstrap %q: want full, chunked or seed", o.Bootstrap)
	}
	if bad != "" {
		return &usageError{msg: bad + "\n" + usage}
	}
	sum, err := demo(ctx, o, stdout)
	if err != nil {
		return err
	}
	if !sum.ok() {
		return errors.New("bronze does not rebuild the source table (see the differences above)")
	}
	return nil
}

// demoSource is the simulated database and its workload.
type demoSource struct {
	db  *cdcsim.DB
	gen *workload.Generator
	// snapshot is the bootstrap snapshot's LSN (after a re-snapshot, the new generation's):
	// the changes at or before it are in the snapshot, those after it in bronze as change
	// rows.
	snapshot lsn.LSN
	// lostRows are the change rows bronze holds from before the re-snapshot (--data-loss);
	// generation is the live generation.
	lostRows   int64
	generation int
}

// demoSummary is what the demo prints at the end.
type demoSummary struct {
	Transactions, Inserts, Updates, Deletes, KeyUpdates int
	Batches                                             int
	BronzeRows                                          int64
	SourceChanges                                       int64
	Duplicates                                          int64
	TableRows                                           int
	FactsBatchRows                                      int
	Silver                                              demoSilver
	Diffs                                               []string
	want                                                *rebuild.State // the simulator's table
	// DataLoss: the demo purged past the stream; Generation and Resnapshots must then be 1.
	DataLoss                bool
	Generation, Resnapshots int
	// Chunked is the chunked snapshot's check; nil for a full snapshot.
	Chunked *chunkedCheck
}

func (s demoSummary) ok() bool {
	if s.DataLoss && (s.Generation != 1 || s.Resnapshots != 1) {
		return false
	}
	return len(s.Diffs) == 0 && len(s.Silver.Diffs) == 0 && s.Duplicates == 0 && s.BronzeRows == s.SourceChanges && s.FactsBatchRows == s.Batches &&
		(s.Chunked == nil || s.Chunked.ok())
}

// demo runs the three phases: set up the source, run the pipeline, verify.
func demo(ctx context.Context, o demoOptions, out io.Writer) (demoSummary, error) {
	spec, err := demoSpec(o.Lake, o)
	if err != nil {
		return demoSummary{}, err
	}
	if err := claimSpecLocations(ctx, spec, true); err != nil {
		return demoSummary{}, err
	}
	fmt.Fprintf(out, "mssqlcdc demo: a simulated SQL Server, table dbo.orders, Delta tables under %s\n", o.Lake)
	ds, err := setupBootstrapDemoSource(o, out)
	if err != nil {
		return demoSummary{}, err
	}
	defer ds.db.Close()
	batches, err := runDemoPipeline(ctx, o, ds, spec, out)
	if err != nil {
		return demoSummary{}, err
	}
	sum, err := verifyDemo(ctx, ds, spec)
	if err != nil {
		return sum, err
	}
	// --data-loss passes only when the loss happened and the stream recovered from it.
	sum.DataLoss = sum.DataLoss || o.DataLoss
	if spec.Snapshot == config.SnapshotChunked {
		if sum.Chunked, err = verifyChunked(ctx, spec, ds.snapshot, ds.generation); err != nil {
			return sum, err
		}
	}
	if sum.Silver, err = verifyDemoSilver(ctx, spec, sum.want); err != nil {
		return sum, err
	}
	sum.Batches = batches
	printDemoSummary(out, o, spec, sum)
	return sum, nil
}

// demoSpec is the table spec of the demo: tables and checkpoint under lake, which is
// cleared first when an earlier demo made it (a new simulator restarts the LSNs).
func demoSpec(lake string, o demoOptions) (*config.Spec, error) {
	abs, err := filepath.Abs(lake)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("--lake %s is a file: give a directory (made when missing; a rerun clears what the demo made there)", abs)
	}
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(abs, demoMarker)); err != nil {
			return nil, fmt.Errorf("%s exists and was not made by the demo; choose another --lake", abs)
		}
		for _, d := range []string{"bronze", "facts", "checkpoints", "silver", "copy"} {
			if err := os.RemoveAll(filepath.Join(abs, d)); err != nil {
				return nil, err
			}
		}
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("--lake: %w", err)
	}
	if err := os.WriteFile(filepath.Join(abs, demoMarker), []byte("made by mssqlcdc demo; a rerun clears this directory\n"), 0o644); err != nil {
		return nil, err
	}
	fifty := 50
	spec := &config.Spec{
		AppID:      "demo-orders",
		Bootstrap:  true,
		Source:     config.Source{DSN: "sqlserver://demo@cdcsim?database=demo", CaptureInstance: "dbo_orders"},
		Options:    config.Options{NumPartitions: 2, MaxCommitsPerBatch: &fifty},
		Bronze:     filepath.Join(abs, "bronze", "orders"),
		FactsTable: filepath.Join(abs, "facts"),
		Checkpoint: filepath.Join(abs, "checkpoints", "orders"),
	}
	if o.DataLoss {
		spec.OnDataLoss = config.OnDataLossResnapshot
	}
	if o.Bootstrap == config.SnapshotChunked {
		// About a dozen chunks, so the demo shows several waves of numPartitions chunks.
		// min_headroom_hours 0: the simulated capture instance is minutes old, and its
		// headroom (its age) would keep the backfill waiting for a day.
		cr, zero := max(int64(o.Rows)/12, 100), 0.0
		spec.Snapshot, spec.ChunkRows, spec.MinHeadroomHours, spec.TargetWaveSeconds = config.SnapshotChunked, &cr, &zero, &zero
	}
	spec.Defaults()
	return spec, spec.Validate()
}

// setupDemoSource makes the simulated database: CDC enabled on an empty orders table,
// then o.Rows rows inserted in transactions of 1,000.
func setupDemoSource(o demoOptions, out io.Writer) (*demoSource, error) {
	start := o.Start
	if start.IsZero() {
		start = time.Now().UTC()
	}
	db := cdcsim.New(cdcsim.Config{Seed: o.Seed, Start: start, IdleEvery: 5 * time.Minute})
	gen := workload.New(db, workload.Config{Seed: o.Seed, TxnSize: 6, Rate: demoRate, Tables: []string{"orders"}})
	if err := gen.Create(workload.Orders()); err != nil {
		return nil, err
	}
	if o.Rows > 0 {
		if err := loadWithProgress(gen, o.Rows, out); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(out, "source: CDC enabled on dbo.orders (capture instance dbo_orders), %d rows inserted\n", o.Rows)
	return &demoSource{db: db, gen: gen}, nil
}

// runDemoPipeline runs the workload for o.Seconds while the stream runs invocation after
// invocation, then drains. It returns the batches committed.
func runDemoPipeline(ctx context.Context, o demoOptions, ds *demoSource, spec *config.Spec, out io.Writer) (int, error) {
	deps, err := connect.StreamDeps(ctx, spec, ds.db)
	if err != nil {
		return 0, err
	}
	// The generator and the simulated clock belong to the workload goroutine; the stream
	// only reads the database (cdcsim is safe for concurrent use).
	done := make(chan error, 1)
	var committed atomic.Int64 // batches so far, for --min-batches
	go func() {
		deadline := time.Now().Add(time.Duration(o.Seconds * float64(time.Second)))
		const step = 20
		for (time.Now().Before(deadline) || committed.Load() < int64(o.MinBatches)) && ctx.Err() == nil {
			t0 := time.Now()
			err := ds.gen.Step(step)
			if err != nil {
				done <- err
				return
			}
			if pause := time.Duration(step)*time.Second/demoRate - time.Since(t0); pause > 0 {
				time.Sleep(pause)
			}
		}
		done <- nil
	}()
	var bf *demoBackfill
	switch {
	case spec.Snapshot == config.SnapshotChunked:
		fmt.Fprintf(out, "workload: inserts, updates, deletes, key updates in transactions of 1-6 statements for %gs; the stream opens a chunked snapshot and backfill waves read it meanwhile\n", o.Seconds)
		bf, err = newDemoBackfill(ctx, spec, ds)
	case o.Bootstrap == "seed":
		fmt.Fprintf(out, "workload: inserts, updates, deletes, key updates in transactions of 1-6 statements for %gs, seed then stream meanwhile\n", o.Seconds)
		ds.snapshot, err = demoSeed(ctx, o, spec, ds, out)
	default:
		fmt.Fprintf(out, "workload: inserts, updates, deletes, key updates in transactions of 1-6 statements for %gs, snapshot then stream meanwhile\n", o.Seconds)
		ds.snapshot, err = demoSnapshot(ctx, spec, ds, out)
	}
	if err != nil {
		return 0, err
	}
	batches := 0
	var rows int64
	rowsOf := map[int]int64{} // change rows per generation
	announced := 0            // the newest generation printed
	announce := func(gen int) {
		if bf != nil && gen > announced {
			// A chunked re-snapshot: the stream opened the generation by itself.
			if err := printChunkedGeneration(ctx, deps.Checkpoint, out); err != nil {
				fmt.Fprintf(out, "generation %d: %v\n", gen, err)
			}
			announced = gen
		}
	}
	opts := stream.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnBatch: func(r stream.BatchReport) {
			announce(r.Generation)
			batches++
			committed.Add(1)
			rows += r.Rows
			rowsOf[r.Generation] += r.Rows
			recordDone(ctx, "batch %d (offset %s)", r.Batch, r.End.LSN)
			printBatch(out, r)
		},
		// The summary checks one facts row per batch in the facts table: commit each
		// batch's row with it instead of every 10th batch (docs/facts.md § When rows arrive).
		FactsEvery: 1,
	}
	lo := loopOptions{recover: func(ctx context.Context) (stream.RecoverCommitResult, error) {
		sd, err := connect.SnapshotDeps(ctx, spec, ds.db)
		if err != nil {
			return stream.RecoverCommitResult{}, err
		}
		cr, err := stream.Recover(ctx, sd)
		if err == nil {
			ds.snapshot, ds.lostRows, ds.generation = cr.Snapshot.LSN, rows, cr.Generation
		}
		return cr, err
	}}
	purged := !o.DataLoss
	writing, drainFrom := true, 0
	for {
		if writing {
			select {
			case err := <-done:
				if err != nil {
					return batches, fmt.Errorf("workload: %w", err)
				}
				writing = false
				max, err := ds.db.MaxLSN(ctx)
				if err != nil {
					return batches, err
				}
				drainFrom = batches
				fmt.Fprintf(out, "workload stopped; draining the changes up to max_lsn %s\n", max)
			default:
			}
		}
		// A chunked snapshot is opened by the stream's first run: purge only after it.
		if !purged && (batches >= 2 || !writing) && (bf == nil || batches > 0) {
			if err := demoPurge(ctx, ds, writing, out); err != nil {
				return batches, err
			}
			purged = true
		}
		res, err := stream.Run(ctx, spec, deps, opts)
		if err != nil {
			return batches, err
		}
		if bf != nil && res.Generation > ds.generation {
			// A chunked re-snapshot: the stream opened the generation by itself and went
			// on from its S; the backfill now reads that snapshot (the older one, if still
			// open, is abandoned).
			announce(res.Generation)
			ds.generation, bf.done = res.Generation, false
			ds.lostRows = 0
			for g, n := range rowsOf {
				if g < res.Generation {
					ds.lostRows += n
				}
			}
			if !writing {
				// Changes while the backfill reads: the workload has stopped, so commit
				// some here (the generator is this goroutine's once the workload ended).
				if err := ds.gen.Step(40); err != nil {
					return batches, fmt.Errorf("workload: %w", err)
				}
			}
		}
		if res.Outcome == stream.OutcomeResnapshotRequired {
			if err := recoverInProcess(ctx, res, lo, out); err != nil {
				return batches, err
			}
			continue
		}
		if res.Batches > 0 {
			// Silver follows bronze as the stream writes it: the first apply rebuilds
			// from the snapshot, the later ones merge with deletion vectors; a chunked
			// snapshot's waves are applied as they arrive (docs/silver.md).
			if err := applyDemoSilver(ctx, spec, out); err != nil {
				return batches, err
			}
		}
		if bf != nil && !bf.done {
			// One wave per turn, the stream running between waves as it runs beside them.
			if err := bf.step(ctx, ds, out); err != nil {
				return batches, err
			}
			if err := applyDemoSilver(ctx, spec, out); err != nil {
				return batches, err
			}
			continue
		}
		if !writing && res.CaughtUp {
			max, _ := ds.db.MaxLSN(ctx)
			if !res.Offset.LSN.Less(max) {
				fmt.Fprintf(out, "drained: caught up with max_lsn %s in %d more %s\n", max, batches-drainFrom, plural(batches-drainFrom, "batch"))
				return batches, nil
			}
		}
		if writing && res.Batches == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// printChunkedGeneration says which generation a chunked re-snapshot opened, at which S,
// and the lost window.
func printChunkedGeneration(ctx context.Context, root *checkpoint.Checkpoint, out io.Writer) error {
	g, err := root.Generations(ctx)
	if err != nil {
		return err
	}
	l := g.Live
	fmt.Fprintf(out, "data loss: changes after %s were purged by CDC cleanup before the stream read them (lost window %s .. %s); "+
		"generation %d opened with a chunked re-snapshot at %s: the stream goes on from there, the backfill reads the table\n",
		l.From.LSN, timeText(l.LostFromTS), timeText(l.LostToTS), l.Generation, l.Snapshot.LSN)
	return nil
}

// demoPurge pauses the stream while the workload writes (or commits some transactions
// itself once the workload stopped), then runs CDC cleanup up to max_lsn: every change the
// stream has not read yet is gone.
func demoPurge(ctx context.Context, ds *demoSource, writing bool, out io.Writer) error {
	if writing {
		time.Sleep(300 * time.Millisecond)
	} else if err := ds.gen.Step(40); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	max, err := ds.db.MaxLSN(ctx)
	if err != nil {
		return err
	}
	if err := ds.db.Cleanup("dbo_orders", max); err != nil {
		return err
	}
	fmt.Fprintf(out, "data loss: the stream paused while CDC cleanup purged every change up to %s, past its checkpoint\n", max)
	return nil
}

// silverLabel starts the summary's silver line: the table, what it holds, and "vs" what.
func (s demoSummary) silverLabel(o demoOptions) string {
	return fmt.Sprintf("silver:    %s vs dbo.orders (%d rows, %d files, %d with a deletion vector):",
		filepath.Join(o.Lake, "silver", "orders"), s.Silver.Rows, s.Silver.Files, s.Silver.WithDV)
}

func printBatch(out io.Writer, r stream.BatchReport) {
	mbps := 0.0
	if s := r.Duration.Seconds(); s > 0 {
		mbps = float64(r.Bytes) / 1e6 / s
	}
	lag := "-"
	if r.IngestionLagSeconds != nil {
		lag = fmt.Sprintf("%.1fs", *r.IngestionLagSeconds)
	}
	extra := ""
	if r.Replayed {
		extra = " (replayed)"
	}
	for _, e := range r.Events {
		extra += " [" + e + "]"
	}
	fmt.Fprintf(out, "batch %4d  %7d rows  %s..%s  %6.1f MB/s  lag %s%s\n",
		r.Batch, r.Rows, r.Start.LSN, r.End.LSN, mbps, lag, extra)
}

// verifyDemo rebuilds the current state from bronze and compares it with the simulator's
// table; it also checks that bronze holds each change row exactly once and that the facts
// table has one row per batch.
func verifyDemo(ctx context.Context, ds *demoSource, spec *config.Spec) (demoSummary, error) {
	st := ds.gen.Stats
	sum := demoSummary{Transactions: st.Transactions, Inserts: st.Inserts, Updates: st.Updates, Deletes: st.Deletes, KeyUpdates: st.KeyUpdates,
		DataLoss: ds.lostRows > 0 || ds.generation > 0, Generation: ds.generation}
	cfg := connect.Location(spec)
	bronzeT, err := connect.Table(ctx, spec.Bronze, cfg)
	if err != nil {
		return sum, err
	}
	snap, err := bronzeT.Snapshot(ctx)
	if err != nil {
		return sum, err
	}
	factsT, err := connect.Table(ctx, spec.FactsTable, cfg)
	if err != nil {
		return sum, err
	}
	fsnap, err := factsT.Snapshot(ctx)
	if err != nil {
		return sum, err
	}
	// From the newest complete snapshot: bronze's whole ones and the facts' completion rows
	// (a chunked one is complete only at its row; docs/bronze.md "The current table").
	done, err := rebuild.FactsCompleted(ctx, fsnap, spec.Bronze)
	if err != nil {
		return sum, err
	}
	got, lg, err := rebuild.Rebuild(ctx, snap, []string{"id"}, rebuild.Options{Completed: done})
	if err != nil {
		return sum, fmt.Errorf("rebuild from bronze: %w", err)
	}
	sum.BronzeRows, sum.Duplicates = lg.ChangeRows()-ds.lostRows, lg.Duplicates
	cols, err := ds.db.Columns("orders")
	if err != nil {
		return sum, err
	}
	rows, err := ds.db.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: "orders"}, Columns: cols})
	if err != nil {
		return sum, err
	}
	want, err := rebuild.FromRows(ctx, rows, []string{"id"})
	if err != nil {
		return sum, err
	}
	sum.TableRows = len(want.Rows)
	sum.Diffs = rebuild.Diff(want, got, 20)
	sum.want = want
	if sum.SourceChanges, err = countChanges(ctx, ds.db, "dbo_orders", ds.snapshot); err != nil {
		return sum, err
	}
	apps := []string{spec.AppID}
	for g := 1; g <= ds.generation; g++ {
		apps = append(apps, checkpoint.GenerationAppID(spec.AppID, g))
	}
	frows, err := facts.ReadRows(ctx, fsnap, apps...)
	if err != nil {
		return sum, err
	}
	for _, r := range frows {
		switch r.Event {
		case "":
			sum.FactsBatchRows++
		case facts.EventResnapshot:
			sum.Resnapshots++
		}
	}
	return sum, nil
}

// countChanges counts the change rows a capture instance holds after the LSN after.
func countChanges(ctx context.Context, src source.Source, ci string, after lsn.LSN) (int64, error) {
	max, err := src.MaxLSN(ctx)
	if err != nil {
		return 0, err
	}
	rows, err := src.ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: after.Next(), To: max})
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += rec.NumRows()
		rec.Release()
	}
}

func printDemoSummary(out io.Writer, o demoOptions, spec *config.Spec, s demoSummary) {
	fmt.Fprintln(out)
	fmt.Fprintf(out, "workload:  %d transactions (load included): %d inserts, %d updates, %d deletes, %d key updates\n",
		s.Transactions, s.Inserts, s.Updates, s.Deletes, s.KeyUpdates)
	fmt.Fprintf(out, "bronze:    %d change rows in %d batches (source change table: %d; duplicates: %d)\n",
		s.BronzeRows, s.Batches, s.SourceChanges, s.Duplicates)
	fmt.Fprintf(out, "facts:     %d batch rows\n", s.FactsBatchRows)
	if s.DataLoss {
		fmt.Fprintf(out, "recovery:  generation %d, %d resnapshot row(s); bronze counted from the re-snapshot on, rebuilt from the newest snapshot\n", s.Generation, s.Resnapshots)
	}
	if c := s.Chunked; c != nil {
		fmt.Fprintf(out, "chunked:   snapshot %s, %d chunks in the plan, %d in the plans table, %d snapshot_chunk facts rows, %d snapshot rows in bronze (%d per the facts), %d keys read twice, %d stamps below S\n",
			c.Snapshot, c.Planned, c.Recorded, c.FactsChunks, c.BronzeRows, c.FactsRows, c.KeysTwice, c.StampsBelowS)
	}
	fmt.Fprintf(out, "rebuild:   latest image per key from bronze vs dbo.orders (%d rows): ", s.TableRows)
	if len(s.Diffs) == 0 {
		fmt.Fprintln(out, "identical")
	} else {
		fmt.Fprintf(out, "%d differences\n", len(s.Diffs))
		for _, d := range s.Diffs {
			fmt.Fprintln(out, "  "+d)
		}
	}
	switch {
	case len(s.Silver.Diffs) == 0:
		fmt.Fprintf(out, "%s identical\n", s.silverLabel(o))
	default:
		fmt.Fprintf(out, "%s %d differences\n", s.silverLabel(o), len(s.Silver.Diffs))
		for _, d := range s.Silver.Diffs {
			fmt.Fprintln(out, "  "+d)
		}
	}
	if s.ok() {
		if s.Chunked != nil {
			fmt.Fprintln(out, "OK: every change and every chunk is in bronze exactly once and rebuilds the table; silver, applied wave by wave, equals it.")
		} else {
			fmt.Fprintln(out, "OK: every change is in bronze exactly once and rebuilds the table; silver equals it.")
		}
	} else {
		fmt.Fprintln(out, "FAILED")
	}
	if spec.Snapshot == config.SnapshotChunked {
		fmt.Fprintf(out, "tables:    %s  %s  %s\n", spec.Bronze, spec.FactsTable, spec.PlansTable())
	} else {
		fmt.Fprintf(out, "tables:    %s  %s\n", spec.Bronze, spec.FactsTable)
	}
	fmt.Fprintf(out, "try:       %s inspect %s\n", invokedAs(os.Args[0]), filepath.Join(o.Lake, "bronze", "orders"))
}

// goBuildDir is the temporary directory go run builds in (go-build and digits).
var goBuildDir = regexp.MustCompile(`^go-build\d+$`)

// invokedAs is how to run this program again, from argv0: "go run ./cmd/mssqlcdc" for a go
// run (from the repository root, where the README runs the demo), whose binary lies in a
// go-build directory that is gone afterwards; else argv0 as typed (./mssqlcdc, mssqlcdc on
// the PATH), quoted when it holds a space.
func invokedAs(argv0 string) string {
	for _, seg := range strings.FieldsFunc(argv0, func(r rune) bool { return r == '/' || r == '\\' }) {
		if goBuildDir.MatchString(seg) {
			return "go run ./cmd/mssqlcdc"
		}
	}
	if strings.ContainsAny(argv0, " \t") {
		return "'" + argv0 + "'"
	}
	return argv0
}
