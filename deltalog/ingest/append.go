package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Commit is one exactly-once append: what Append writes.
type Commit struct {
	// AppID and Version are the commit's txn(appId, version): the append is skipped when
	// the table already records AppID at Version or above.
	AppID   string
	Version int64
	// Schema is the table schema the rows need: it creates the table, or adds the
	// nullable columns the table lacks (deltalog.Transaction.SetSchema; a retyped or
	// dropped column is a *deltalog.SchemaChangeError). nil when the caller knows the
	// table exists with the schema the rows need (its schema parsed and compared
	// again for nothing otherwise); an error on a table that does not exist.
	Schema *arrow.Schema
	// Files are the data files to add (none: a commit of the txn alone, which still records
	// that the append happened).
	Files Files
	// UserMetadata is commitInfo.userMetadata: a compact JSON of what the commit is
	// (docs/design.md §4.2).
	UserMetadata string
	// Operation and OperationParameters go to commitInfo, values bare as Spark writes them
	// (deltalog.Transaction.SetOperation); "" keeps deltalog's default (WRITE, or CREATE
	// TABLE for the first commit).
	Operation           string
	OperationParameters map[string]string
}

// Result is what Append did.
type Result struct {
	// Version is the table version holding the append: the one it created, or, for a
	// replay, the version at which the txn was found.
	Version int64
	// Replayed is true when the table already held the txn: nothing was written.
	Replayed bool

	snap *deltalog.Snapshot
	tx   *deltalog.Transaction
}

// Snapshot is the table state at Result.Version (the transaction's post-commit state,
// built without I/O when it can be; the snapshot read when replayed), for a caller that
// appends again or reads what it wrote.
func (r Result) Snapshot(ctx context.Context) (*deltalog.Snapshot, error) {
	if r.tx != nil {
		return r.tx.NextSnapshot(ctx)
	}
	if r.snap == nil {
		return nil, deltalog.ErrTxnNotCommitted
	}
	return r.snap, nil
}

// Replayed reports whether the table at snap already holds txn(appID, version), with the
// Result Append would return for it. A step checks it before writing any file, so a
// replay leaves no orphan behind; Append checks again anyway.
func Replayed(snap *deltalog.Snapshot, appID string, version int64) (Result, bool) {
	if v, ok := snap.TxnVersion(appID); ok && v >= version {
		return Result{Version: snap.Version(), Replayed: true, snap: snap}, true
	}
	return Result{}, false
}

// adoptAttempts bounds how often an append that tried to create the table and lost that
// race to another writer re-reads the table and appends to it.
const adoptAttempts = 2

// Append commits c to t in one Delta commit, exactly once (the package doc). snap is the
// table state the caller already read (nil: Append reads the latest); a replay is
// recognised on it and again on every commit that won a race against ours. When the
// commit would create the table and another writer created it first, Append re-reads the
// table and appends to it (at most adoptAttempts times).
//
// Errors are deltalog's (*deltalog.ConcurrentModificationError, *deltalog.CommitAttemptsError,
// *deltalog.CommitUnknownError: retrying the same Commit is safe, ...), wrapped.
func Append(ctx context.Context, t *deltalog.Table, snap *deltalog.Snapshot, c Commit) (Result, error) {
	for attempt := 0; ; attempt++ {
		if snap == nil {
			var err error
			if snap, err = t.Snapshot(ctx); err != nil {
				return Result{}, fmt.Errorf("read table: %w", err)
			}
		}
		res, err := appendAt(ctx, t, snap, c)
		var cm *deltalog.ConcurrentModificationError
		if snap.Version() < 0 && errors.As(err, &cm) && attempt < adoptAttempts {
			snap = nil // another writer created the table: adopt it
			continue
		}
		return res, err
	}
}

func appendAt(ctx context.Context, t *deltalog.Table, snap *deltalog.Snapshot, c Commit) (Result, error) {
	if res, ok := Replayed(snap, c.AppID, c.Version); ok {
		return res, nil
	}
	tx := t.Begin(snap)
	if c.Schema != nil {
		if err := tx.SetSchema(c.Schema); err != nil {
			return Result{}, fmt.Errorf("table schema: %w", err)
		}
	} else if snap.Version() < 0 {
		return Result{}, fmt.Errorf("table schema: none given to create %s", t.Store().URL())
	}
	tx.Add(c.Files.Adds...)
	tx.SetAppTxn(c.AppID, c.Version)
	tx.SetUserMetadata(c.UserMetadata)
	if c.Operation != "" {
		tx.SetOperation(c.Operation, c.OperationParameters)
	}
	res, err := tx.Commit(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("commit txn(%s, %d): %w", c.AppID, c.Version, err)
	}
	if res.Skipped {
		return Result{Version: res.Version, Replayed: true, tx: tx}, nil
	}
	return Result{Version: res.Version, tx: tx}, nil
}
