package stream

// snapshot_on_switch (docs/stream.md "Schema changes"; docs/reference/original-library.md
// §8): after the first batch that reads a newer capture instance, a whole snapshot of the
// table is appended to bronze, so that rows unchanged since the switch carry the columns
// only the newer instance captures. No stream invocation reads a whole table: the switch
// batch records the switch under its generation's checkpoint (checkpoint.RecordSwitch,
// before its commits/<n>), and every invocation while that snapshot is not committed
// returns OutcomeSwitchSnapshotRequired (OutcomeSwitchSnapshotRunning once a recover
// execution holds it) after streaming as usual: the stream does not wait, since the
// snapshot at its stamp L replaces, for downstream rebuilds, everything at or before L
// (docs/bronze.md). The recover steps take it, as they take a full re-snapshot after data
// loss (the same state machine, the same in-process Recover):
//
//   - RecoverOpen, when no re-snapshot after data loss is open, finds the pending switch,
//     claims it, chooses the stamp L once (checkpoint.StampSwitch: a rerun reads the same
//     L) and opens the snapshot at L with the newer instance's columns: snapshot_open row
//     of kind switch, keyed by L, so written once.
//   - snapshot.Plan and snapshot.Read of every range, as for a bootstrap.
//   - RecoverCommit: the snapshot's one bronze commit (txn <app_id>#full.<L>), its
//     bootstrap facts row (txn <app_id>#switch.<S>), then switches/<S>/done.json.
//
// A crash anywhere repeats the steps from what the checkpoint and the tables hold, with
// one stamp, one bronze commit and one row of each kind.
//
// With snapshot "chunked" nothing waits for a table read, so the stream takes it all
// itself, at the end of every invocation while the switch is pending (switchOpenChunked),
// as it opens a chunked re-snapshot after data loss: the stamp L chosen once
// (switches/<S>/stamp.json), the chunked open of kind switch at L in the live generation
// (snapshot.OpenChunked with Options.Switch: the mode lock on the generation's app_id, the
// plans table's switch_open row, the snapshot_open row; nothing read from the table), then
// switches/<S>/done.json: the switch is handed to the backfill. The stream has read up to
// at most L and goes on from where it is, so every change after L reaches bronze; the
// backfill's waves read the newer instance's columns and, at the last chunk, write the
// bootstrap row of the switch (txn <app_id>#switch.<S>). Until then the rebuild point
// stays the previous complete snapshot (docs/bronze.md). No recover machine takes part.
import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// OutcomeSwitchSnapshotRequired is Result.Outcome while the whole snapshot
// snapshot_on_switch asks for after a switch to a newer capture instance is not committed
// and no recover execution holds it: the recover state machine (or mssqlcdc stream,
// in-process) takes it. The stream streamed as usual.
const OutcomeSwitchSnapshotRequired = "switch_snapshot_required"

// OutcomeSwitchSnapshotRunning is Result.Outcome while a recover execution holds the
// switch snapshot: nothing is asked again.
const OutcomeSwitchSnapshotRunning = "switch_snapshot_running"

// SwitchSnapshot is Result.Switch: the switch whose snapshot is pending.
type SwitchSnapshot struct {
	// S is the newer instance's start LSN; From and To the instances.
	S    lsn.LSN `json:"s"`
	From string  `json:"from"`
	To   string  `json:"to"`
	// Execution is the recover execution holding it ("" while none does).
	Execution string `json:"execution,omitempty"`
}

// switchOutcome sets res's outcome when a switch snapshot of the live generation is
// pending (see the top of this file); with snapshot "chunked" it opens it instead
// (switchOpenChunked) and sets none.
func (r *run) switchOutcome(ctx context.Context, res *Result) error {
	if r.rootSpec.Snapshot == config.SnapshotChunked {
		return r.switchOpenChunked(ctx, res.Generation)
	}
	sw, err := r.deps.Checkpoint.PendingSwitch(ctx)
	if err != nil || sw == nil {
		return err
	}
	cl, err := r.deps.Checkpoint.SwitchClaimHolder(ctx, sw.S)
	if err != nil {
		return err
	}
	res.Outcome = OutcomeSwitchSnapshotRequired
	if cl.Execution != "" {
		res.Outcome = OutcomeSwitchSnapshotRunning
	}
	res.Switch = &SwitchSnapshot{S: sw.S, From: sw.From, To: sw.To, Execution: cl.Execution}
	r.log.Warn("snapshot_on_switch: a whole snapshot with the newer capture instance's columns is pending (the recover state machine takes it)",
		"s", sw.S.String(), "from", sw.From, "to", sw.To, "execution", cl.Execution)
	return nil
}

// switchOpenChunked opens the pending switch snapshot of generation n, if any, in chunked
// mode (see the top of this file). A crash anywhere is finished by the next invocation:
// the stamp is read back, the open rows are keyed by it, done.json is written once.
func (r *run) switchOpenChunked(ctx context.Context, n int) error {
	cp := r.root.Generation(n)
	sw, err := cp.PendingSwitch(ctx)
	if err != nil || sw == nil {
		return err
	}
	st, err := switchStamp(ctx, cp, r.src, *sw, r.opts.Now().UTC())
	if err != nil {
		return err
	}
	d := withSwitch(snapshot.Deps{Spec: r.rootSpec, Source: r.src, Bronze: r.rootDeps.Bronze, Facts: r.rootDeps.Facts, Plans: r.rootDeps.Plans,
		Options: snapshot.Options{Now: r.opts.Now, Writer: r.opts.Writer, Logger: r.log}}, n, *sw, st.Snapshot)
	off, err := snapshot.OpenChunked(ctx, d)
	if err != nil {
		return fmt.Errorf("open the chunked switch snapshot after the switch at %s: %w", sw.S, err)
	}
	if err := cp.CommitSwitch(ctx, sw.S, checkpoint.SwitchDone{Snapshot: off, At: r.opts.Now().UTC()}); err != nil {
		return err
	}
	r.log.Warn("snapshot_on_switch: a chunked snapshot with the newer capture instance's columns is open; the backfill reads it",
		"s", sw.S.String(), "from", sw.From, "to", sw.To, "snapshot", off.LSN.String(), "generation", n)
	return nil
}

// switchStamp is the stamp of the switch snapshot sw under cp: the one recorded, else the
// newer instance's stamp LSN now, recorded once (a rerun reads the same).
func switchStamp(ctx context.Context, cp *checkpoint.Checkpoint, src source.Source, sw checkpoint.Switch, now time.Time) (checkpoint.SwitchStamp, error) {
	st, ok, err := cp.SwitchStampOf(ctx, sw.S)
	if err != nil || ok {
		return st, err
	}
	insts, err := TableInstances(ctx, src, sw.To)
	if err != nil {
		return st, err
	}
	l, err := snapshot.StampLSN(ctx, src, insts[len(insts)-1])
	if err != nil {
		return st, err
	}
	return cp.StampSwitch(ctx, sw.S, checkpoint.SwitchStamp{Snapshot: l, At: now})
}

// withSwitch is d with the options of the switch snapshot sw of generation n at stamp l.
func withSwitch(d snapshot.Deps, n int, sw checkpoint.Switch, l lsn.LSN) snapshot.Deps {
	spec := *d.Spec
	spec.Options.SnapshotLsn = l.String()
	d.Spec = &spec
	d.Options.Switch = &snapshot.Switch{CaptureInstance: sw.To, From: sw.From, S: sw.S, Generation: n,
		AppID: checkpoint.GenerationAppID(d.Spec.AppID, n)}
	return d
}

// switchOpen is RecoverOpen for a pending switch snapshot of the live generation n (none:
// RecoverNone).
func switchOpen(ctx context.Context, d snapshot.Deps, n int, req RecoverRequest) (RecoverOpenResult, error) {
	cp := recoveryRoot(d).Generation(n)
	none := RecoverOpenResult{Status: RecoverNone, Generation: n}
	sw, err := cp.PendingSwitch(ctx)
	if err != nil || sw == nil {
		return none, err
	}
	s := sw.S
	res := RecoverOpenResult{Generation: n, Switch: &s, CaptureInstance: sw.To, Execution: req.Execution}
	if req.Execution != "" {
		cl, ok, err := cp.ClaimSwitch(ctx, s, req.Execution, req.Takeover, recoveryNow(d))
		if err != nil {
			return res, err
		}
		if !ok {
			res.Status, res.Holder = RecoverBusy, cl.Execution
			return res, nil
		}
	}
	st, err := switchStamp(ctx, cp, d.Source, *sw, recoveryNow(d))
	if err != nil {
		return res, err
	}
	op, err := snapshot.Open(ctx, withSwitch(d, n, *sw, st.Snapshot))
	if err != nil {
		return res, err
	}
	res.Snapshot, res.StartedAt = op.Snapshot, op.StartedAt
	res.Status = RecoverOpened
	if op.Status == snapshot.Found {
		res.Status = RecoverFound // committed by an earlier run
	}
	return res, nil
}

// switchDetail is the switch snapshot's bootstrap row's detail.
type switchDetail struct {
	Switch string `json:"switch"`
	S      string `json:"s"`
}

// switchCommit is RecoverCommit for a switch snapshot open describes.
func switchCommit(ctx context.Context, d snapshot.Deps, open RecoverOpenResult) (RecoverCommitResult, error) {
	n, s := open.Generation, *open.Switch
	res := RecoverCommitResult{Generation: n, Snapshot: open.Snapshot, Version: -1}
	cp := recoveryRoot(d).Generation(n)
	sw, err := cp.PendingSwitch(ctx)
	if err != nil {
		return res, err
	}
	if sw == nil || sw.S != s {
		return res, nil // committed already (a rerun after done.json)
	}
	if open.Execution != "" {
		if cl, err := cp.SwitchClaimHolder(ctx, s); err != nil {
			return res, err
		} else if cl.Execution != open.Execution {
			return res, &StaleRecoveryError{Generation: n, Holder: cl.Execution}
		}
	}
	st, ok, err := cp.SwitchStampOf(ctx, s)
	if err != nil {
		return res, err
	}
	if !ok || st.Snapshot != open.Snapshot.LSN {
		return res, &StaleRecoveryError{Generation: n}
	}
	dd := withSwitch(d, n, *sw, st.Snapshot)
	if open.Status == RecoverOpened {
		cr, err := snapshot.Commit(ctx, dd, open.Snapshot)
		if err != nil {
			return res, err
		}
		res.Rows = cr.Rows
		if !cr.Skipped {
			res.Version = cr.Version
		}
	}
	if d.Facts != nil {
		appID := dd.Options.Switch.AppID
		row := facts.SnapshotRow(appID, d.Spec.Bronze, facts.EventBootstrap, open.Snapshot)
		row.Rows = res.Rows
		var detail strings.Builder
		enc := json.NewEncoder(&detail)
		enc.SetEscapeHTML(false) // "->" as written, as capture_instance_switched's detail
		_ = enc.Encode(switchDetail{Switch: sw.From + " -> " + sw.To, S: s.String()})
		row.Detail = strings.TrimSpace(detail.String())
		if open.StartedAt != nil && open.Status == RecoverOpened {
			at := open.StartedAt.UTC()
			row.StartedAt, row.DurationMs = &at, facts.Int64(recoveryNow(d).Sub(at).Milliseconds())
		}
		row.WrittenAt = recoveryNow(d)
		if _, err := facts.Append(ctx, d.Facts, facts.TxnSwitch(appID, s), 0, []facts.Row{row}, d.Options.Writer); err != nil {
			return res, fmt.Errorf("write the switch snapshot's bootstrap row: %w", err)
		}
	}
	if err := cp.CommitSwitch(ctx, s, checkpoint.SwitchDone{Snapshot: open.Snapshot, At: recoveryNow(d)}); err != nil {
		return res, err
	}
	return res, nil
}
