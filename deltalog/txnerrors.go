package deltalog

import (
	"errors"
	"fmt"
)

// ConcurrentModificationError aborts a commit because a commit that won the race since the
// transaction's snapshot changed what the transaction depends on: the protocol or the
// metadata (schema, partitioning, configuration), a domain it writes, or — for a commit
// that is not a blind append — a file it read or removes (removed by the winner), or rows
// its read predicate matches (added by the winner); or, with the Reason saying so, a
// commit since the snapshot that the log's clean-up deleted (CleanupLog: the snapshot is
// older than the log retention), which cannot be checked. Version is the winning commit's
// version, Path the data file concerned ("" for the others) and Reason names what it
// changed. Re-read the table (and re-validate the schema) before trying again; retrying the
// same transaction cannot succeed (docs/reference/delta-protocol.md §10.2; Spark
// ConflictChecker: ProtocolChangedException, MetadataChangedException,
// ConcurrentAppendException, ConcurrentDeleteReadException,
// ConcurrentDeleteDeleteException).
type ConcurrentModificationError struct {
	Version int64
	Path    string
	Reason  string
}

func (e *ConcurrentModificationError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("deltalog: concurrent commit at version %d %s (%s)", e.Version, e.Reason, e.Path)
	}
	return fmt.Sprintf("deltalog: concurrent commit at version %d %s", e.Version, e.Reason)
}

// ErrAppendOnly refuses a commit that removes data (a remove with dataChange true) from a
// table whose appendOnly feature is active (delta.appendOnly=true,
// docs/reference/delta-protocol.md §6.6).
var ErrAppendOnly = errors.New("deltalog: the table is append-only (delta.appendOnly): a commit may not remove data")

// InvalidCommitError refuses a transaction whose actions the protocol forbids in one commit
// (docs/reference/delta-protocol.md §2.6, §2.9): a logical file added or removed twice, a
// path re-added with another deletion vector without removing the live one, a delta.*
// domain, or domain metadata on a table without the domainMetadata feature. Nothing is
// written; it is a bug in the caller.
type InvalidCommitError struct {
	Reason string
}

func (e *InvalidCommitError) Error() string { return "deltalog: invalid commit: " + e.Reason }

// ConcurrentTxnError aborts a commit because a winning commit (Version) moved the txn
// version of the transaction's own application id to Recorded, below the transaction's
// version: two writers are working for one application id (Spark:
// ConcurrentTransactionException). A winner that recorded a version at or above ours makes
// the commit skipped instead (CommitResult.Skipped).
type ConcurrentTxnError struct {
	AppID    string
	Version  int64
	Recorded int64
}

func (e *ConcurrentTxnError) Error() string {
	return fmt.Sprintf("deltalog: concurrent commit at version %d moved txn %q to %d", e.Version, e.AppID, e.Recorded)
}

// SchemaChangeError refuses a SetSchema that is not an allowed evolution: only new nullable
// columns may be added (at the end); a type change, a dropped or renamed column, a
// nullability change, or a change of case is refused. Column is the top-level column.
type SchemaChangeError struct {
	Column string
	Reason string
}

func (e *SchemaChangeError) Error() string {
	return fmt.Sprintf("deltalog: schema change on column %q not allowed: %s", e.Column, e.Reason)
}

// CommitAttemptsError: every attempt lost the race to another writer and the retry budget
// (Txn.MaxAttempts) ran out. Attempts is the number of Write calls made; LastVersion is the
// version last tried. Nothing was committed.
type CommitAttemptsError struct {
	Attempts    int
	LastVersion int64
}

func (e *CommitAttemptsError) Error() string {
	return fmt.Sprintf("deltalog: commit gave up after %d attempts (last tried version %d)", e.Attempts, e.LastVersion)
}

// CommitUnknownError: the log store failed in a way that leaves Version undecided and the
// outcome could not be read back (logstore contract: "any other error leaves v undecided").
// The commit may or may not exist. Retry with the same txn(appId, version) — a landed
// commit then reports Skipped — or read the table to find out.
type CommitUnknownError struct {
	Version int64
	Err     error
}

func (e *CommitUnknownError) Error() string {
	return fmt.Sprintf("deltalog: outcome of commit at version %d unknown: %v", e.Version, e.Err)
}

func (e *CommitUnknownError) Unwrap() error { return e.Err }

// ErrNoSchema is returned by Commit when the transaction would create a table (its snapshot
// has no version) but SetSchema was not called.
var ErrNoSchema = errors.New("deltalog: creating a table needs SetSchema")

// ErrTxnDone is returned by a second Commit on the same Txn.
var ErrTxnDone = errors.New("deltalog: transaction already committed")

// ErrTxnNotCommitted is returned by NextSnapshot before a successful Commit.
var ErrTxnNotCommitted = errors.New("deltalog: transaction not committed")
