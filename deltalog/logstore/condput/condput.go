// Package condput is a logstore.LogStore that commits by S3 conditional put: version v is
// created with PutObject If-None-Match: * of _delta_log/<v:020>.json, so the object store
// itself decides the single winner. There is nothing half-done to complete: the commit file
// appears whole or not at all.
//
// Only safe when every writer of the table commits the same way (delta-rs ≥ 1.0 does; Spark
// with S3DynamoDBLogStore does not, see logstore/dynamo).
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

	mu   sync.Mutex
	hint int64 // a version known to exist, where listing starts; -1 when none
}

var (
	_ logstore.LogStore = (*LogStore)(nil)
	_ logstore.Lister   = (*LogStore)(nil)
)

// New returns a LogStore for the table rooted at store. It does no I/O.
func New(store storage.Store) *LogStore { return &LogStore{store: store, hint: -1} }

// Write creates version v's commit file with PutIfAbsent. An existing file is read back:
// other bytes are logstore.ErrVersionExists; our own bytes are success, since the SDK
// resends a PutObject whose answer was lost and the resend fails If-None-Match on the
// object the first request created. When the file cannot be read back the error is
// neither (v undecided).
func (l *LogStore) Write(ctx context.Context, v int64, data []byte) error {
	if v < 0 {
		return fmt.Errorf("condput: write version %d: negative version", v)
	}
	err := l.store.PutIfAbsent(ctx, commitlog.Key(v), data)
	if errors.Is(err, storage.ErrExists) {
		got, rerr := commitlog.Read(ctx, l.store, v)
		if rerr != nil {
			return fmt.Errorf("condput: write version %d: exists, read back: %w", v, rerr)
		}
		if !bytes.Equal(got, data) {
			return fmt.Errorf("condput: write version %d: %w", v, logstore.ErrVersionExists)
		}
		err = nil
	}
	if err != nil {
		return fmt.Errorf("condput: write version %d: %w", v, err)
	}
	l.seen(v)
	return nil
}

// Latest lists the log from the newest version this LogStore has seen. The first call
// without a Hint reads _last_checkpoint for where to start; once it has listed, an empty
// log is listed again from its start, without that read.
func (l *LogStore) Latest(ctx context.Context) (int64, error) {
	l.mu.Lock()
	hint := l.hint
	l.mu.Unlock()
	v, err := commitlog.Latest(ctx, l.store, hint)
	if err != nil {
		return 0, fmt.Errorf("condput: latest: %w", err)
	}
	l.seen(max(v, 0))
	return v, nil
}

// OpenLatest is the newest version the caller's listing found (logstore.Lister): the next
// Latest lists from it (from the log's start when it found none, without reading
// _last_checkpoint). No request of its own.
func (l *LogStore) OpenLatest(ctx context.Context, list func(ctx context.Context, from int64) (int64, error)) (int64, error) {
	v, err := list(ctx, -1)
	if err != nil {
		return 0, err
	}
	l.seen(max(v, 0))
	return v, nil
}

// Read returns version v's commit file.
func (l *LogStore) Read(ctx context.Context, v int64) ([]byte, error) {
	b, err := commitlog.Read(ctx, l.store, v)
	if err != nil {
		return nil, fmt.Errorf("condput: %w", err)
	}
	return b, nil
}

func (l *LogStore) seen(v int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hint = max(l.hint, v)
}
