package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
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
// on_data_loss "resnapshot" and an attempt to open the next generation still open in full
// mode, the invocation stops there (stop true) with the outcome that hands it to the
// recover steps: the stream reads nothing until the re-snapshot is committed.
func (r *run) useGeneration(ctx context.Context, res *Result) (stop bool, err error) {
	if r.gens, err = r.root.Generations(ctx); err != nil {
		return false, err
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
// the invocation returns OutcomeResnapshotRequired.
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
	res.Offset = a.From
	res.Outcome, res.Recovery = OutcomeResnapshotRequired, recoveryOf(a)
	return res, nil
}
