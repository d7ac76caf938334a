package snapshot

import (
	"context"
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Open starts a full snapshot (docs/design.md §6.2): the mode lock; a snapshot already in
// bronze is returned (Found) and nothing is read (with Resnapshot, only one at the very
// stamp L, when nothing was committed since it); a checkpoint with offsets resumes
// (Resume); else the stamp L is recorded before anything is read, with a snapshot_open
// facts row (mode full) and the staging state of L (Opened).
func Open(ctx context.Context, d Deps) (OpenResult, error) {
	fr := newFactsRead(d.Facts) // the facts table, read once for Open's checks and its row
	if err := modeLock(ctx, d, fr); err != nil {
		return OpenResult{}, err
	}
	name := d.Spec.Source.CaptureInstance
	if sw := d.Options.Switch; sw != nil {
		name = sw.CaptureInstance
	}
	ci, names, err := instances(ctx, d.Source, name)
	if err != nil {
		return OpenResult{}, err
	}
	if !d.Options.resnapshot() {
		if o, ok, err := find(ctx, d.Source, d.Bronze, fr, d.Spec.Bronze, names, nil); err != nil {
			return OpenResult{}, err
		} else if ok {
			return OpenResult{Status: Found, Snapshot: o, CaptureInstance: ci.Name}, nil
		}
		if !d.Options.Standalone {
			if o, ok, err := resumeOffset(ctx, d); err != nil {
				return OpenResult{}, err
			} else if ok {
				return OpenResult{Status: Resume, Snapshot: o, CaptureInstance: ci.Name}, nil
			}
		}
	}
	started := d.now()
	l := d.givenStamp()
	if l.IsZero() {
		if l, err = StampLSN(ctx, d.Source, ci); err != nil {
			return OpenResult{}, err
		}
	} else if err := checkGivenStamp(ctx, d.Source, ci, l); err != nil {
		return OpenResult{}, err
	}
	if d.Options.resnapshot() {
		// Nothing committed since a snapshot bronze holds: the table at l is already there.
		if o, ok, err := find(ctx, d.Source, d.Bronze, fr, d.Spec.Bronze, names, &l); err != nil {
			return OpenResult{}, err
		} else if ok {
			return OpenResult{Status: Found, Snapshot: o, CaptureInstance: ci.Name}, nil
		}
	}
	off, err := stampOffset(ctx, d.Source, l)
	if err != nil {
		return OpenResult{}, err
	}
	if d.Options.Resnapshot && d.Staging != nil && writesBootstrapRow(d) {
		// The start an earlier bootstrap handed the stream is older than this snapshot:
		// until this one hands over its own, the stream finds it in the facts table.
		if err := checkpoint.New(d.Staging, d.Spec.AppID).DropStarts(ctx); err != nil {
			return OpenResult{}, err
		}
	}
	if d.Facts != nil && !d.Options.Standalone {
		if err := openRow(ctx, d, fr, off); err != nil {
			return OpenResult{}, err
		}
	}
	st := openState{AppID: d.Spec.AppID, CaptureInstance: ci.Name, Snapshot: off, StartedAt: started}
	if err := putJSON(ctx, d.Staging, openKey(l), st); err != nil {
		return OpenResult{}, err
	}
	return OpenResult{Status: Opened, Snapshot: off, CaptureInstance: ci.Name, StartedAt: &started}, nil
}

// openRow writes the snapshot_open row of a full snapshot at off. The original keys a
// full snapshot's open row by nothing (one per run); here it is keyed
// txn(<app_id>#open.<L>, 0), which is still one per run (each run stamps its own L) and
// keeps a retried Open from writing two.
func openRow(ctx context.Context, d Deps, fr *factsRead, off lsn.Offset) error {
	kind := facts.KindBootstrap
	if d.Options.Resnapshot {
		kind = facts.KindResnapshot
	}
	appID := d.Spec.AppID
	detail := facts.OpenDetail{Mode: facts.ModeFull, Kind: kind}
	if rc := d.Options.Recovery; rc != nil {
		appID = rc.AppID
		detail = facts.OpenDetail{Mode: facts.ModeFull, Kind: facts.KindResnapshot, Generation: rc.Generation,
			LostFromTS: facts.TimeText(rc.LostFromTS), LostToTS: facts.TimeText(rc.LostToTS)}
	}
	if sw := d.Options.Switch; sw != nil {
		appID = sw.AppID
		detail = facts.OpenDetail{Mode: facts.ModeFull, Kind: facts.KindSwitch, Generation: sw.Generation}
	}
	r := facts.SnapshotRow(appID, d.Spec.Bronze, facts.EventSnapshotOpen, off)
	r.Detail = detail.String()
	r.WrittenAt = d.now()
	snap, err := fr.get(ctx)
	if err != nil {
		return err
	}
	if _, err := facts.AppendOn(ctx, snap, facts.TxnOpen(appID, off.LSN), 0, []facts.Row{r}, d.Options.Writer); err != nil {
		return fmt.Errorf("write snapshot_open row: %w", err)
	}
	return nil
}

// modeLock refuses a full snapshot while a chunked one of its generation is open
// (docs/design.md §5 invariant 7; docs/snapshots.md "One mode per run"): the bootstrap's
// generation 0, or the generation a re-snapshot (Options.Recovery) opens, whose app_id is
// <app_id>.g<n>. A chunked snapshot of an earlier generation does not count: the loss that
// opens the new generation abandoned it.
func modeLock(ctx context.Context, d Deps, fr *factsRead) error {
	if d.Facts == nil {
		return nil
	}
	appID := d.Spec.AppID
	if rc := d.Options.Recovery; rc != nil {
		appID = rc.AppID
	}
	snap, err := fr.get(ctx)
	if err != nil {
		return err
	}
	rows, err := facts.SnapshotEventsIn(ctx, snap, appID)
	if err != nil {
		return fmt.Errorf("read open snapshots: %w", err)
	}
	for _, o := range facts.OpenSnapshots(rows, appID, lsn.Zero) {
		if o.Mode != facts.ModeFull {
			return &ModeLockError{AppID: appID, Snapshot: o.S, Mode: o.Mode, Generation: o.Detail.Generation, Refused: facts.ModeFull}
		}
	}
	return nil
}

// resumeOffset is where the stream's checkpoint resumes: the last committed batch's end,
// else the pending batch's start; ok false on a fresh checkpoint.
func resumeOffset(ctx context.Context, d Deps) (lsn.Offset, bool, error) {
	st, err := checkpoint.New(d.Staging, d.Spec.AppID).Resume(ctx)
	if err != nil {
		return lsn.Offset{}, false, fmt.Errorf("read checkpoint: %w", err)
	}
	switch {
	case st.Last != nil:
		return st.Last.End, true, nil
	case st.Pending != nil:
		return st.Pending.Start, true, nil
	}
	return lsn.Offset{}, false, nil
}

// Find returns the newest complete snapshot of the table of captureInstance: a whole
// snapshot in bronze, under any of the table's capture instances (names ignoring case):
// operation-0 rows without a _chunk, or an empty table's snapshot commit; or, given the
// facts table factsT (nil: none), a bootstrap or resnapshot row of bronze table target
// there, which is where a chunked snapshot is complete (its waves carry a _chunk, and an
// empty table's has no rows at all; docs/bronze.md "The current table"). The stream calls
// it on a fresh checkpoint with bootstrap=true and starts after the snapshot's LSN; a full
// snapshot's Open returns it instead of reading the table again.
func Find(ctx context.Context, src source.Source, bronze, factsT *deltalog.Table, target, captureInstance string) (lsn.Offset, bool, error) {
	_, names, err := instances(ctx, src, captureInstance)
	if err != nil {
		return lsn.Offset{}, false, err
	}
	return find(ctx, src, bronze, newFactsRead(factsT), target, names, nil)
}

// find returns the newest complete snapshot (Find), or with at the one at exactly *at, if
// any. Its commit time is its rows' newest _commit_ts, else (an empty table's snapshot, a
// chunked one) the source's commit time of its LSN.
func find(ctx context.Context, src source.Source, bronze *deltalog.Table, fr *factsRead, target string, names []string, at *lsn.LSN) (lsn.Offset, bool, error) {
	found, err := wholeSnapshots(ctx, bronze, names)
	if err != nil {
		return lsn.Offset{}, false, fmt.Errorf("look for a snapshot in bronze: %w", err)
	}
	if fr != nil {
		done, err := completedSnapshots(ctx, fr, target)
		if err != nil {
			return lsn.Offset{}, false, err
		}
		for _, l := range done {
			found = append(found, WholeSnapshot{LSN: l})
		}
	}
	var best *WholeSnapshot
	for i, f := range found {
		if at != nil && f.LSN != *at {
			continue
		}
		if best == nil || best.LSN.Less(f.LSN) || (best.LSN == f.LSN && best.CommitTS == nil) {
			best = &found[i]
		}
	}
	if best == nil {
		return lsn.Offset{}, false, nil
	}
	if best.CommitTS != nil {
		return lsn.At(best.LSN, *best.CommitTS), true, nil
	}
	off, err := stampOffset(ctx, src, best.LSN)
	if err != nil {
		return lsn.Offset{}, false, err
	}
	return off, true, nil
}

// completedSnapshots are the LSNs of target's complete snapshots in the facts table
// (facts.CompletedSnapshots).
func completedSnapshots(ctx context.Context, fr *factsRead, target string) ([]lsn.LSN, error) {
	snap, err := fr.get(ctx)
	if err != nil {
		return nil, err
	}
	texts, err := facts.CompletedSnapshots(ctx, snap, target)
	if err != nil {
		return nil, fmt.Errorf("look for a complete snapshot in the facts table: %w", err)
	}
	out := make([]lsn.LSN, 0, len(texts))
	for _, t := range texts {
		l, err := lsn.Parse(t)
		if err != nil {
			return nil, fmt.Errorf("facts table: snapshot LSN %q: %w", t, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// factsRead is the facts table read at most once, for the checks of one step and the row it
// appends (an append on a state read moments before still detects others' commits).
type factsRead struct {
	t    *deltalog.Table
	snap *deltalog.Snapshot
}

// newFactsRead is t read at most once; nil when t is nil (no facts table).
func newFactsRead(t *deltalog.Table) *factsRead {
	if t == nil {
		return nil
	}
	return &factsRead{t: t}
}

func (f *factsRead) get(ctx context.Context) (*deltalog.Snapshot, error) {
	if f.snap == nil {
		s, err := f.t.Snapshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the facts table: %w", err)
		}
		f.snap = s
	}
	return f.snap, nil
}
