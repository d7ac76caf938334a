// Package logstore coordinates Delta commits: exactly one writer creates
// _delta_log/<version>.json. Implementations: DynamoDB compatible with Delta's
// S3DynamoDBLogStore (logstore/dynamo), S3 conditional put (logstore/condput) and local
// disk with an exclusive create (logstore/localfs).
//
// The contract, for every implementation:
//   - Write(ctx, v, data) makes data the content of version v, or returns ErrVersionExists
//     when another writer already holds v. Once Write has returned nil, version v is data,
//     for every reader, forever; once it has returned ErrVersionExists, v is not ours.
//     An error matching ErrRefused wrote nothing and will recur. Any other error leaves v
//     undecided: the caller re-reads the log to learn the outcome.
//   - Latest and Read complete any commit a writer left half-done (a DynamoDB entry not
//     yet copied to N.json), so every reader sees the same versions.
package logstore

import (
	"context"
	"errors"
)

// ErrVersionExists is returned (wrapped) by Write when the version is already taken.
var ErrVersionExists = errors.New("logstore: version already exists")

// ErrRefused is matched (errors.Is) by a Write error that is decided: nothing was
// written, the version is not taken by this call, and writing again will fail the same
// way until the table or the coordinator is repaired (dynamo's stale entries of a
// re-created table, a previous commit missing from the log). Callers report it instead
// of reading the version back and retrying.
var ErrRefused = errors.New("logstore: write refused")

// LogStore commits and reads the JSON commit files of one Delta table.
type LogStore interface {
	// Write creates _delta_log/<v:020>.json with data, once.
	Write(ctx context.Context, version int64, data []byte) error

	// Latest completes a half-done newest commit, if any, and returns the newest version
	// whose commit file exists, or -1 when the table has none. It may list the log.
	Latest(ctx context.Context) (int64, error)

	// Read returns the bytes of version v's commit file, completing it first if it is the
	// half-done newest one. storage.ErrNotFound (wrapped) when it does not exist.
	Read(ctx context.Context, version int64) ([]byte, error)
}

// Hinter is implemented by log stores whose Latest is the newest commit file a listing
// of the log shows, with nothing to complete (logstore/condput, logstore/localfs). A reader
// that lists the log itself (a table's first open) takes the latest version from its own
// listing instead of asking Latest, and passes it on with Hint: a version known to exist,
// where the log store's next Latest starts listing (0 for an empty log: list from the
// start, without reading _last_checkpoint).
type Hinter interface {
	Hint(version int64)
}
