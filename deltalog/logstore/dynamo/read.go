package dynamo

import (
	"context"
	"errors"

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

// LatestListed is Latest for a caller that has just listed the log and found listed (-1:
// none) as its newest commit (logstore.Lister): one Query instead of a Query and a
// listing. With no entry, or the newest entry complete at listed, listed is the latest
// version: a commit made since the listing would have its entry, newer than listed (and it
// is observed as such). An entry below listed leaves the listing the truth; one above it or
// incomplete is handled as Latest does (recovered, and the log listed from it).
func (l *LogStore) LatestListed(ctx context.Context, listed int64) (int64, error) {
	queriedAt := l.opts.Now()
	e, found, err := l.newestEntry(ctx)
	if err != nil {
		return 0, wrap("latest: query newest entry of", listed+1, err)
	}
	switch {
	case !found || (e.Complete && e.Version == listed):
		l.observe(listed, queriedAt)
		return listed, nil
	case e.Complete && e.Version < listed:
		return listed, nil
	}
	if !e.Complete {
		if err := l.recover(ctx, e); err != nil {
			return 0, err
		}
	}
	hint := max(listed, e.Version)
	listedAt := l.opts.Now()
	v, err := commitlog.Latest(ctx, l.store, hint)
	if err != nil {
		return 0, wrap("latest: after", hint, err)
	}
	if v == e.Version {
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
