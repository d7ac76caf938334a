// Package stream is the stream job: it reads every commit after the checkpoint from SQL
// Server's change tables and appends the change rows to bronze, batch after batch, each
// exactly once, with one facts row per batch (docs/design.md §6.1;
// docs/stream.md; docs/reference/original-library.md §2–§8).
//
// One invocation (Run):
//
//  1. Records max_lsn as its target and resumes from the checkpoint: a batch whose
//     offsets exist without a commit is re-run with the same range; otherwise the next
//     batch starts at the last end offset, or at startingLsn on a fresh checkpoint.
//  2. Plans the batch: [next(start), end] with end <= target and at most
//     maxCommitsPerBatch commits (invariant 2: every batch ends on a commit boundary).
//     Writes offsets/<n> with a conditional put before anything is read; a second stream
//     on the same checkpoint loses it (*checkpoint.ConcurrentStreamError).
//  3. Cuts the range at a newer capture instance's start LSN, checks retention (before
//     and after the read: a purged range reads as empty, never as an error), records
//     DDL as schema_change rows, and reads the change rows in ranges of at least
//     MinRowsPerRange rows over numPartitions connections, streaming them into Parquet
//     files (memory bounded by the writers' row groups, whatever the batch size).
//  4. Commits bronze with txn(app_id, batch) — skipped on a replay — then the facts row
//     and the batch's event rows in one commit with txn(<app_id>#facts, batch), then
//     writes commits/<n>. An empty batch writes no bronze commit but still its facts row
//     and its commit, so a quiet table's offset advances
//     (docs/reference/known-failures.md §D9).
//  5. Goes on until the target is reached (caught_up) or the time budget is spent.
//
// Schema changes: a column a capture instance captures that bronze lacks is added to
// bronze as a nullable column (Delta schema evolution; older rows read NULL). A captured
// column whose type differs from bronze's is a *SchemaChangedError before the batch is
// read: bronze never retypes a column.
//
// A crash at any instruction is safe: offsets are written before the read, bronze and
// facts are txn-keyed, and commits/<n> is written last, so a rerun replays the same range
// and converges on the same tables (invariants 4 and 5).
package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// Deps are the stream's connections: the source database, the bronze and facts tables
// and the checkpoint. The caller opens and closes them.
type Deps struct {
	Source source.Source
	Bronze *deltalog.Table
	Facts  *deltalog.Table
	// Plans is the plans table next to bronze, where the first run with snapshot
	// "chunked" records the snapshot's open (snapshot.OpenChunked); nil otherwise.
	Plans      *deltalog.Table
	Checkpoint *checkpoint.Checkpoint
}

// Defaults of Options.
const (
	// DefaultMargin is the time kept free before the invocation's deadline: no batch
	// starts later than deadline − margin − the last batch's duration.
	DefaultMargin = 30 * time.Second
	// DefaultMinRowsPerRange is the original's MIN_ROWS_PER_PARTITION: a read range holds
	// at least this many change rows, so a batch below ~100,000 rows is one connection.
	DefaultMinRowsPerRange = 50_000
	// DefaultFactsEvery is Options.FactsEvery's default: at a batch a minute, a facts
	// commit every ten minutes (docs/decisions/0013-facts-rows-deferred.md).
	DefaultFactsEvery = 10
	// DefaultFactsMaxDelay is Options.FactsMaxDelay's default.
	DefaultFactsMaxDelay = 10 * time.Minute
)

// cleanEvery is how often (in batches) old checkpoint files are deleted: each clean-up
// lists offsets/ and commits/.
const cleanEvery = 10

// Options tune a run. The zero value is usable.
type Options struct {
	// Margin before the ctx deadline; DefaultMargin when 0.
	Margin time.Duration
	// MinRowsPerRange; DefaultMinRowsPerRange when 0.
	MinRowsPerRange int64
	// Writer options for bronze and facts files; zero fields take ingest.Options'
	// defaults (ingest.DefaultRowGroupBytes).
	Writer parquetio.WriterOptions
	// Read bounds the record batches of a change read.
	Read source.ReadOptions
	// MaxBatches stops after this many batches (0: no bound). Tests and the CLI use it.
	MaxBatches int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Logger receives one structured line per batch; slog.Default() when nil.
	Logger *slog.Logger
	// OnBatch, when set, is called after each batch is committed.
	OnBatch func(BatchReport)
	// FactsEvery is how many batches' facts rows are committed to the facts table
	// together: a batch's rows wait in its checkpoint commit file until the FactsEvery-th
	// batch since the last facts commit, or until the oldest has waited FactsMaxDelay;
	// event rows, and the first batch of a stream that starts at startingLsn, are
	// committed at once (docs/decisions/0013-facts-rows-deferred.md). When 0,
	// DefaultFactsEvery, or the checkpoint's Retain if that is smaller; 1 commits every
	// batch's rows with it; at most the checkpoint's Retain (the commit files kept:
	// checkpoint.Checkpoint.Retains), else Run fails with *FactsEveryError.
	FactsEvery int
	// FactsMaxDelay bounds how long a batch's facts rows wait; DefaultFactsMaxDelay when 0.
	FactsMaxDelay time.Duration
}

// Result is what one invocation did.
type Result struct {
	// CaughtUp is true when the stream reached the max_lsn recorded at the start.
	CaughtUp bool `json:"caught_up"`
	// Batches committed by this invocation (empty ones included) and the change rows
	// they appended.
	Batches int   `json:"batches"`
	Rows    int64 `json:"rows"`
	// Offset is the stream's position after the invocation: the last committed end.
	Offset lsn.Offset `json:"offset"`
	// Generation is the generation the invocation streamed (0, the configured checkpoint
	// and app_id, until a re-snapshot after data loss opens generation 1; docs/stream.md
	// "Generations").
	Generation int `json:"generation,omitempty"`
	// Outcome is "" or OutcomeResnapshotRequired: with on_data_loss "resnapshot" and full
	// snapshots, the stream found changes it had not read purged, and a full re-snapshot
	// must open generation Recovery.Generation before it can go on. The invocation read
	// nothing more; the recover state machine (or mssqlcdc stream, in-process) takes it
	// from here, so that no stream invocation reads a whole table. Or
	// OutcomeSwitchSnapshotRequired (snapshot_on_switch): the invocation streamed as
	// usual, and the recover steps are to append the whole snapshot Switch asks for.
	Outcome string `json:"outcome,omitempty"`
	// Recovery is the open attempt when Outcome is OutcomeResnapshotRequired or
	// OutcomeResnapshotRunning.
	Recovery *Recovery `json:"recovery,omitempty"`
	// Switch is the switch whose snapshot is pending when Outcome is
	// OutcomeSwitchSnapshotRequired or OutcomeSwitchSnapshotRunning (snapshot_on_switch).
	Switch *SwitchSnapshot `json:"switch,omitempty"`
}

// BatchReport describes one committed batch (for progress lines, logs and metrics).
type BatchReport struct {
	Batch int64
	// Generation is the generation the batch belongs to (its checkpoint, its app_id).
	Generation int
	Start, End lsn.Offset
	Rows       int64
	// Bytes is the Arrow size of the change rows read.
	Bytes    int64
	Duration time.Duration
	// Replayed is true when bronze already held the batch (a rerun after a crash).
	Replayed bool
	// Events are the event kinds written with the batch.
	Events []string
	// Lag and headroom of the facts row (nil when unknown).
	IngestionLagSeconds    *float64
	CaptureLagSeconds      *float64
	RetentionHeadroomHours *float64
}

// run is one invocation's state.
type run struct {
	// spec is the table spec with the live generation's app_id; deps.Checkpoint that
	// generation's checkpoint. root is the configured checkpoint (the generations' state
	// lives under it), gens what it says.
	spec *config.Spec
	deps Deps
	// rootSpec and rootDeps are the spec and connections as configured (generation 0's
	// app_id and checkpoint), for a run of the next generation (nextGeneration).
	rootSpec *config.Spec
	rootDeps Deps
	root     *checkpoint.Checkpoint
	gens     checkpoint.Generations
	src      source.Source
	opts     Options
	log      *slog.Logger

	// facts is what the invocation knows of the facts rows not yet committed.
	facts pendingFacts
	// factsSnap is the facts table as checkNotRewound read it (nil when it did not), which
	// bootstrapOffset reads too rather than asking the log again in the same invocation,
	// and the first facts commit commits on (waitingFacts; nil once taken).
	factsSnap *deltalog.Snapshot
	// handed is the start a bootstrap handed a fresh checkpoint (nil: none; see
	// handedStart), and bronzeSnap bronze as checkNotRewound read it, which the first
	// batch commits on (nil once taken).
	handed     *checkpoint.Start
	bronzeSnap *deltalog.Snapshot
	// began is when the invocation started (max_seconds counts from it, across
	// generations).
	began time.Time
	// warm is true while the run stands on a warm process's memory (warmGenerations,
	// checkpoint.Checkpoint.ResumeWarm) and has not yet won its first batch's offsets put
	// (warmFence); cold is true once it restarted without it (restartCold), or for a
	// generation after the first.
	warm, cold bool
}

func (o Options) withDefaults() Options {
	if o.Margin == 0 {
		o.Margin = DefaultMargin
	}
	if o.MinRowsPerRange == 0 {
		o.MinRowsPerRange = DefaultMinRowsPerRange
	}
	if o.FactsEvery <= 0 {
		o.FactsEvery = DefaultFactsEvery
	}
	if o.FactsMaxDelay <= 0 {
		o.FactsMaxDelay = DefaultFactsMaxDelay
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Run runs one invocation of the stream for spec (validated). It returns the result so
// far together with any error; errors callers branch on are *DataLossError,
// *SchemaChangedError, *SourceUnavailableError, *config.ConfigError,
// *checkpoint.ConcurrentStreamError, *CheckpointRewoundError, *NoSnapshotError,
// *FactsEveryError (options against the checkpoint, before any I/O),
// *source.LSNRewoundError (the database no longer holds the history the checkpoint was
// recorded on, checked before anything is planned) and *source.CommandIDMissingError.
func Run(ctx context.Context, spec *config.Spec, deps Deps, opts Options) (Result, error) {
	retain := deps.Checkpoint.Retains()
	if opts.FactsEvery <= 0 && retain < DefaultFactsEvery {
		opts.FactsEvery = retain // the default, not the caller's choice: within what is kept
	}
	opts = opts.withDefaults()
	if opts.FactsEvery > retain {
		return Result{}, &FactsEveryError{FactsEvery: opts.FactsEvery, Retain: retain}
	}
	r := &run{spec: spec, deps: deps, rootSpec: spec, rootDeps: deps, root: deps.Checkpoint, src: deps.Source, opts: opts,
		log: opts.Logger.With("app_id", spec.AppID), began: opts.Now()}
	res, err := r.invoke(ctx)
	if err == nil && res.Outcome == "" && r.spec.SnapshotOnSwitch {
		err = r.switchOutcome(ctx, &res)
	}
	return res, err
}

func (r *run) invoke(ctx context.Context) (Result, error) {
	var res Result
	began := r.began
	stopAt := r.stopTime(ctx, began)
	if stop, err := r.useGeneration(ctx, &res); stop || err != nil {
		return res, err
	}

	target, err := r.src.MaxLSN(ctx)
	if err != nil {
		return res, r.sourceErr("max_lsn", err)
	}
	insts, err := r.instances(ctx)
	if err != nil {
		return res, err
	}
	var state checkpoint.State
	if r.warm {
		st, ok, err := r.deps.Checkpoint.ResumeWarm(ctx)
		if err != nil {
			return res, err
		}
		if !ok {
			return r.restartCold(ctx)
		}
		state = st
	} else if state, err = r.deps.Checkpoint.Resume(ctx); err != nil {
		return res, err
	}
	r.handed = r.handedStart(state)
	if err := r.checkNotRewound(ctx, state); err != nil {
		var rw *CheckpointRewoundError
		if r.warm && errors.As(err, &rw) {
			// Another process ran far ahead (or the checkpoint lost batches): a cold
			// resume tells which, from the files.
			return r.restartCold(ctx)
		}
		return res, err
	}
	if off, ok := recordedPosition(state); ok {
		if err := r.checkContinuity(ctx, off); err != nil {
			return res, err
		}
	}
	if err := r.retakeFirst(ctx, &state, insts, target); err != nil {
		return res, err
	}
	r.facts = pendingFromState(state)

	var start lsn.Offset
	switch {
	case state.Pending != nil:
		start = state.Pending.Start
	case state.Last != nil:
		start = state.Last.End
	default:
		if start, err = r.initialOffset(ctx, insts, target); err != nil {
			return res, err
		}
		if r.spec.Bootstrap || r.gens.Live.Generation > 0 {
			// The snapshot's LSN (the bootstrap's, or the generation's re-snapshot): a
			// database restored to before it since no longer holds it.
			if err := r.checkContinuity(ctx, start); err != nil {
				return res, err
			}
		}
	}
	res.Offset = start
	if state.Pending == nil && state.Last != nil {
		res.Offset = state.Last.End
	}

	next := state.Next
	var lastDur time.Duration
	for {
		var b checkpoint.Batch
		fresh := false // b's offsets were written by this run, not resumed
		if state.Pending != nil {
			b = *state.Pending
			state.Pending = nil
		} else {
			end, ok, err := r.planEnd(ctx, start.LSN, target)
			if err != nil {
				return res, err
			}
			endOff := start
			switch {
			case ok:
				if endOff, err = r.offsetAt(ctx, end); err != nil {
					return res, err
				}
			case state.Fresh() && res.Batches == 0:
				// Nothing new on a fresh checkpoint: an empty batch 0 still records the
				// initial offset, so that the next invocation does not compute
				// startingLsn (latest, earliest) again and skip what came meanwhile.
			default:
				res.CaughtUp = true
				return res, nil
			}
			b = checkpoint.Batch{ID: next, Start: start, End: endOff}
			if next == 0 {
				b.Starting = r.startingOf()
			}
			if r.warm {
				if restart, err := r.warmFence(ctx, b); err != nil {
					return res, err
				} else if restart {
					return r.restartCold(ctx)
				}
			} else if err := r.deps.Checkpoint.WriteOffsets(ctx, b); err != nil {
				return res, err
			}
			fresh = true
		}
		t0 := r.opts.Now()
		rep, err := r.batch(ctx, b, insts, fresh)
		if err != nil {
			return r.batchFailed(ctx, res, b, err)
		}
		lastDur = r.opts.Now().Sub(t0)
		res.Batches++
		res.Rows += rep.Rows
		res.Offset = b.End
		start, next = b.End, b.ID+1
		if r.opts.OnBatch != nil {
			r.opts.OnBatch(rep)
		}
		if b.ID%cleanEvery == 0 {
			if err := r.deps.Checkpoint.Clean(ctx, b.ID); err != nil {
				r.log.Warn("checkpoint clean-up failed", "err", err)
			}
		}
		if !b.End.LSN.Less(target) {
			res.CaughtUp = true
			return res, nil
		}
		if r.opts.MaxBatches > 0 && res.Batches >= r.opts.MaxBatches {
			return res, nil
		}
		if !stopAt.IsZero() && r.opts.Now().Add(lastDur).After(stopAt) {
			return res, nil
		}
		// A newer capture instance may appear between batches.
		if insts, err = r.instances(ctx); err != nil {
			return res, err
		}
	}
}

// stopTime is when no further batch may start: the ctx deadline minus the margin, or
// began + max_seconds, whichever is first; zero when neither bounds the run.
func (r *run) stopTime(ctx context.Context, began time.Time) time.Time {
	var stop time.Time
	if d, ok := ctx.Deadline(); ok {
		stop = d.Add(-r.opts.Margin)
	}
	if s := r.spec.MaxSeconds; s > 0 {
		m := began.Add(time.Duration(s * float64(time.Second)))
		if stop.IsZero() || m.Before(stop) {
			stop = m
		}
	}
	return stop
}

// checkNotRewound refuses a checkpoint that is behind the facts table or bronze of the
// same app_id (docs/reference/original-library.md §5.2): its batches would be skipped by
// their txn, silently. Bronze holds the txn of every batch that appended rows, the facts
// table that of the last facts commit, which lags by up to FactsEvery batches
// (docs/decisions/0013-facts-rows-deferred.md) and holds the batches that appended
// nothing. A fresh checkpoint a bootstrap handed its start is checked against bronze alone
// (handedStart). The bronze snapshot read is the one the first batch commits on.
//
// A state the Checkpoint remembers from its own writes (a warm process whose last batch is
// still the newest file, the very file it wrote) is checked against the facts table
// alone: its next batch is a new one, which batch checks against the bronze it reads
// anyway. The memory does not spare the facts check: the checkpoint can lose another
// process's later batches while this process's files stand (restored from a copy, on S3
// with the same ETags, or those batches' files deleted), and when those batches appended
// nothing to bronze only the facts table holds them
// (TestWarmHoleFactsAheadNotChecked). That is one request an invocation (a LIST of the
// facts log), which the invocation's facts commit, when it makes one, saves again
// (waitingFacts). Through the DynamoDB log store the one request (a BatchGetItem) reads
// bronze too (Table.SnapshotWith), whose snapshot the warm fence then checks and the
// first batch commits on (docs/decisions/0019-dynamo-warm-check-one-request.md).
func (r *run) checkNotRewound(ctx context.Context, st checkpoint.State) error {
	limit := st.Next // the next new batch must be above every recorded one
	if st.Pending != nil {
		limit = st.Pending.ID + 1 // a pending batch may already be in the tables
	}
	if r.handed == nil {
		// Bronze is read with the facts table when its log store answers both in one
		// request (the DynamoDB log store: docs/decisions/0019-dynamo-warm-check-one-request.md);
		// its snapshot is then the one the first batch commits on, and for a remembered
		// state the one the warm fence checks.
		snap, bronzeSnap, err := r.deps.Facts.SnapshotWith(ctx, r.deps.Bronze)
		if err != nil {
			return fmt.Errorf("read facts table: %w", err)
		}
		r.factsSnap, r.bronzeSnap = snap, bronzeSnap
		if v, ok := snap.TxnVersion(facts.TxnFacts(r.spec.AppID)); ok && v >= limit {
			return &CheckpointRewoundError{AppID: r.spec.AppID, Next: st.Next, FactsBatch: v}
		}
	}
	if st.Remembered {
		return nil
	}
	snap := r.bronzeSnap
	if snap == nil {
		var err error
		if snap, err = r.deps.Bronze.Snapshot(ctx); err != nil {
			return fmt.Errorf("read bronze table: %w", err)
		}
		r.bronzeSnap = snap
	}
	if v, ok := snap.TxnVersion(r.spec.AppID); ok && v >= limit {
		return &CheckpointRewoundError{AppID: r.spec.AppID, Next: st.Next, FactsBatch: v, Table: "bronze"}
	}
	return nil
}

// bootstrapOffset is where a fresh checkpoint with bootstrap=true starts: the newest
// snapshot of this app_id in the facts table (a bootstrap/resnapshot row's LSN), or an open
// chunked snapshot's S (the stream starts at S at once, docs/design.md §6.3). Without
// either, the newest whole snapshot in bronze (operation-0 rows under any capture instance
// of the table, names ignoring case: docs/snapshots.md "How it behaves"), which is where a
// snapshot taken alone (snapshot(target), writing no facts rows) is found. Without any,
// snapshot "chunked" opens one (snapshot.OpenChunked: S, the key's extent, the
// snapshot_open row; nothing else is read from the table), and snapshot "full" is a
// *NoSnapshotError: the bootstrap machine takes it.
func (r *run) bootstrapOffset(ctx context.Context) (lsn.Offset, error) {
	if r.handed != nil {
		return r.handedOffset(ctx)
	}
	var rows []facts.Row
	var err error
	if r.factsSnap != nil {
		rows, err = facts.SnapshotEventsIn(ctx, r.factsSnap, r.spec.AppID)
	} else {
		rows, err = facts.SnapshotEvents(ctx, r.deps.Facts, r.spec.AppID)
	}
	if err != nil {
		return lsn.Offset{}, err
	}
	var start lsn.LSN
	found := false
	if l, ok := facts.LatestSnapshotLSN(rows, r.spec.AppID); ok {
		start, found = l, true
	}
	for _, o := range facts.OpenSnapshots(rows, r.spec.AppID, lsn.Zero) {
		if o.Mode == facts.ModeChunked && (!found || start.Less(o.S)) {
			start, found = o.S, true
		}
	}
	if !found {
		off, ok, err := snapshot.Find(ctx, r.src, r.deps.Bronze, r.deps.Facts, r.spec.Bronze, r.spec.Source.CaptureInstance)
		if err != nil {
			return lsn.Offset{}, err
		}
		switch {
		case ok:
			start = off.LSN
		case r.spec.Snapshot == config.SnapshotChunked:
			// Open the chunked snapshot at S and start there at once; the backfill reads
			// the table in waves beside the stream (docs/snapshots.md "Chunked snapshots").
			off, err := snapshot.OpenChunked(ctx, snapshot.Deps{Spec: r.spec, Source: r.src, Bronze: r.deps.Bronze,
				Facts: r.deps.Facts, Plans: r.deps.Plans, Options: snapshot.Options{Now: r.opts.Now, Writer: r.opts.Writer, Logger: r.log}})
			if err != nil {
				return lsn.Offset{}, err
			}
			r.factsSnap = nil // the open committed to the facts table since
			r.log.Info("chunked snapshot open: the stream starts at S; the backfill reads the table", "snapshot", off.LSN.String())
			start = off.LSN
		default:
			return lsn.Offset{}, &NoSnapshotError{AppID: r.spec.AppID}
		}
	}
	return r.offsetAt(ctx, start)
}
