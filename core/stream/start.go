package stream

import (
	"context"
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// startProblem is a *config.ConfigError on options.startingLsn.
func startProblem(format string, args ...any) error {
	return &config.ConfigError{Problems: []config.Problem{{Field: "options.startingLsn", Reason: fmt.Sprintf(format, args...)}}}
}

// checkStartingLSN refuses an explicit startingLsn the stream cannot start after, before
// anything is written (docs/stream.md "Where a fresh checkpoint starts"):
//
//   - below min_lsn − 1 of the oldest capture instance: the changes right after it are
//     not in the change table (removed by cleanup, or never captured: an LSN of another
//     database, or a typo such as 0x12). With failOnDataLoss=false it is taken and the
//     first batch skips to min_lsn with a data_skipped row, as for any purged range.
//   - above max_lsn (or above the newest instance's start LSN while capture has not run):
//     this database has not written that LSN yet.
//
// Both are a *config.ConfigError on options.startingLsn saying what to set instead.
func (r *run) checkStartingLSN(ctx context.Context, insts []source.CaptureInstance, at, maxLSN lsn.LSN) error {
	oldest, newest := insts[0], insts[len(insts)-1]
	min, err := r.src.MinLSN(ctx, oldest.Name)
	if err != nil {
		return r.sourceErr("min_lsn", err)
	}
	if !min.IsZero() && at.Next().Less(min) && r.spec.FailsOnDataLoss() {
		return startProblem("%s is below min_lsn − 1 (%s) of capture instance %s: the changes after it are not in the change table "+
			"(CDC cleanup removed them, or it is not an LSN of this database's capture: a typo or another server). "+
			"Set startingLsn to earliest (from min_lsn), to an LSN at or above %s that you recorded, or use bootstrap: true; "+
			"or set failOnDataLoss=false to start at min_lsn and record the gap",
			at, min.Prev(), oldest.Name, min.Prev())
	}
	upper := maxLSN
	if upper.IsZero() || upper.Less(newest.StartLSN) {
		upper = newest.StartLSN
	}
	if !upper.IsZero() && upper.Less(at) {
		return startProblem("%s is above the source's max_lsn %s: this database has not written it yet (an LSN of another server, or a typo). "+
			"Set startingLsn to latest, earliest or an LSN this server recorded (SELECT CONVERT(varchar(22), sys.fn_cdc_get_max_lsn(), 1))",
			at, upper)
	}
	return nil
}

// startingOf is the spec's start as batch 0 records it (checkpoint.Batch.Starting):
// "earliest", "latest" or the LSN's canonical form; "" with bootstrap and in a generation
// opened after data loss (it starts at its re-snapshot).
func (r *run) startingOf() string {
	if r.spec.Bootstrap || r.gens.Live.Generation > 0 {
		return ""
	}
	kind, at := r.spec.Starting()
	if kind == "lsn" {
		return at.String()
	}
	return kind
}

// retakeFirst applies a startingLsn changed since a fresh checkpoint's batch 0 was planned,
// while that batch has committed nowhere (no bronze txn, no facts txn of the app_id): its
// offsets are replaced by a batch 0 from the new start, checked as a fresh start is. Once
// batch 0 is in bronze or facts its range stands (a warning says so: a different start
// needs a new checkpoint and app_id). A pending batch 0 of an older version without
// Starting is retaken only when the spec gives an LSN other than its start. A generation
// opened after data loss starts at its re-snapshot whatever startingLsn says: its batch 0
// is never retaken.
func (r *run) retakeFirst(ctx context.Context, st *checkpoint.State, insts []source.CaptureInstance, target lsn.LSN) error {
	p := st.Pending
	if p == nil || st.Last != nil || p.ID != 0 || r.spec.Bootstrap || r.gens.Live.Generation > 0 {
		return nil
	}
	want := r.startingOf()
	switch {
	case p.Starting == want:
		return nil
	case p.Starting == "":
		if kind, at := r.spec.Starting(); kind != "lsn" || at == p.Start.LSN {
			return nil
		}
	}
	committed, err := r.firstCommitted(ctx)
	if err != nil {
		return err
	}
	if committed {
		r.log.Warn("startingLsn changed, but batch 0 is already committed: its start stands; a different start needs a new checkpoint and app_id",
			"starting_was", p.Starting, "starting_now", want, "start", p.Start.String())
		return nil
	}
	start, err := r.initialOffset(ctx, insts, target)
	if err != nil {
		return err
	}
	b := checkpoint.Batch{ID: 0, Start: start, End: start, Starting: want}
	if end, ok, err := r.planEnd(ctx, start.LSN, target); err != nil {
		return err
	} else if ok {
		if b.End, err = r.offsetAt(ctx, end); err != nil {
			return err
		}
	}
	if err := r.deps.Checkpoint.RetakeFirst(ctx, b); err != nil {
		return err
	}
	r.log.Info("startingLsn changed before batch 0 committed: batch 0 starts from the new start",
		"starting_was", p.Starting, "starting_now", want, "start_was", p.Start.String(), "start", start.String())
	st.Pending = &b
	return nil
}

// firstCommitted reports whether bronze or the facts table holds a txn of this app_id (a
// batch committed, even partly).
func (r *run) firstCommitted(ctx context.Context) (bool, error) {
	snap, err := r.deps.Bronze.Snapshot(ctx)
	if err != nil {
		return false, fmt.Errorf("read bronze: %w", err)
	}
	if _, ok := snap.TxnVersion(r.spec.AppID); ok {
		return true, nil
	}
	fs, err := r.deps.Facts.Snapshot(ctx)
	if err != nil {
		return false, fmt.Errorf("read facts table: %w", err)
	}
	_, ok := fs.TxnVersion(facts.TxnFacts(r.spec.AppID))
	return ok, nil
}

// handedStart is the start a bootstrap handed st (checkpoint.Start) when the run may take
// it: a fresh checkpoint of generation 0 with bootstrap=true. nil otherwise: the start is
// then looked for as before (bootstrapOffset reads the facts table).
//
// The file lives in offsets/, so a checkpoint that was reset loses it with its offsets, and
// a checkpoint that has it and no batch has run no batch since the bootstrap. The
// rewind check then needs no facts read: a restored copy of the checkpoint from before
// its first batch is caught by bronze, which the first batch opens anyway and which holds
// the txn of every batch that appended rows (checkNotRewound); batches that appended
// nothing are run again from the same snapshot, losing nothing.
func (r *run) handedStart(st checkpoint.State) *checkpoint.Start {
	if !st.Fresh() || st.Start == nil || !r.spec.Bootstrap || r.gens.Live.Generation > 0 {
		return nil
	}
	return st.Start
}

// handedOffset is batch 0's start from the handed start: the snapshot's LSN with its
// commit time, as bootstrapOffset gives it.
func (r *run) handedOffset(ctx context.Context) (lsn.Offset, error) {
	return r.offsetAt(ctx, r.handed.Snapshot.LSN)
}

// bronze is the bronze snapshot a batch starts from: the one checkNotRewound read in this
// invocation (taken once), else the table's latest. A snapshot read moments
// before is as good a base as a fresh one: the commit detects others' commits since.
func (r *run) bronze(ctx context.Context) (*deltalog.Snapshot, error) {
	if s := r.bronzeSnap; s != nil {
		r.bronzeSnap = nil
		return s, nil
	}
	return r.deps.Bronze.Snapshot(ctx)
}
