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
//
// Exclusion holds only between writers using the same log store: every writer of a table
// must commit through one DynamoDB table (Coordinated), or all by conditional put. The
// DynamoDB kind leaves its mark in the table (DynamoTempFile), by which deltalog refuses a
// writer of the other kind; the reverse leaves none (docs/decisions/0029-mixed-log-stores.md).
package logstore

import (
	"context"
	"errors"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/deltalog/internal/logname"
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

// Lister is implemented by log stores that can take the latest version from a reader's own
// listing of the log, so that a table's first open, which lists the log anyway to find its
// checkpoint, does not list it a second time through Latest.
type Lister interface {
	// OpenLatest is Latest for a table's first open. list lists the log and returns the
	// newest commit file it saw (-1: none) and that file's ETag as the listing showed it
	// (the identity by which the log store tells the log from one written again later,
	// Replacements): from version from when from >= 0 (0: the whole
	// log); with ListWholeIfShort, the whole log when one listing request holds it, else
	// from where _last_checkpoint says; with any other negative from, from where
	// _last_checkpoint says. OpenLatest calls it once, completes a
	// half-done newest commit, if any, and returns the newest version: what list saw, or
	// a newer one. The log store's next Latest lists from what it learned. S3 conditional
	// put and local disk make no request of their own (their Latest is a listing);
	// DynamoDB makes one Query before the listing, and when its newest entry shows a
	// short log, has it listed whole without reading _last_checkpoint; when it finds no
	// entry (a new table, or one without a commit for the entries' TTL), it passes
	// ListWholeIfShort (logstore/dynamo).
	OpenLatest(ctx context.Context, list func(ctx context.Context, from int64) (int64, string, error)) (int64, error)
}

// ListWholeIfShort, as the from of OpenLatest's list, asks for the whole log when one
// listing request (1,000 keys) holds it, so an empty or short log is opened without reading
// _last_checkpoint; a longer one costs that listing request on top of reading
// _last_checkpoint and listing from it.
const ListWholeIfShort int64 = -2

// Replacements is implemented by log stores that tell a log deleted and written again
// under the same path (a table started over) from the one they knew, at no request more:
// they keep the identity of the newest commit they wrote or saw (its file's ETag, or its
// DynamoDB entry's tempPath) and check it in the listing or query their Latest makes
// anyway. A caller that keeps state read through the log store (deltalog.Table's kept
// snapshot) drops that state when the count moves, and reads the table as a new process
// would. docs/decisions/0016-own-write-identity.md § Tables started over says
// what is and is not told.
type Replacements interface {
	// Replaced counts the times this log store found the log it knew replaced: the
	// newest commit it knew missing, or another one in its place. It only grows.
	Replaced() uint64
}

// Joint is implemented by log stores that can ask for the latest version of another
// table's log in the request they make for their own (DynamoDB: one BatchGetItem for two
// tables' entries in one DynamoDB table), so a caller that needs both tables' newest state
// at once (a warm stream invocation: its facts table's txn and bronze's) pays one request,
// not two (docs/decisions/0019-dynamo-warm-check-one-request.md).
type Joint interface {
	LogStore
	// JointWith reports whether LatestWith can ask for other's latest version in this log
	// store's request.
	JointWith(other LogStore) bool
	// LatestWith returns this log store's Latest and, when it could answer for other in
	// the same request at no request more (ok true), other's Latest: the same answers,
	// with the same completion of half-done commits and the same telling of a replaced
	// log (Replacements), as Latest calls give. With ok false the caller asks other's
	// Latest when it needs it.
	LatestWith(ctx context.Context, other LogStore) (v, otherV int64, ok bool, err error)
}

// Wrapper is implemented by a log store that wraps another (a test's fault injection,
// a counter) and passes every call on, so that a Joint log store finds its own kind
// under it (Unwrap).
type Wrapper interface {
	Unwrap() LogStore
}

// Unwrap returns l without the Wrappers around it.
func Unwrap(l LogStore) LogStore {
	for {
		w, ok := l.(Wrapper)
		if !ok {
			return l
		}
		l = w.Unwrap()
	}
}

// DynamoTempDir is where Delta's S3DynamoDBLogStore (Spark's, and logstore/dynamo after it)
// writes each commit before its DynamoDB entry claims the version:
// _delta_log/.tmp/<v:020>.json.<uuid> (docs/reference/delta-protocol.md §13.5). They never
// delete these files (an S3 lifecycle rule does), so one there (DynamoTempFile) shows a
// table whose commits a DynamoDB table coordinates.
const DynamoTempDir = "_delta_log/.tmp/"

// DynamoTempFile reports whether key is a DynamoDB log store's temporary commit file,
// DynamoTempDir + "<v:020>.json.<id>", and returns the version it names. Other files
// under .tmp/ (an "<v:020>.json" without an id, which other writers leave) are not.
func DynamoTempFile(key string) (version int64, ok bool) {
	rest, ok := strings.CutPrefix(key, DynamoTempDir)
	if !ok || len(rest) <= 26 || rest[20:26] != ".json." || strings.Contains(rest, "/") {
		return 0, false
	}
	return logname.ParseVersion(rest[:20])
}

// Coordinated is implemented by log stores whose exclusion lives outside the table's
// files, in a service every writer of the table must share (logstore/dynamo: one DynamoDB
// table). A writer committing through any other log store bypasses it, and two commits
// can then claim one version, so deltalog refuses a commit through a log store that is not
// Coordinated to a table that shows DynamoDB coordination (a DynamoTempFile in its log).
type Coordinated interface {
	LogStore
	// Coordinator names the shared service, for messages ("DynamoDB table delta_log").
	Coordinator() string
}
