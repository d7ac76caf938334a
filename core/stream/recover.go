package stream

// The full re-snapshot that opens a new generation after data loss
// (docs/stream.md "Data loss"; docs/operations.md "Data loss, by itself";
// docs/reference/original-library.md §7.4). The stream finds the loss,
// checks the anti-loop interval and records the attempt under the checkpoint
// (checkpoint.Attempt); with full snapshots it then returns
// OutcomeResnapshotRequired and reads nothing more. These steps do the rest, as the
// recover state machine runs them (statemachine/recover.asl.json), so that no stream
// invocation ever reads a whole table:
//
//   - RecoverOpen: the open attempt, if any. A whole snapshot bronze already holds above the gap
//     and not purged is reused (Found: a crash after its commit, before the generation's);
//     else the snapshot steps' Open stamps L before anything is read and writes the
//     snapshot_open row, kind resnapshot, of generation n's app_id <app_id>.g<n>, with the
//     gap (Opened).
//   - snapshot.Plan and snapshot.Read of every range, as for a bootstrap.
//   - RecoverCommit: if L was purged meanwhile (the read outlived the CDC retention) the attempt
//     fails (checkpoint.Failure, which counts for the anti-loop interval) with a
//     *DataLossError advising chunked snapshots, and nothing is committed to
//     bronze, so a failed snapshot is never a rebuild point. Else the snapshot's one
//     bronze commit, then the resnapshot facts row keyed txn(<app_id>#events, n), then
//     generations/<n>/generation.json with a conditional put: the commit point. From then
//     on the stream runs generation n from L.
//
// A crash anywhere repeats the recovery from what the checkpoint and the tables hold,
// without a second snapshot commit or event row: the attempt stays open until its
// generation is committed, the bronze commit and the facts row are txn-keyed, and a
// rerun of RecoverOpen finds the snapshot already committed.
import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Statuses of RecoverOpen.
const (
	// RecoverOpened: L was stamped; plan, read every range, then RecoverCommit.
	RecoverOpened = "opened"
	// RecoverFound: bronze already holds a whole snapshot above the gap, not purged:
	// RecoverCommit it.
	RecoverFound = "found"
	// RecoverNone: no full re-snapshot is open (none was needed, or its generation is committed):
	// nothing to do but run the stream.
	RecoverNone = "none"
	// RecoverBusy: another recover execution holds the open attempt's claim: this one
	// stops, the other goes on.
	RecoverBusy = "busy"
)

// RecoverRequest says which recover execution runs the steps (Step Functions'
// $$.Execution.Name): it claims the open attempt before anything is stamped, so that two
// executions started for one loss never take two snapshots. Takeover claims an attempt
// another execution holds (a person restarting a recovery whose execution failed). An
// empty Execution (mssqlcdc stream, in one process) claims nothing.
type RecoverRequest struct {
	Execution string `json:"execution,omitempty"`
	Takeover  bool   `json:"takeover,omitempty"`
}

// RecoverOpenResult is what RecoverOpen decided, the input of RecoverCommit (and of the snapshot steps' Plan
// and Read, through Snapshot).
type RecoverOpenResult struct {
	Status string `json:"status"`
	// Generation and Attempt are the attempt being taken (the live generation with None).
	Generation int `json:"generation"`
	Attempt    int `json:"attempt,omitempty"`
	// Snapshot is the re-snapshot's offset (Opened, Found).
	Snapshot        lsn.Offset `json:"snapshot"`
	CaptureInstance string     `json:"capture_instance,omitempty"`
	// Switch is set when the snapshot is the one snapshot_on_switch asks for after the
	// switch to a newer capture instance at this LSN (core/stream/switchsnap.go), not a
	// re-snapshot after data loss; Generation is then the live one.
	Switch *lsn.LSN `json:"switch,omitempty"`
	// StartedAt is when Opened stamped L, UTC.
	StartedAt *time.Time `json:"started_at,omitempty"`
	// Execution is the claiming execution (RecoverRequest), Holder the one holding the
	// claim when Busy.
	Execution string `json:"execution,omitempty"`
	Holder    string `json:"holder,omitempty"`
}

// RecoverCommitResult is what RecoverCommit did.
type RecoverCommitResult struct {
	// Generation is the generation the stream now runs; Snapshot where it starts.
	Generation int        `json:"generation"`
	Snapshot   lsn.Offset `json:"snapshot"`
	// Rows are the snapshot's rows (nil when a reused snapshot's count is unknown).
	Rows *int64 `json:"rows"`
	// Version is the bronze version holding the snapshot, -1 when none was committed by
	// this step (reused, empty table, or committed before).
	Version int64 `json:"version"`
}

// recoveryRoot is the stream's configured checkpoint, where the generations live.
func recoveryRoot(d snapshot.Deps) *checkpoint.Checkpoint {
	return checkpoint.New(d.Staging, d.Spec.AppID)
}

// RecoverOpen starts or resumes the open full re-snapshot (see the top of this file). d is the
// snapshot steps' Deps of the table (Staging: the checkpoint root).
func RecoverOpen(ctx context.Context, d snapshot.Deps, req RecoverRequest) (RecoverOpenResult, error) {
	rt := recoveryRoot(d)
	g, err := rt.Generations(ctx)
	if err != nil {
		return RecoverOpenResult{}, err
	}
	a := g.Open()
	if a == nil {
		if d.Spec.Snapshot == config.SnapshotChunked {
			// A chunked switch snapshot is opened by the stream (switchOpenChunked).
			return RecoverOpenResult{Status: RecoverNone, Generation: g.Live.Generation}, nil
		}
		// No re-snapshot after data loss: a switch snapshot, if one is pending.
		return switchOpen(ctx, d, g.Live.Generation, req)
	}
	if a.Mode != checkpoint.ModeFull {
		// A chunked one, which the stream opens itself.
		return RecoverOpenResult{Status: RecoverNone, Generation: g.Live.Generation}, nil
	}
	res := RecoverOpenResult{Generation: a.Generation, Attempt: a.Attempt, Execution: req.Execution}
	if req.Execution != "" {
		cl, ok, err := rt.ClaimAttempt(ctx, a.Generation, a.Attempt, req.Execution, req.Takeover, recoveryNow(d))
		if err != nil {
			return res, err
		}
		if !ok {
			res.Status, res.Holder = RecoverBusy, cl.Execution
			return res, nil
		}
	}
	insts, err := TableInstances(ctx, d.Source, d.Spec.Source.CaptureInstance)
	if err != nil {
		return res, err
	}
	if o, ok, err := snapshot.Find(ctx, d.Source, d.Bronze, d.Facts, d.Spec.Bronze, d.Spec.Source.CaptureInstance); err != nil {
		return res, err
	} else if ok && a.From.LSN.Less(o.LSN) {
		p, err := purged(ctx, d.Source, insts, o.LSN)
		if err != nil {
			return res, err
		}
		if p == nil {
			res.Status, res.Snapshot, res.CaptureInstance = RecoverFound, o, insts[len(insts)-1].Name
			return res, nil
		}
	}
	op, err := snapshot.Open(ctx, withRecovery(d, *a))
	if err != nil {
		return res, err
	}
	res.Snapshot, res.CaptureInstance, res.StartedAt = op.Snapshot, op.CaptureInstance, op.StartedAt
	res.Status = RecoverOpened
	if op.Status == snapshot.Found {
		res.Status = RecoverFound // bronze holds the table at exactly the new stamp
	}
	return res, nil
}

// withRecovery is d with the options of generation a.Generation's re-snapshot.
func withRecovery(d snapshot.Deps, a checkpoint.Attempt) snapshot.Deps {
	d.Options.Recovery = &snapshot.Recovery{Generation: a.Generation,
		AppID:      checkpoint.GenerationAppID(d.Spec.AppID, a.Generation),
		LostFromTS: a.LostFromTS(), LostToTS: a.LostToTS}
	return d
}

// RecoverCommit commits the re-snapshot open describes and, with it, generation
// open.Generation (see the top of this file). A *DataLossError (Outlived) when the
// snapshot's LSN was purged before it could be committed; a *StaleRecoveryError when open is
// not the attempt the checkpoint has open.
func RecoverCommit(ctx context.Context, d snapshot.Deps, open RecoverOpenResult) (RecoverCommitResult, error) {
	rt := recoveryRoot(d)
	g, err := rt.Generations(ctx)
	if err != nil {
		return RecoverCommitResult{}, err
	}
	if open.Status == RecoverNone || open.Status == RecoverBusy {
		return RecoverCommitResult{Generation: g.Live.Generation, Snapshot: g.Live.Snapshot, Version: -1}, nil
	}
	if open.Switch != nil {
		if g.Live.Generation != open.Generation {
			// A generation opened since (data loss): its own snapshot replaces this one.
			return RecoverCommitResult{Generation: g.Live.Generation, Snapshot: g.Live.Snapshot, Version: -1}, nil
		}
		return switchCommit(ctx, d, open)
	}
	if g.Live.Generation >= open.Generation {
		// Committed already (a rerun after the commit point).
		return RecoverCommitResult{Generation: g.Live.Generation, Snapshot: g.Live.Snapshot, Version: -1}, nil
	}
	a := g.Open()
	if a == nil || a.Generation != open.Generation || a.Attempt != open.Attempt || open.Snapshot.LSN.IsZero() {
		return RecoverCommitResult{}, &StaleRecoveryError{Generation: open.Generation, Attempt: open.Attempt}
	}
	if open.Execution != "" {
		// A takeover since this execution's open: the other execution commits.
		if cl, _, err := rt.ClaimHolder(ctx, a.Generation, a.Attempt); err != nil {
			return RecoverCommitResult{}, err
		} else if cl.Execution != open.Execution {
			return RecoverCommitResult{}, &StaleRecoveryError{Generation: open.Generation, Attempt: open.Attempt, Holder: cl.Execution}
		}
	}
	insts, err := TableInstances(ctx, d.Source, d.Spec.Source.CaptureInstance)
	if err != nil {
		return RecoverCommitResult{}, err
	}
	if p, err := purged(ctx, d.Source, insts, open.Snapshot.LSN); err != nil {
		return RecoverCommitResult{}, err
	} else if p != nil {
		if err := rt.FailAttempt(ctx, a.Generation, a.Attempt, checkpoint.Failure{FailedAt: recoveryNow(d), Snapshot: open.Snapshot.LSN,
			Reason: "the full re-snapshot outlived the CDC retention: the changes after its LSN were purged before the stream could read them"}); err != nil {
			return RecoverCommitResult{}, err
		}
		return RecoverCommitResult{}, &DataLossError{CaptureInstance: p.CaptureInstance, From: open.Snapshot.LSN.Next(),
			MinLSN: p.MinLSN, Outlived: open.Snapshot.LSN}
	}
	res := RecoverCommitResult{Generation: a.Generation, Snapshot: open.Snapshot, Version: -1}
	if open.Status == RecoverOpened {
		cr, err := snapshot.Commit(ctx, withRecovery(d, *a), open.Snapshot)
		if err != nil {
			return RecoverCommitResult{}, err
		}
		res.Rows = cr.Rows
		if !cr.Skipped {
			res.Version = cr.Version
		}
	}
	genApp := checkpoint.GenerationAppID(d.Spec.AppID, a.Generation)
	if d.Facts != nil {
		row := facts.ResnapshotRow(genApp, d.Spec.Bronze, open.Snapshot, res.Rows, a.LostFromTS(), a.LostToTS)
		if open.StartedAt != nil && open.Status == RecoverOpened {
			s := open.StartedAt.UTC()
			row.StartedAt, row.DurationMs = &s, facts.Int64(recoveryNow(d).Sub(s).Milliseconds())
		}
		row.WrittenAt = recoveryNow(d)
		if _, err := facts.Append(ctx, d.Facts, facts.TxnEvents(d.Spec.AppID), int64(a.Generation), []facts.Row{row}, d.Options.Writer); err != nil {
			return RecoverCommitResult{}, fmt.Errorf("write resnapshot row: %w", err)
		}
	}
	st := checkpoint.GenerationState{Generation: a.Generation, Attempt: a.Attempt, AppID: genApp, Mode: checkpoint.ModeFull,
		Snapshot: open.Snapshot, From: a.From, LostFromTS: a.LostFromTS(), LostToTS: a.LostToTS, At: recoveryNow(d)}
	if err := rt.CommitGeneration(ctx, st); err != nil {
		return RecoverCommitResult{}, err
	}
	return res, nil
}

// Recover takes the open full re-snapshot in-process, as the recover state machine does
// (mssqlcdc stream, the demo): Open, then Plan, Read of every range and Commit when it
// opened one, Commit alone when it found one. The steps are the machine's, so a Run after a
// failed one converges on the same tables.
func Recover(ctx context.Context, d snapshot.Deps) (RecoverCommitResult, error) {
	open, err := RecoverOpen(ctx, d, RecoverRequest{})
	if err != nil {
		return RecoverCommitResult{}, err
	}
	if open.Status == RecoverOpened {
		plan, err := snapshot.Plan(ctx, d, open.Snapshot)
		if err != nil {
			return RecoverCommitResult{}, err
		}
		if err := snapshot.ReadAll(ctx, d, open.Snapshot, plan); err != nil {
			return RecoverCommitResult{}, err
		}
	}
	return RecoverCommit(ctx, d, open)
}

// purgedAt is a capture instance whose min_lsn is above the LSN after a snapshot.
type purgedAt struct {
	CaptureInstance string
	MinLSN          lsn.LSN
}

// purged reports whether the changes right after l are gone (docs/reference/original-library.md
// §7.4 step 3): next(l) below the min_lsn of the instance that holds it, the newest whose
// start LSN is at or below next(l), else the oldest. nil when they are still there. An
// instance capture has not processed yet holds nothing purged.
func purged(ctx context.Context, src source.Source, insts []source.CaptureInstance, l lsn.LSN) (*purgedAt, error) {
	if len(insts) == 0 {
		return nil, nil
	}
	nxt := l.Next()
	ci := insts[0]
	for _, c := range insts[1:] {
		if !c.StartLSN.IsZero() && c.StartLSN.Compare(nxt) <= 0 {
			ci = c
		}
	}
	min, err := src.MinLSN(ctx, ci.Name)
	var nf *source.CaptureInstanceNotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("min_lsn of %s: %w", ci.Name, err)
	}
	if nxt.Less(min) {
		return &purgedAt{CaptureInstance: ci.Name, MinLSN: min}, nil
	}
	return nil, nil
}

func recoveryNow(d snapshot.Deps) time.Time {
	if d.Options.Now != nil {
		return d.Options.Now().UTC()
	}
	return time.Now().UTC()
}

// StaleRecoveryError: RecoverCommit was given an open that is not the attempt the checkpoint has
// open (another run committed or failed it meanwhile): run the recovery again from Open.
// Holder is set when another execution took the attempt over.
type StaleRecoveryError struct {
	Generation, Attempt int
	Holder              string
}

func (e *StaleRecoveryError) Error() string {
	if e.Holder != "" {
		return fmt.Sprintf("re-snapshot of generation %d (attempt %d) was taken over by recover execution %s: this execution stops, that one commits",
			e.Generation, e.Attempt, e.Holder)
	}
	return fmt.Sprintf("re-snapshot of generation %d (attempt %d) is no longer open in the checkpoint: run the recovery again from its open step",
		e.Generation, e.Attempt)
}
