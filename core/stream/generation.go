package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
)

// OutcomeResnapshotRequired is Result.Outcome when a full re-snapshot must open the next
// generation before the stream can go on (docs/stream.md "Data loss").
const OutcomeResnapshotRequired = "resnapshot_required"

// OutcomeResnapshotRunning is Result.Outcome while a recover execution holds the claim on
// the open full re-snapshot: the stream waits, and asks for no second one.
const OutcomeResnapshotRunning = "resnapshot_running"

// Recovery is an open attempt to open a generation after data loss: what Result.Recovery
// holds when the outcome is OutcomeResnapshotRequired. The recover steps (core/recover)
// read the same attempt from the checkpoint; this copy is for the caller's logs and for
// naming the recover execution (RecoveryExecutionName).
type Recovery struct {
	Generation int    `json:"generation"`
	Attempt    int    `json:"attempt"`
	Mode       string `json:"mode"`
	// From is the last offset the previous generation processed; the changes after it, up
	// to the retention watermark MinLSN, are gone.
	From       lsn.Offset `json:"from"`
	MinLSN     lsn.LSN    `json:"min_lsn"`
	LostFromTS *time.Time `json:"lost_from_ts"`
	LostToTS   *time.Time `json:"lost_to_ts"`
	// Execution is the recover execution holding the attempt's claim ("" while none does).
	Execution string `json:"execution,omitempty"`
}

func recoveryOf(a checkpoint.Attempt) *Recovery {
	return &Recovery{Generation: a.Generation, Attempt: a.Attempt, Mode: a.Mode, From: a.From, MinLSN: a.MinLSN,
		LostFromTS: a.LostFromTS(), LostToTS: a.LostToTS}
}

// useGeneration reads the generations under the configured checkpoint and points the run
// at the live one: its checkpoint (generations/<n>/) and app_id (<app_id>.g<n>). With
// on_data_loss "resnapshot" and an attempt to open the next generation still open in
// chunked mode, the chunked re-snapshot is opened and the generation committed first
// (openChunkedGeneration); in full mode, the invocation stops there (stop true) with the outcome that hands it to the
// recover steps: the stream reads nothing until the re-snapshot is committed.
//
// A warm process (warmGenerations) takes the generations it read last without a request.
func (r *run) useGeneration(ctx context.Context, res *Result) (stop bool, err error) {
	if g, ok := r.warmGenerations(); ok {
		r.gens, r.warm = g, true
	} else if r.gens, err = r.root.Generations(ctx); err != nil {
		return false, err
	}
	if open := r.gens.Open(); open != nil && r.spec.Resnapshots() && open.Mode == checkpoint.ModeChunked {
		// A chunked re-snapshot a crash left between its attempt and its generation's
		// commit: finish it (the same open, no second stamp), then run the new generation.
		if err := r.openChunkedGeneration(ctx, *open); err != nil {
			return false, err
		}
		if r.gens, err = r.root.Generations(ctx); err != nil {
			return false, err
		}
	}
	n := r.gens.Live.Generation
	res.Generation = n
	if n > 0 {
		spec := *r.spec
		spec.AppID = checkpoint.GenerationAppID(r.root.AppID(), n)
		r.spec = &spec
		r.deps.Checkpoint = r.root.Generation(n)
		r.log = r.log.With("generation", n, "generation_app_id", spec.AppID)
	}
	if open := r.gens.Open(); open != nil && r.spec.Resnapshots() && open.Mode == checkpoint.ModeFull {
		res.Offset = open.From
		res.Outcome, res.Recovery = OutcomeResnapshotRequired, recoveryOf(*open)
		cl, _, err := r.root.ClaimHolder(ctx, open.Generation, open.Attempt)
		if err != nil {
			return false, err
		}
		if cl.Execution != "" {
			res.Outcome, res.Recovery.Execution = OutcomeResnapshotRunning, cl.Execution
		}
		r.log.Warn("a full re-snapshot after data loss is open: the stream waits for it (the recover state machine)",
			"open_generation", open.Generation, "attempt", open.Attempt, "from", open.From.LSN.String(), "execution", cl.Execution)
		return true, nil
	}
	return false, nil
}

// batchFailed handles a batch's error: with on_data_loss "resnapshot" a *DataLossError
// opens the next generation (recoverLoss); anything else is returned as is.
func (r *run) batchFailed(ctx context.Context, res Result, b checkpoint.Batch, err error) (Result, error) {
	var dl *DataLossError
	if !r.spec.Resnapshots() || !errors.As(err, &dl) || dl.Previous != nil || !dl.Outlived.IsZero() {
		return res, err
	}
	return r.recoverLoss(ctx, res, b, dl)
}

// recoverLoss starts the recovery of a loss found by batch b (docs/stream.md "Data loss";
// docs/reference/original-library.md §7.4): the anti-loop interval first (a loss within
// resnapshot_interval_days of the previous re-snapshot or failed attempt is the
// DataLossError, naming it), then the facts rows waiting in the generation's commit files
// are committed, then the attempt to open generation n+1 is recorded under the
// checkpoint (once: a rerun finds it open), with the gap: from b's start, the last offset
// processed, to the retention watermark. A full re-snapshot is the recover steps' work:
// the invocation returns OutcomeResnapshotRequired. A chunked one is opened here at once
// (openChunkedGeneration: nothing is read from the table) and the invocation goes on
// streaming in the new generation, from S (nextGeneration); the backfill completes it.
func (r *run) recoverLoss(ctx context.Context, res Result, b checkpoint.Batch, dl *DataLossError) (Result, error) {
	now := r.opts.Now().UTC()
	if kind, gen, att, at, ok := r.gens.Last(); ok {
		if iv := r.spec.ResnapshotInterval(); now.Sub(at) < iv {
			dl.Previous = &PreviousRecovery{Kind: kind, Generation: gen, Attempt: att, At: at, Interval: iv}
			return res, dl
		}
	}
	// No later batch of this generation will carry the facts rows still waiting in its
	// commit files: they go now, before the attempt that stops the generation is recorded
	// (a rerun then still gets here).
	if err := r.flushFacts(ctx, b.ID-1); err != nil {
		return res, err
	}
	a := checkpoint.Attempt{Generation: r.gens.Live.Generation + 1, Attempt: r.gens.NextAttempt(), Mode: r.spec.Snapshot,
		From: b.Start, MinLSN: dl.MinLSN, CaptureInstance: dl.CaptureInstance, LostToTS: r.watermarkTime(ctx, dl.MinLSN),
		StartedAt: now}
	if err := r.root.OpenAttempt(ctx, a); err != nil {
		return res, fmt.Errorf("record the re-snapshot attempt: %w", err)
	}
	r.log.Warn("data loss: changes the stream had not read were purged; opening the next generation with a re-snapshot",
		"open_generation", a.Generation, "attempt", a.Attempt, "mode", a.Mode, "capture_instance", dl.CaptureInstance,
		"from", a.From.LSN.String(), "min_lsn", dl.MinLSN.String())
	if a.Mode == checkpoint.ModeChunked {
		if err := r.openChunkedGeneration(ctx, a); err != nil {
			return res, err
		}
		return r.nextGeneration(ctx, res)
	}
	res.Offset = a.From
	res.Outcome, res.Recovery = OutcomeResnapshotRequired, recoveryOf(a)
	return res, nil
}

// openChunkedGeneration takes attempt a, a chunked re-snapshot, to its commit point
// (docs/stream.md "Data loss"; docs/reference/original-library.md §7.4, chunked mode): the
// chunked open of generation a.Generation at S (snapshot.OpenChunked with the gap:
// the plans table's open row, then the snapshot_open facts row, kind resnapshot, app_id
// <app_id>.g<n>; nothing else is read from the table), then generations/<n>/generation.json
// with S, the commit point. A crash in between is resumed from the open already recorded
// (the same S). An open chunked snapshot of an earlier generation is abandoned: the
// backfill works on the newest generation's, and downstream never counts one without its
// completion row. The resnapshot facts row is the backfill's, at completion.
func (r *run) openChunkedGeneration(ctx context.Context, a checkpoint.Attempt) error {
	d := withRecovery(snapshot.Deps{Spec: r.rootSpec, Source: r.src, Bronze: r.deps.Bronze, Facts: r.deps.Facts, Plans: r.deps.Plans,
		Options: snapshot.Options{Now: r.opts.Now, Writer: r.opts.Writer, Logger: r.log}}, a)
	off, err := snapshot.OpenChunked(ctx, d)
	if err != nil {
		return fmt.Errorf("open the chunked re-snapshot of generation %d: %w", a.Generation, err)
	}
	genApp := checkpoint.GenerationAppID(r.rootSpec.AppID, a.Generation)
	st := checkpoint.GenerationState{Generation: a.Generation, Attempt: a.Attempt, AppID: genApp, Mode: checkpoint.ModeChunked,
		Snapshot: off, From: a.From, LostFromTS: a.LostFromTS(), LostToTS: a.LostToTS, At: r.opts.Now().UTC()}
	if err := r.root.CommitGeneration(ctx, st); err != nil {
		return err
	}
	r.log.Warn("data loss: generation opened with a chunked re-snapshot; the stream starts at its S, the backfill reads the table",
		"generation", a.Generation, "generation_app_id", genApp, "snapshot", off.LSN.String(), "from", a.From.LSN.String(),
		"lost_from_ts", a.LostFromTS(), "lost_to_ts", a.LostToTS)
	return nil
}

// nextGeneration goes on streaming in the generation just committed, within the same
// invocation and budget (max_seconds from the invocation's start, MaxBatches less those
// done): res's batches and rows are added to what the new generation does.
func (r *run) nextGeneration(ctx context.Context, res Result) (Result, error) {
	opts := r.opts
	if opts.MaxBatches > 0 {
		if res.Batches >= opts.MaxBatches {
			return r.stoppedAtGeneration(ctx, res)
		}
		opts.MaxBatches -= res.Batches
	}
	nr := &run{spec: r.rootSpec, deps: r.rootDeps, rootSpec: r.rootSpec, rootDeps: r.rootDeps, root: r.root, src: r.src, opts: opts,
		log: opts.Logger.With("app_id", r.rootSpec.AppID), began: r.began, cold: true}
	more, err := nr.invoke(ctx)
	more.Batches += res.Batches
	more.Rows += res.Rows
	return more, err
}

// stoppedAtGeneration is res for an invocation whose batch budget ended with the commit of
// a new generation: it reports that generation, at its start.
func (r *run) stoppedAtGeneration(ctx context.Context, res Result) (Result, error) {
	g, err := r.root.Generations(ctx)
	if err != nil {
		return res, err
	}
	res.Generation, res.Offset = g.Live.Generation, g.Live.Snapshot
	return res, nil
}

// warmGenerations is what the configured checkpoint remembers of the generations, when a
// warm process may take it without listing generations/<live+1>/: it read them before with
// no attempt open, and the live generation's checkpoint may resume from its memory
// (checkpoint.Checkpoint.Warm). The run then resumes with ResumeWarm and wins the put of
// the next batch's offsets (warmFence) before it writes anything. A generation opened
// since cannot go unseen: an attempt is recorded only by a stream that found the loss in a
// batch of the live generation, after writing that batch's offsets, so offsets/<next> of
// the live generation was written, and the fence finds it, or a clean-up far ahead
// deleted it, and the facts table shows those batches
// (docs/decisions/0017-warm-resume-by-head.md). ok is false on a run that restarted cold
// or runs a later generation, or when the memory does not answer.
func (r *run) warmGenerations() (checkpoint.Generations, bool) {
	if r.cold {
		return checkpoint.Generations{}, false
	}
	g, ok := r.root.KnownGenerations()
	if !ok || g.Open() != nil || !r.root.Generation(g.Live.Generation).Warm() {
		return checkpoint.Generations{}, false
	}
	return g, true
}

// warmFence is a warm run's first offsets put (batch b, the one after its remembered
// last), with the checks a cold resume makes on files it did not read: bronze must not
// hold b (the bronze snapshot read is the one b commits on), and the put must create
// offsets/<b.ID> (checkpoint.Checkpoint.WriteNextOffsets). restart is true when either
// fails: another process ran since (or the checkpoint lost batches), and the run resumes
// cold (restartCold), which reads the files and decides as any cold process does.
func (r *run) warmFence(ctx context.Context, b checkpoint.Batch) (restart bool, err error) {
	if r.bronzeSnap == nil {
		if r.bronzeSnap, err = r.deps.Bronze.Snapshot(ctx); err != nil {
			return false, fmt.Errorf("read bronze table: %w", err)
		}
	}
	if v, ok := r.bronzeSnap.TxnVersion(r.spec.AppID); ok && v >= b.ID {
		return true, nil
	}
	err = r.deps.Checkpoint.WriteNextOffsets(ctx, b)
	var cs *checkpoint.ConcurrentStreamError
	if errors.As(err, &cs) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	r.warm = false
	return false, nil
}

// restartCold runs the invocation again from the top without the warm memory: the
// generations listed, the checkpoint resumed from its files, checkNotRewound on both
// tables. The warm run wrote nothing before it.
func (r *run) restartCold(ctx context.Context) (Result, error) {
	r.log.Info("warm resume declined: resuming from the checkpoint's files")
	r.spec, r.deps, r.log = r.rootSpec, r.rootDeps, r.opts.Logger.With("app_id", r.rootSpec.AppID)
	r.facts, r.factsSnap, r.handed, r.bronzeSnap = pendingFacts{}, nil, nil, nil
	r.warm, r.cold = false, true
	return r.invoke(ctx)
}
