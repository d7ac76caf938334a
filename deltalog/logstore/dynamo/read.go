package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/internal/commitlog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Latest recovers the newest entry when it is incomplete, then lists the log (from the
// newest version known) and returns the newest commit, or -1. When no entries exist (TTL
// removed them, or the log is empty) the listing alone decides.
//
// The listing is skipped when this LogStore observed, less than KnownFor ago, a version
// committed with the next one absent (an empty log counts: version -1), and the newest
// entry is complete and at or above it, or there is no entry at all: every version above
// the observed one was completed after the observation, so its entry has not expired yet
// (KnownFor is well under every writer's TTL), and the newest entry is the newest commit.
// A writer that keeps its LogStore (a warm Lambda, a stream's batches, the steps of a
// bootstrap on a table not yet created) thus checks for others' commits with one Query.
//
// The same Query tells a log deleted and written again (checkIdentity): the entry of the
// version this LogStore knew is among the newest entries, and another one (another
// tempPath) or none means the log was replaced; Replaced counts it, and the log is then
// listed as on a first Latest. When no entry identifies the version known (its entry
// expired), the listing starts at that version's commit file and checks its ETag, kept
// from the copy that published it or from a listing (commitlog.LatestFrom).
func (l *LogStore) Latest(ctx context.Context) (int64, error) {
	queriedAt := l.opts.Now()
	kn, gen := l.current()
	page, full, err := l.newestEntries(ctx)
	if err != nil {
		return 0, wrap("latest: query newest entry of", l.hint()+1, err)
	}
	id, err := l.checkIdentity(ctx, kn, page, full, queriedAt)
	if err != nil {
		return 0, err
	}
	identified, suspect := id == idSame, id == idSuspect
	if id == idReplaced {
		l.markReplaced(gen)
		kn, gen = l.current()
	}
	e, found := entry{}, len(page) > 0
	if found {
		e = page[0]
	}
	hint := l.hint()
	if found {
		if e.Complete && !suspect && l.knowsUpTo(e.Version) {
			l.observe(e.Version, queriedAt, e.TempPath, "")
			return e.Version, nil
		}
		if err := l.recover(ctx, e); err != nil {
			return 0, err
		}
		hint = max(hint, e.Version)
	} else if v, ok := l.knownLatest(); ok && !suspect {
		l.observe(v, queriedAt, "", "")
		return v, nil
	}
	listedAt := l.opts.Now()
	var res commitlog.Listed
	if kn.Version >= 0 && (hint == kn.Version || (!identified && kn.ETag != "") || suspect) {
		// From the version known: its commit file gone, or another than the one a
		// listing showed (kn.ETag), is a replaced log too. Listed from there also when
		// the log has newer commits but no entry identified the version known (its
		// entry expired, or an entry made since claims it: suspect): the same one
		// request while the log since is short.
		res, err = commitlog.LatestFrom(ctx, l.store, kn.Version, kn.ETag)
	} else {
		res, err = commitlog.Newest(ctx, l.store, hint)
	}
	if err != nil {
		return 0, wrap("latest: after", hint, err)
	}
	if res.Replaced {
		l.markReplaced(gen)
	}
	v := res.Version
	if !found || v == e.Version {
		// Entry v is complete (or none is left) and v+1.json was absent when listed.
		l.observe(v, listedAt, e.TempPath, res.ETag)
	}
	return v, nil
}

// checkIdentity reports whether the log kn was observed in was replaced. It looks up one
// entry, the newest at or below kn.Version (entryAtOrBelow), and decides:
//
//   - kn saw kn.Version's entry (kn.TempPath): identified when the entry found is
//     kn.Version's with kn's tempPath; replaced when it is kn.Version's with another
//     tempPath (the entry was deleted and the version claimed again, by a new log), or
//     when kn.Version's is gone while kn is less than KnownFor old and no commit file's
//     ETag is known (kn.ETag). With the ETag known, an entry gone within KnownFor is
//     suspect: every check renews the observation while the entry ages from its
//     completion, so an idle table's entry expires (the TTL) under a fresh observation,
//     and the commit file tells (Latest lists from kn.Version and checks the ETag). An
//     entry gone after KnownFor is not told from one expired: Latest then lists from
//     kn.Version and checks the commit file's ETag, when a copy or listing showed it to
//     this LogStore (kn.ETag); without it, only a log with fewer versions is told
//     (commitlog.LatestFrom).
//   - kn was observed with no entry (they had expired): suspect when any entry at or
//     below kn.Version exists now. Made since, it claims a version that was committed,
//     which only a new log does, so Latest lists from kn.Version to check the commit file
//     instead of trusting the Query within KnownFor.
//
// Otherwise nothing tells (idUnknown).
func (l *LogStore) checkIdentity(ctx context.Context, kn known, page []entry, full bool, now time.Time) (identity, error) {
	if kn.Version < 0 {
		return idUnknown, nil
	}
	e, found, err := l.entryAtOrBelow(ctx, kn.Version, page, full)
	if err != nil {
		return idUnknown, wrap("latest: get entry of", kn.Version, err)
	}
	switch {
	case kn.TempPath == "":
		if found {
			return idSuspect, nil
		}
		return idUnknown, nil
	case found && e.Version == kn.Version:
		if e.TempPath == kn.TempPath {
			return idSame, nil
		}
		return idReplaced, nil
	case l.opts.KnownFor < 0 || now.Sub(kn.At) >= l.opts.KnownFor:
		return idUnknown, nil
	case kn.ETag != "":
		// Gone within KnownFor of the observation, which every check renews while the
		// entry ages from its completion: an idle table's entry expires under a fresh
		// observation. The commit file's ETag tells (suspect: listed from kn.Version).
		return idSuspect, nil
	default:
		return idReplaced, nil
	}
}

// identity is what checkIdentity concluded about the log an observation was made in.
type identity int

const (
	idUnknown  identity = iota // nothing tells (no version known, or its entry expired)
	idSame                     // the entry of the version known, with its tempPath: identified
	idReplaced                 // another log: the entry claimed again, or deleted that soon
	idSuspect                  // the commit file must tell: Latest lists from the version known
)

// entryAtOrBelow returns the newest entry at or below version v, found false when there is
// none. page holds the newest entries, newest first (newestEntries), and decides when it
// reaches down to v or is not full; a full page all above v (more than entriesQueried
// commits since v) leaves the entries below it unread, and v's own entry is read with a
// GetItem (so an older entry, with v's gone, is not found there).
func (l *LogStore) entryAtOrBelow(ctx context.Context, v int64, page []entry, full bool) (entry, bool, error) {
	for _, e := range page {
		if e.Version <= v {
			return e, true, nil
		}
	}
	if !full {
		return entry{}, false, nil
	}
	return l.getEntry(ctx, v)
}

// shortLog is the newest version below which a log is listed whole on a table's first
// open instead of reading _last_checkpoint: its commits, their temp files and checkpoints
// fit in one listing page (1,000 keys).
const shortLog = 100

// OpenLatest is Latest with the caller's listing (logstore.Lister): one Query, then the
// caller lists the log, whole when the newest entry shows it short (no _last_checkpoint
// read), and the listing decides as in Latest: with no entry, or the newest entry complete
// at the newest commit listed, that commit is observed as the latest. With no entry the
// log is either empty (a table's first bootstrap opens two such) or had no commit for the
// entries' TTL; it is listed whole when one listing request holds it
// (logstore.ListWholeIfShort), so an empty log costs the Query and one listing.
func (l *LogStore) OpenLatest(ctx context.Context, list func(ctx context.Context, from int64) (int64, string, error)) (int64, error) {
	page, _, err := l.newestEntries(ctx)
	if err != nil {
		return 0, wrap("latest: query newest entry of", l.hint()+1, err)
	}
	e, found := entry{}, len(page) > 0
	if found {
		e = page[0]
	}
	from := logstore.ListWholeIfShort
	if found {
		from = -1
		if err := l.recover(ctx, e); err != nil {
			return 0, err
		}
		if e.Version < shortLog {
			from = 0
		}
	}
	listedAt := l.opts.Now()
	v, tag, err := list(ctx, from) // the identity: the entry's tempPath and v.json's ETag
	if err != nil {
		return 0, err
	}
	if !found || v == e.Version {
		l.observe(v, listedAt, e.TempPath, tag)
	}
	return v, nil
}

// Read returns version v's commit file. When it is missing and entry v is incomplete, the
// entry is recovered first.
func (l *LogStore) Read(ctx context.Context, v int64) ([]byte, error) {
	b, err := commitlog.Read(ctx, l.store, v)
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, storage.ErrNotFound) || v < 0 {
		return nil, wrap("read", v, err)
	}
	e, found, gerr := l.getEntry(ctx, v)
	if gerr != nil {
		return nil, wrap("read: get entry of", v, gerr)
	}
	if !found || e.Complete {
		return nil, wrap("read", v, err)
	}
	if err := l.recover(ctx, e); err != nil {
		return nil, err
	}
	b, err = commitlog.Read(ctx, l.store, v)
	if err != nil {
		return nil, wrap("read", v, err)
	}
	return b, nil
}
