// Package condput is a logstore.LogStore that commits by S3 conditional put: version v is
// created with PutObject If-None-Match: * of _delta_log/<v:020>.json, so the object store
// itself decides the single winner. There is nothing half-done to complete: the commit file
// appears whole or not at all.
//
// Only safe when every writer of the table commits the same way (delta-rs ≥ 1.0 does; Spark
// with S3DynamoDBLogStore does not, see logstore/dynamo). A table whose log shows DynamoDB
// writers (logstore.DynamoTempFile) is refused by deltalog's commit through this LogStore.
package condput

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/internal/commitlog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// LogStore commits through Store.PutIfAbsent. Safe for concurrent use.
type LogStore struct {
	store storage.Store

	mu sync.Mutex
	// known is the newest version known to exist (written or listed), where listing
	// starts; -1 when none. tag is its commit file's ETag, the identity Latest checks
	// (from the put's answer, or from the read-back when the SDK's resend found our own
	// commit; "" when unknown: a store that is no storage.TagPutter or TagGetter), learned
	// from the next listing when unknown.
	known int64
	tag   string
	// empty is true when the log was listed and had no commit: the next Latest lists it
	// from its start, without reading _last_checkpoint.
	empty bool
	// replaced counts the listings that found known's commit file gone or another one
	// (logstore.Replacements).
	replaced uint64
}

var (
	_ logstore.LogStore     = (*LogStore)(nil)
	_ logstore.Lister       = (*LogStore)(nil)
	_ logstore.Replacements = (*LogStore)(nil)
)

// New returns a LogStore for the table rooted at store. It does no I/O.
func New(store storage.Store) *LogStore { return &LogStore{store: store, known: -1} }

// Write creates version v's commit file with PutIfAbsent (storage.PutIfAbsentTag: its
// ETag is kept as the identity of the newest commit known). An existing file is read back:
// other bytes are logstore.ErrVersionExists; our own bytes are success, since the SDK
// resends a PutObject whose answer was lost and the resend fails If-None-Match on the
// object the first request created, and the read-back's ETag (storage.GetTag) is then
// the identity kept, so that a table started over before the next listing is told
// (docs/decisions/0016-own-write-identity.md § Tables started over). When the file
// cannot be read back the error is neither (v undecided).
func (l *LogStore) Write(ctx context.Context, v int64, data []byte) error {
	if v < 0 {
		return fmt.Errorf("condput: write version %d: negative version", v)
	}
	tag, err := storage.PutIfAbsentTag(ctx, l.store, commitlog.Key(v), data)
	if errors.Is(err, storage.ErrExists) {
		got, gotTag, rerr := commitlog.ReadTag(ctx, l.store, v)
		if rerr != nil {
			return fmt.Errorf("condput: write version %d: exists, read back: %w", v, rerr)
		}
		if !bytes.Equal(got, data) {
			return fmt.Errorf("condput: write version %d: %w", v, logstore.ErrVersionExists)
		}
		// Our own file: its ETag is the read-back's (storage.GetTag, no request more).
		err, tag = nil, gotTag
	}
	if err != nil {
		return fmt.Errorf("condput: write version %d: %w", v, err)
	}
	l.seen(v, tag)
	return nil
}

// Latest lists the log from the newest version this LogStore has seen, that version's
// own commit file included: when it is gone or another file than the one this LogStore
// wrote or listed (another ETag), the log was deleted and perhaps written again since, and
// Replaced counts it (commitlog.LatestFrom). The first call reads _last_checkpoint for
// where to start; once it has listed, an empty log is listed again from its start,
// without that read.
func (l *LogStore) Latest(ctx context.Context) (int64, error) {
	l.mu.Lock()
	known, tag, empty, gen := l.known, l.tag, l.empty, l.replaced
	l.mu.Unlock()
	var res commitlog.Listed
	var err error
	switch {
	case known >= 0:
		res, err = commitlog.LatestFrom(ctx, l.store, known, tag)
	case empty:
		res, err = commitlog.Newest(ctx, l.store, 0)
	default:
		res, err = commitlog.Newest(ctx, l.store, -1)
	}
	if err != nil {
		return 0, fmt.Errorf("condput: latest: %w", err)
	}
	l.listed(gen, res)
	return res.Version, nil
}

// OpenLatest is the newest version the caller's listing found (logstore.Lister): the next
// Latest lists from it (from the log's start when it found none, without reading
// _last_checkpoint). No request of its own.
func (l *LogStore) OpenLatest(ctx context.Context, list func(ctx context.Context, from int64) (int64, string, error)) (int64, error) {
	l.mu.Lock()
	gen := l.replaced
	l.mu.Unlock()
	v, tag, err := list(ctx, -1)
	if err != nil {
		return 0, err
	}
	l.listed(gen, commitlog.Listed{Version: v, ETag: tag})
	return v, nil
}

// Replaced counts the times Latest found the log it knew replaced
// (logstore.Replacements).
func (l *LogStore) Replaced() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.replaced
}

// Read returns version v's commit file.
func (l *LogStore) Read(ctx context.Context, v int64) ([]byte, error) {
	b, err := commitlog.Read(ctx, l.store, v)
	if err != nil {
		return nil, fmt.Errorf("condput: %w", err)
	}
	return b, nil
}

// seen records that version v's commit file exists with ETag tag ("" unknown).
func (l *LogStore) seen(v int64, tag string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seenLocked(v, tag)
}

func (l *LogStore) seenLocked(v int64, tag string) {
	switch {
	case v > l.known:
		l.known, l.tag = v, tag
	case v == l.known && l.tag == "":
		l.tag = tag
	}
	if v >= 0 {
		l.empty = false
	}
}

// listed records what a listing begun when Replaced was gen found: a replaced log is
// known afresh from its newest commit (once, however many listings found it).
func (l *LogStore) listed(gen uint64, res commitlog.Listed) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.replaced {
		return // the log was found replaced meanwhile: this listing may be of the old one
	}
	if res.Replaced {
		l.replaced++
		l.known, l.tag, l.empty = res.Version, res.ETag, res.Version < 0
		return
	}
	l.seenLocked(res.Version, res.ETag)
	if res.Version < 0 {
		l.empty = true
	}
}
