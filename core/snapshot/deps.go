package snapshot

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Bronze is what the steps need of the bronze Delta table. DeltaBronze implements it on
// deltalog; the interface keeps the steps testable without a log.
type Bronze interface {
	// Schema is the table's Arrow schema; nil when the table does not exist yet.
	Schema(ctx context.Context) (*arrow.Schema, error)
	// WholeSnapshots lists the whole snapshots in the table: the distinct
	// coalesce(_snapshot, _start_lsn) of rows with _operation = 0 and _chunk NULL whose
	// lower(_capture_instance) is one of instances (lower-cased names), each with the
	// largest _commit_ts of its rows (reference original-snapshots-and-sql.md §2.2
	// _last_snapshot). Any order.
	WholeSnapshots(ctx context.Context, instances []string) ([]FoundSnapshot, error)
	// NewFileWriter starts Parquet data files of schema in the table's folder; they hold
	// no log entry until AppendOnce commits them.
	NewFileWriter(schema *arrow.Schema) FileWriter
	// AppendOnce commits files in one Delta commit keyed txn(a.AppID, a.Version), setting
	// or evolving the table's schema to a.Schema. A commit whose txn the table already
	// holds is skipped (skipped true, version the table's current one).
	AppendOnce(ctx context.Context, a Append) (version int64, skipped bool, err error)
}

// FoundSnapshot is a snapshot found in bronze.
type FoundSnapshot struct {
	LSN      lsn.LSN
	CommitTS *time.Time
}

// FileWriter streams bronze records into data files of bounded size.
type FileWriter interface {
	// Write appends rec; the caller keeps ownership of rec.
	Write(ctx context.Context, rec arrow.RecordBatch) error
	// Close flushes and returns every file written.
	Close(ctx context.Context) ([]DataFile, error)
	// Abort drops what is buffered; files already written are orphans for VACUUM.
	Abort(ctx context.Context)
}

// DataFile is one Parquet file written in the table's folder, as its Delta add action
// needs it.
type DataFile struct {
	Path       string    `json:"path"` // relative to the table root
	Size       int64     `json:"size"`
	ModTime    time.Time `json:"mod_time"`
	NumRecords int64     `json:"num_records"`
	Stats      string    `json:"stats,omitempty"` // Delta stats JSON
}

// Append is one snapshot commit.
type Append struct {
	AppID        string
	Version      int64
	Schema       *arrow.Schema
	Files        []DataFile
	UserMetadata string
	// Operation and OperationParameters go to commitInfo.
	Operation           string
	OperationParameters map[string]string
}

// Facts is what the steps need of the facts table (reference original-stream-and-tables.md
// §9). FactsTable implements it on core/facts.
type Facts interface {
	// OpenSnapshots lists the snapshots of appID still open: a snapshot_open row without
	// a bootstrap or resnapshot row of the same app_id with max_lsn >= its LSN.
	OpenSnapshots(ctx context.Context, appID string) ([]OpenSnapshot, error)
	// SnapshotOpened appends a snapshot_open row (mode full: unkeyed, one per run).
	SnapshotOpened(ctx context.Context, ev FactsEvent) error
	// Bootstrapped appends the bootstrap row keyed txn(<app_id>#events, 0): a second call
	// for the same app_id writes nothing.
	Bootstrapped(ctx context.Context, ev FactsEvent) error
}

// OpenSnapshot is an open snapshot in the facts.
type OpenSnapshot struct {
	LSN        string
	Mode       string // "full" or "chunked"
	Generation int
}

// FactsEvent is a snapshot facts row: min_lsn = max_lsn = end_lsn = LSN, the commit-time
// columns CommitTS.
type FactsEvent struct {
	AppID      string
	Target     string
	LSN        string
	CommitTS   *time.Time
	Rows       *int64
	StartedAt  *time.Time
	DurationMs *int64
	// Detail is the row's detail JSON (snapshot_open: {mode, kind, generation, ...}).
	Detail string
}

// Checkpoint is what Open needs of the stream's checkpoint: the offset it resumes from.
type Checkpoint interface {
	// Latest is the end offset of the newest batch in offsets/; ok false when there is
	// none (a fresh checkpoint).
	Latest(ctx context.Context) (o lsn.Offset, ok bool, err error)
}

// Staging is the store rooted at the checkpoint prefix where the steps keep their state
// between invocations (snapshots/<L>/...).
type Staging = storage.Store
