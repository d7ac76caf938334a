package deltalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// hintedReplayLimit is how many commits past _last_checkpoint a snapshot replays without
// listing the log. A hint further behind than this (two default checkpoint intervals) is
// stale — its update failed, or a writer died between checkpoint and hint — and one
// listing from it, which finds the newer checkpoint, costs less than that many reads.
const hintedReplayLimit = 2 * DefaultCheckpointInterval

// readConcurrency bounds the commit files read at once during replay: S3 GETs take tens
// of milliseconds each, so a tail of ten commits read one by one would cost more than the
// checkpoint.
const readConcurrency = 8

// Snapshot reads the latest version of the table (docs/reference/delta-protocol.md §9.2).
// A table with no commits yields a snapshot with Version() == -1. Errors:
// *UnsupportedFeatureError / *UnsupportedVersionError when the table cannot be read,
// *CorruptLogError when the log cannot be replayed.
//
// The Table keeps the newest snapshot it read or committed. With one kept, Snapshot asks
// the log store for the latest version (a listing from the kept version, or through
// DynamoDB one query), returns the kept snapshot when nothing was committed since, and
// otherwise applies the commits after it (at most hintedReplayLimit of them; more, or any
// that cannot be read, and the table is read afresh from its newest checkpoint). Every
// commit since the kept version is applied, so a transaction begun from the result sees
// them all (conflict detection, txn versions).
func (t *Table) Snapshot(ctx context.Context) (*Snapshot, error) {
	known := t.known()
	askedAt := t.opts.now()
	var pre *preRead
	var latest int64
	if ll, ok := t.logs.(logstore.Lister); ok && t.firstOpen() {
		// A first open: its own listing gives the log store the latest version
		// (logstore.Lister), so _last_checkpoint is read and the log listed once, not once
		// for Latest and again for the checkpoint; or, when the log store knows the log is
		// short, it is listed whole without reading _last_checkpoint.
		var err error
		latest, err = ll.OpenLatest(ctx, func(ctx context.Context, from int64) (int64, string, error) {
			var err error
			switch {
			case from == logstore.ListWholeIfShort:
				pre, err = t.listShortOrRead(ctx)
			case from < 0:
				pre, err = t.readAndList(ctx)
			default:
				pre = &preRead{from: from}
				pre.listing, err = listLog(ctx, t.store, from)
			}
			if err != nil {
				return 0, "", err
			}
			t.sawListing(pre.listing)
			return pre.listing.maxCommit, pre.listing.maxETag, nil
		})
		if err != nil {
			return nil, fmt.Errorf("latest version: %w", err)
		}
		if pre == nil || latest != pre.listing.maxCommit {
			pre = nil // committed since the listing: load reads the log again
		}
	} else {
		var err error
		if latest, err = t.logs.Latest(ctx); err != nil {
			return nil, fmt.Errorf("latest version: %w", err)
		}
	}
	return t.snapshotAt(ctx, known, askedAt, latest, pre)
}

// SnapshotWith is Snapshot of t and of other read together: when t's log store can ask
// for other's latest version in the request it makes for t's (logstore.Joint: the
// DynamoDB log store, two tables' entries in one DynamoDB table, while both know their
// newest entry) and neither table is at its first open (which lists its log), one
// request answers for both, where two Snapshot calls make two. Otherwise otherSnap is
// nil and the snapshot is t's alone, at no request more than t's Snapshot: the caller
// reads other's Snapshot when it needs it. The snapshots are what Snapshot returns
// (docs/decisions/0019-dynamo-warm-check-one-request.md).
func (t *Table) SnapshotWith(ctx context.Context, other *Table) (snap, otherSnap *Snapshot, err error) {
	j, ok := t.logs.(logstore.Joint)
	if !ok || other == t || !j.JointWith(other.logs) || !t.opened() || !other.opened() {
		snap, err = t.Snapshot(ctx)
		return snap, nil, err
	}
	known, otherKnown := t.known(), other.known()
	askedAt, otherAskedAt := t.opts.now(), other.opts.now()
	latest, otherLatest, ok, err := j.LatestWith(ctx, other.logs)
	if err != nil {
		return nil, nil, fmt.Errorf("latest version: %w", err)
	}
	if snap, err = t.snapshotAt(ctx, known, askedAt, latest, nil); err != nil || !ok {
		return snap, nil, err
	}
	if otherSnap, err = other.snapshotAt(ctx, otherKnown, otherAskedAt, otherLatest, nil); err != nil {
		return nil, nil, err
	}
	return snap, otherSnap, nil
}

// snapshotAt is Snapshot once the log store answered latest: known is the snapshot kept
// when it was asked (at askedAt), pre what a first open read.
func (t *Table) snapshotAt(ctx context.Context, known *Snapshot, askedAt time.Time, latest int64, pre *preRead) (*Snapshot, error) {
	replaced := replacedCount(t.logs)
	if known != nil && known.replaced != replaced {
		t.forgetNewest()
		// The log store found the log it knew deleted (and perhaps written again) since
		// known was read: read the table as a new process would.
		t.replace(nil)
		known = nil
	}
	if latest < 0 {
		t.forgetNewest()
		t.sawEmpty()
		return t.emptySnapshot(), nil
	}
	if known != nil && known.version > latest {
		// The log is behind what this Table saw: the table was deleted and re-created.
		t.replace(nil)
		t.forgetNewest()
		known = nil
	}
	t.sawNewest(latest, askedAt)
	if known != nil && known.version >= 0 {
		if known.version == latest {
			return known, nil
		}
		if latest-known.version <= hintedReplayLimit {
			s, err := t.advance(ctx, known, latest)
			if err == nil {
				s.replaced = replaced
				t.remember(s)
				return s, nil
			}
			if ctx.Err() != nil {
				return nil, err
			}
			// A commit that cannot be read or applied: read the table afresh, which
			// reports what is wrong with it.
		}
	}
	s, err := t.load(ctx, latest, latest, pre)
	if err != nil {
		return nil, err
	}
	s.replaced = replaced
	t.remember(s)
	return s, nil
}

// preRead is what a first open read before load: _last_checkpoint (ok false: missing or
// unparsable) and the listing of the log from version from.
type preRead struct {
	lc      LastCheckpoint
	ok      bool
	from    int64
	listing logListing
}

// listShortOrRead lists the whole log when one listing request holds it (an empty log, a
// short one: its checkpoints are in the listing, so _last_checkpoint is not read), else
// reads _last_checkpoint and lists from it (readAndList), one listing request more than
// readAndList alone.
func (t *Table) listShortOrRead(ctx context.Context) (*preRead, error) {
	l, complete, err := listLogUpTo(ctx, t.store, 0, listPage)
	if err != nil {
		return nil, err
	}
	if !complete {
		return t.readAndList(ctx)
	}
	return &preRead{from: 0, listing: l}, nil
}

// readAndList reads _last_checkpoint and lists the log from its version (from 0 without
// one, or when nothing is listed from it).
func (t *Table) readAndList(ctx context.Context) (*preRead, error) {
	lc, ok, err := ReadLastCheckpoint(ctx, t.store)
	if err != nil {
		return nil, err
	}
	p := &preRead{lc: lc, ok: ok}
	if ok {
		p.from = lc.Version
	}
	if p.listing, err = listLog(ctx, t.store, p.from); err != nil {
		return nil, err
	}
	if p.from > 0 && p.listing.maxCommit < 0 {
		p.from = 0
		if p.listing, err = listLog(ctx, t.store, 0); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// advance applies the commits known.Version()+1..latest to a successor of known. The
// checkpoint a writer of those commits was to write at a multiple of the checkpoint
// interval is taken as written (CheckpointVersion, and the commitInfos kept, follow it as
// a read from that checkpoint would), so the next commit through this Table does not take
// it for overdue.
func (t *Table) advance(ctx context.Context, known *Snapshot, latest int64) (*Snapshot, error) {
	commits, err := t.readCommits(ctx, known.version+1, latest, false, latest)
	if err != nil {
		return nil, err
	}
	s := known.successor()
	s.applyCommits(commits)
	if err := s.protocol.CanRead(); err != nil {
		return nil, err
	}
	if n := t.checkpointInterval(s.metadata); n > 0 {
		if cp := s.version / n * n; cp > known.version && cp > s.checkpoint {
			s.checkpoint = cp
			maps.DeleteFunc(s.commitInfos, func(v int64, _ CommitInfo) bool { return v <= cp })
		}
	}
	return s, nil
}

// SnapshotAt reads the table as of version (time travel). *VersionNotFoundError when the
// version is newer than the latest or no longer reconstructible (its commits were
// cleaned up and no checkpoint at or below it remains).
func (t *Table) SnapshotAt(ctx context.Context, version int64) (*Snapshot, error) {
	latest, err := t.logs.Latest(ctx)
	if err != nil {
		return nil, fmt.Errorf("latest version: %w", err)
	}
	if version < 0 || version > latest {
		return nil, &VersionNotFoundError{Version: version, Latest: latest}
	}
	return t.load(ctx, version, latest, nil)
}

func (t *Table) emptySnapshot() *Snapshot {
	return &Snapshot{
		table: t, replaced: replacedCount(t.logs), version: -1, checkpoint: -1,
		files: newFileSet[Add](0), tombstones: newFileSet[Remove](0),
		txns: map[string]Txn{}, domains: map[string]DomainMetadata{},
		commitInfos: map[int64]CommitInfo{},
	}
}

// load builds the snapshot at target (docs/reference/delta-protocol.md §7, §9.2): the newest
// complete checkpoint at or below target, found from the _last_checkpoint hint or, when the
// hint is missing or stale, by listing the whole log; then the JSON commits after it, in
// order. pre is what the caller read and listed already (nil: none).
func (t *Table) load(ctx context.Context, target, latest int64, pre *preRead) (*Snapshot, error) {
	from := int64(0)
	var lc LastCheckpoint
	var ok bool
	if pre != nil {
		lc, ok = pre.lc, pre.ok
	} else {
		var err error
		if lc, ok, err = ReadLastCheckpoint(ctx, t.store); err != nil {
			return nil, err
		}
	}
	if pre == nil && ok && lc.Version <= target && target-lc.Version <= hintedReplayLimit {
		// Fast path: read the checkpoint the hint names without listing the log. A hint
		// behind a newer checkpoint only costs a few more commits to replay; one naming a
		// missing or unreadable checkpoint falls back to listing.
		if cp := hintedCheckpoint(lc); cp != nil {
			s, err := t.build(ctx, cp, target, latest)
			var cpErr *checkpointError
			if err == nil || !errors.As(err, &cpErr) {
				return s, err
			}
		}
		from = lc.Version
	}
	if ok && lc.Version <= target {
		from = lc.Version // far behind: list from it to find the newer checkpoint
	}
	var listing logListing
	var err error
	if pre != nil && pre.from == from {
		listing = pre.listing
	} else if listing, err = listLog(ctx, t.store, from); err != nil {
		return nil, err
	}
	if from > 0 && listing.newestCheckpoint(target) == nil {
		// The hint points at a checkpoint that is gone: list the whole log.
		if listing, err = listLog(ctx, t.store, 0); err != nil {
			return nil, err
		}
	}

	// Try the newest checkpoint first; an unreadable one falls back to older ones and,
	// last, to a replay from version 0.
	cp := listing.newestCheckpoint(target)
	var firstErr error
	for {
		s, err := t.build(ctx, cp, target, latest)
		if err == nil {
			return s, nil
		}
		var cpErr *checkpointError
		if !errors.As(err, &cpErr) {
			if firstErr != nil {
				return nil, firstErr
			}
			return nil, err
		}
		if firstErr == nil {
			firstErr = err
		}
		if from > 0 {
			if listing, err = listLog(ctx, t.store, 0); err != nil {
				return nil, err
			}
			from = 0
		}
		cp = listing.newestCheckpoint(cp.version - 1)
	}
}

// maxHintedParts bounds the part count a _last_checkpoint may name for its checkpoint to
// be read without listing. Spark splits a checkpoint into parts of
// spark.databricks.delta.checkpoint.partSize actions (millions each), so real tables have
// a handful; a hint naming more is treated as unusable and the log is listed instead,
// which finds only complete sets (a bogus "parts": 999999999 must not allocate a key per
// claimed part).
const maxHintedParts = 1000

// hintedCheckpoint is the checkpoint _last_checkpoint names: the classic file, or parts
// 1..Parts of a multi-part set; nil when the hint's part count is out of bounds.
func hintedCheckpoint(lc LastCheckpoint) *checkpointRef {
	if lc.Parts != nil && (*lc.Parts < 0 || *lc.Parts > maxHintedParts) {
		return nil
	}
	if lc.V2Checkpoint != nil && lc.V2Checkpoint.Path != "" && !strings.Contains(lc.V2Checkpoint.Path, "/") {
		return &checkpointRef{version: lc.Version, keys: []string{LogDir + lc.V2Checkpoint.Path}}
	}
	if lc.Parts == nil || *lc.Parts <= 1 {
		return &checkpointRef{version: lc.Version, keys: []string{CheckpointFileKey(lc.Version)}}
	}
	keys := make([]string, *lc.Parts)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", LogDir, lc.Version, i+1, *lc.Parts)
	}
	return &checkpointRef{version: lc.Version, keys: keys}
}

// checkpointError marks a checkpoint that could not be read, so load can try an older one.
type checkpointError struct {
	version int64
	err     error
}

func (e *checkpointError) Error() string {
	return fmt.Sprintf("read checkpoint %d: %v", e.version, e.err)
}

func (e *checkpointError) Unwrap() error { return e.err }

// build replays from checkpoint cp (nil: from version 0) up to target.
func (t *Table) build(ctx context.Context, cp *checkpointRef, target, latest int64) (*Snapshot, error) {
	s := t.emptySnapshot()
	s.version = target
	start := int64(0)
	var proto *Protocol
	var meta *Metadata
	if cp != nil {
		cpState, cpAdds, lazy, tombs, err := readCheckpoint(ctx, t.store, cp.keys)
		if err != nil {
			return nil, &checkpointError{version: cp.version, err: err}
		}
		s.lazy, s.cpTombstones = lazy, tombs
		// Sized once, not grown 17 times at 100k files. No tombstone is known yet, so an
		// add has none to clear.
		s.files = newFileSetOf(cpAdds, len(cpState))
		for _, a := range cpState {
			s.applyAction(a, &proto, &meta)
		}
		s.checkpoint = cp.version
		start = cp.version + 1
	}
	commits, err := t.readCommits(ctx, start, target, cp == nil, latest)
	if err != nil {
		return nil, err
	}
	for i, actions := range commits {
		v := start + int64(i)
		for _, a := range actions {
			if a.CommitInfo != nil {
				s.commitInfos[v] = *a.CommitInfo
				continue
			}
			s.applyAction(a, &proto, &meta)
		}
	}
	if proto == nil {
		return nil, &CorruptLogError{Version: target, Reason: "no protocol action"}
	}
	s.protocol = *proto
	// The protocol is checked before anything else in the snapshot is trusted
	// (docs/reference/delta-protocol.md §6.2).
	if err := s.protocol.CanRead(); err != nil {
		return nil, err
	}
	if meta == nil {
		return nil, &CorruptLogError{Version: target, Reason: "no metaData action"}
	}
	s.metadata = *meta
	return s, nil
}

// readCommits reads and decodes versions from..to, readConcurrency at a time. A missing
// commit is *VersionNotFoundError when the replay had to start at version 0 (the log was
// cleaned up), else *CorruptLogError (a gap after a checkpoint).
func (t *Table) readCommits(ctx context.Context, from, to int64, fromZero bool, latest int64) ([][]Action, error) {
	n := int(to - from + 1)
	if n <= 0 {
		return nil, nil
	}
	out := make([][]Action, n)
	errs := make([]error, n)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(readConcurrency, n) {
		wg.Go(func() {
			for i := range next {
				v := from + int64(i)
				data, err := t.logs.Read(ctx, v)
				if err == nil {
					out[i], err = DecodeActions(data)
					if err != nil {
						err = &CorruptLogError{Version: v, Reason: "unparsable commit", Err: err}
					}
				} else if errors.Is(err, storage.ErrNotFound) {
					if fromZero && v == from {
						err = &VersionNotFoundError{Version: to, Latest: latest}
					} else {
						err = &CorruptLogError{Version: v, Reason: "commit file missing", Err: err}
					}
				} else {
					err = fmt.Errorf("read commit %d: %w", v, err)
				}
				if err != nil {
					errs[i] = err
					cancel()
				}
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := parent.Err(); err != nil {
		return nil, err
	}
	// The first failure cancelled the other reads: report it, not their cancellation.
	var canceled error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled):
			canceled = err
		default:
			return nil, err
		}
	}
	if canceled != nil {
		return nil, canceled
	}
	return out, nil
}

// ReadCommits reads the actions of versions from..to (inclusive) from their JSON commit
// files, in version order, through the log store (so a half-done DynamoDB commit is
// completed first): what a reader that follows a table version by version (a CDF-less
// streaming read, silver following bronze) needs. commitInfo is the commit's own. Errors:
// *VersionNotFoundError when version from has no commit file (log clean-up removed it, or
// it is not written yet), *CorruptLogError for a later gap or an unparsable commit.
func (t *Table) ReadCommits(ctx context.Context, from, to int64) ([][]Action, error) {
	if from < 0 || to < from {
		return nil, nil
	}
	return t.readCommits(ctx, from, to, true, to)
}

// applyAction reconciles one action into the snapshot (docs/reference/delta-protocol.md §9.2):
// the latest protocol and metaData win, the latest txn per appId, the latest domainMetadata
// per domain (removed deletes it), and per (path, DV id) the latest add or remove. commitInfo
// and cdc do not take part.
func (s *Snapshot) applyAction(a Action, proto **Protocol, meta **Metadata) {
	switch {
	case a.Add != nil:
		k := fileKey{path: a.Add.DecodedPath(), dvID: a.Add.DeletionVector.UniqueID()}
		s.files.Set(k, a.Add)
		s.tombstones.Delete(k)
	case a.Remove != nil:
		k := fileKey{path: a.Remove.DecodedPath(), dvID: a.Remove.DeletionVector.UniqueID()}
		s.files.Delete(k)
		s.tombstones.Set(k, a.Remove)
	case a.Txn != nil:
		s.txns[a.Txn.AppID] = *a.Txn
	case a.Protocol != nil:
		*proto = a.Protocol
	case a.MetaData != nil:
		*meta = a.MetaData
	case a.DomainMetadata != nil:
		if a.DomainMetadata.Removed {
			delete(s.domains, a.DomainMetadata.Domain)
		} else {
			s.domains[a.DomainMetadata.Domain] = *a.DomainMetadata
		}
	}
}
