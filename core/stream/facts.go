package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// pendingFacts is what a stream knows of its facts rows not yet in the facts table
// (docs/decisions/0013-facts-rows-deferred.md): they wait in the checkpoint's commit
// files of the batches after through.
type pendingFacts struct {
	// known is false when the last commit file could not be read: the next batch then
	// commits its rows, and any pending ones, at once.
	known bool
	// through is the newest batch whose rows are in the facts table (-1: none).
	through int64
	// since is when the oldest pending batch was committed (nil: none pending).
	since *time.Time
}

// pendingFromState reads the pending rows' bookkeeping from the resumed checkpoint.
func pendingFromState(st checkpoint.State) pendingFacts {
	switch {
	case st.LastCommit != nil:
		return pendingFacts{known: true, through: st.LastCommit.FactsThroughBatch(), since: st.LastCommit.FactsPendingSince}
	case st.Last == nil:
		return pendingFacts{known: true, through: -1}
	default:
		return pendingFacts{through: -1}
	}
}

// due reports whether batch n commits the facts rows: when it has event rows (snapshot
// and schema bookkeeping is never late), when nothing is known or, unless firstWaits,
// nothing was ever committed (a new stream shows its first row at once), when FactsEvery
// batches are pending with it, or when the oldest pending one has waited FactsMaxDelay.
//
// firstWaits is true for a stream that starts at a snapshot (bootstrap, or a generation
// opened after data loss): its first rows wait like the others. A stream that starts at
// startingLsn commits its first row at once, since that row is what tells a deleted
// checkpoint (which would start again from startingLsn, "latest" included) from a new
// one when its first batches append nothing to bronze; a stream that starts at a snapshot
// starts there again, losing nothing, and any batch that appended rows is in bronze's txn
// (checkNotRewound).
func (p pendingFacts) due(n int64, events, firstWaits bool, now time.Time, every int, maxDelay time.Duration) bool {
	return events || !p.known || (p.through < 0 && !firstWaits) || n-p.through >= int64(every) ||
		(p.since != nil && now.Sub(*p.since) >= maxDelay)
}

// firstRowWaits reports whether the first facts rows of a stream with spec in generation
// gen wait like the others (pendingFacts.due's firstWaits): a stream that starts at a
// whole snapshot (a full bootstrap, or a full re-snapshot's generation) loses nothing by
// it. With chunked snapshots they do not wait: the backfill's min_headroom_hours pause
// reads the stream's newest batch row (snapshot.StateWaitingMetrics until there is one),
// so a deferred first row would hold every wave for FactsEvery batches.
func firstRowWaits(spec config.Spec, gen int) bool {
	return (spec.Bootstrap || gen > 0) && spec.Snapshot != config.SnapshotChunked
}

// factsRows disposes of batch n's facts rows (the batch row and its events) and fills in
// the facts fields of its commit file m: either they and the pending rows of earlier
// batches are committed to the facts table now, in one commit keyed
// txn(<app_id>#facts, n), or they are kept in m to wait (docs/decisions/0013-facts-rows-deferred.md).
// It returns the bookkeeping once m is written.
func (r *run) factsRows(ctx context.Context, m *checkpoint.Commit, rows []facts.Row, events bool) (pendingFacts, error) {
	p := r.facts
	written := rows[0].WrittenAt
	firstWaits := firstRowWaits(*r.spec, r.gens.Live.Generation)
	if !p.due(m.ID, events, firstWaits, written, r.opts.FactsEvery, r.opts.FactsMaxDelay) {
		data, err := json.Marshal(rows)
		if err != nil {
			return p, fmt.Errorf("encode facts rows of batch %d: %w", m.ID, err)
		}
		if p.since == nil {
			p.since = &written
		}
		through := p.through
		m.FactsVersion, m.FactsThrough, m.FactsPendingSince, m.FactsRows = -1, &through, p.since, data
		return p, nil
	}

	snap, all, err := r.waitingFacts(ctx, m.ID-1)
	if err != nil {
		return p, err
	}
	all = append(all, rows...)
	res, err := facts.AppendOn(ctx, snap, facts.TxnFacts(r.spec.AppID), m.ID, all, r.opts.Writer)
	if err != nil {
		return p, err
	}
	through := m.ID
	m.FactsVersion, m.FactsThrough = res.Version, &through
	return pendingFacts{known: true, through: m.ID}, nil
}

// waitingFacts reads the facts table and the rows still waiting in the commit files of
// the batches up to last: those after the facts table's own record (a run that died after
// its facts commit may have committed more than the commit files say) and after what the
// commit files say is committed (older batches' files may be cleaned up).
//
// The facts table is the snapshot checkNotRewound read in this invocation (taken once),
// else the table's latest: as with bronze (run.bronze), a snapshot read moments before is
// as good a base, the commit detecting others' commits since (a txn of the app_id
// committed meanwhile skips the commit).
func (r *run) waitingFacts(ctx context.Context, last int64) (*deltalog.Snapshot, []facts.Row, error) {
	snap := r.factsSnap
	r.factsSnap = nil
	if snap == nil {
		var err error
		if snap, err = r.deps.Facts.Snapshot(ctx); err != nil {
			return nil, nil, fmt.Errorf("read facts table: %w", err)
		}
	}
	p := r.facts
	// The waiting rows are in the commit files of at most FactsEvery batches of the
	// process that wrote them, no more than its checkpoint kept (Run refuses a FactsEvery
	// above Retain): this one's Retain, or DefaultRetain for a process that ran before with
	// the defaults (a process with a small Retain taking over from one with the default
	// FactsEvery must still gather those rows).
	from := last + 1 - int64(max(checkpoint.DefaultRetain, r.deps.Checkpoint.Retains()))
	if p.known {
		from = max(from, p.through+1)
	}
	if v, ok := snap.TxnVersion(facts.TxnFacts(r.spec.AppID)); ok {
		from = max(from, v+1)
	}
	if from > last {
		return snap, nil, nil
	}
	prev, err := r.deps.Checkpoint.Commits(ctx, max(from, 0), last)
	if err != nil {
		return nil, nil, err
	}
	var all []facts.Row
	for _, c := range prev {
		if len(c.FactsRows) == 0 {
			continue
		}
		var pending []facts.Row
		if err := json.Unmarshal(c.FactsRows, &pending); err != nil {
			return nil, nil, fmt.Errorf("read facts rows of batch %d from the checkpoint: %w", c.ID, err)
		}
		all = append(all, pending...)
	}
	return snap, all, nil
}

// flushFacts commits the rows waiting in the commit files of the batches up to last (the
// newest committed batch) to the facts table, keyed txn(<app_id>#facts, last), for a
// stream that will write no further batch of this app_id to carry them (a loss that opens
// the next generation). Nothing when none waits; a rerun finds them in the table.
func (r *run) flushFacts(ctx context.Context, last int64) error {
	if last < 0 || (r.facts.known && r.facts.through >= last) {
		return nil
	}
	snap, rows, err := r.waitingFacts(ctx, last)
	if err != nil || len(rows) == 0 {
		return err
	}
	if _, err := facts.AppendOn(ctx, snap, facts.TxnFacts(r.spec.AppID), last, rows, r.opts.Writer); err != nil {
		return fmt.Errorf("commit the waiting facts rows: %w", err)
	}
	r.facts = pendingFacts{known: true, through: last}
	return nil
}
