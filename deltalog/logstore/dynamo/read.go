package dynamo

import (
	"context"
	"errors"

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
func (l *LogStore) Latest(ctx context.Context) (int64, error) {
	queriedAt := l.opts.Now()
	e, found, err := l.newestEntry(ctx)
	if err != nil {
		return 0, wrap("latest: query newest entry of", l.hint()+1, err)
	}
	hint := l.hint()
	if found {
		if e.Complete && l.knowsUpTo(e.Version) {
			l.observe(e.Version, queriedAt)
			return e.Version, nil
		}
		if err := l.recover(ctx, e); err != nil {
			return 0, err
		}
		hint = max(hint, e.Version)
	} else if v, ok := l.knownLatest(); ok {
		l.observe(v, queriedAt)
		return v, nil
	}
	listedAt := l.opts.Now()
	v, err := commitlog.Latest(ctx, l.store, hint)
	if err != nil {
		return 0, wrap("latest: after", hint, err)
	}
	if !found || v == e.Version {
		// Entry v is complete (or none is left) and v+1.json was absent when listed.
		l.observe(v, listedAt)
	}
	return v, nil
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
func (l *LogStore) OpenLatest(ctx context.Context, list func(ctx context.Context, from int64) (int64, error)) (int64, error) {
	e, found, err := l.newestEntry(ctx)
	if err != nil {
		return 0, wrap("latest: query newest entry of", l.hint()+1, err)
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
	v, err := list(ctx, from)
	if err != nil {
		return 0, err
	}
	if !found || v == e.Version {
		l.observe(v, listedAt)
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
