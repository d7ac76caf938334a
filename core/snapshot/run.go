package snapshot

import (
	"context"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
)

// Close is the offset the stream starts from: the snapshot's {lsn, commit_ts}, or the
// checkpoint's latest offset when Open resumed. The stream, finding its checkpoint fresh
// with bootstrap=true, finds the same snapshot in bronze (Find) and reads every commit
// after its LSN. Nothing is read or written.
func Close(open OpenResult) lsn.Offset { return open.Snapshot }

// Run takes (or finds) the snapshot in-process, as the bootstrap state machine does:
// Open, then Plan, Read of every range (numPartitions at once) and Commit when it opened
// a snapshot, Commit alone when it found one, and Close. Each step is the same as the
// machine's, so a Run after a failed one converges on the same tables. The steps of one Run
// read each staging file from the store at most once (runStaging), and bronze and the
// facts table once: a later step commits on the state an earlier one read or committed
// (Deps.bronzeState).
func Run(ctx context.Context, d Deps) (lsn.Offset, error) {
	d.sameProcess = true
	if d.Staging != nil {
		d.Staging = newRunStaging(d.Staging)
	}
	open, err := Open(ctx, d)
	if err != nil {
		return lsn.Offset{}, err
	}
	switch open.Status {
	case Opened:
		plan, err := Plan(ctx, d, open.Snapshot)
		if err != nil {
			return lsn.Offset{}, err
		}
		rd := d
		rd.runSchema = &schemaMemo{}
		if err := ReadAll(ctx, rd, open.Snapshot, plan); err != nil {
			return lsn.Offset{}, err
		}
		if _, err := Commit(ctx, d, open.Snapshot); err != nil {
			return lsn.Offset{}, err
		}
	case Found:
		if _, err := Commit(ctx, d, open.Snapshot); err != nil {
			return lsn.Offset{}, err
		}
	}
	return Close(open), nil
}

// ReadAll runs Read for every range of plan, plan.NumPartitions at once (ingest.Parallel,
// as the machine's Map does with MaxConcurrency); the first error cancels the others.
func ReadAll(ctx context.Context, d Deps, snap lsn.Offset, plan PlanResult) error {
	if p := d.Options.Progress; p != nil {
		d.Options.Progress = func(rp ReadProgress) {
			rp.EstimatedRows = plan.EstimatedRows
			p(rp)
		}
	}
	return ingest.Parallel(ctx, len(plan.Ranges), plan.NumPartitions, func(ctx context.Context, i int) error {
		_, err := Read(ctx, d, snap, plan.Ranges[i])
		return err
	})
}
