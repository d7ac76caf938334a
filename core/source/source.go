// Package source is everything the engine asks of SQL Server, as one interface.
//
// The stream, the full and chunked snapshots and the seed read SQL Server only through
// Source. Two implementations exist: core/source/mssql, the T-SQL on go-mssqldb that users
// run, and core/source/cdcsim, an in-memory simulator that the tests and the demo run. The
// contract suite in core/source/sourcetest holds both to the SQL Server behaviours the
// engine relies on (docs/reference/sqlserver-cdc.md, docs/reference/lab-findings.md).
//
// Conventions:
//   - LSNs are lsn.LSN values; the zero LSN stands for "none".
//   - Every time is UTC. Commit times come from cdc.lsn_time_mapping.tran_end_time, which is
//     on the server's local clock; implementations convert (sourceTimeZone, DST fall-back).
//   - Rows come back as Arrow record batches of bounded size (ReadOptions). Nothing reads a
//     whole range into memory.
//   - Source-table reads (ReadTable and the key look-ups) run under Isolation with the
//     optional lock timeout; never NOLOCK, never READ UNCOMMITTED. Change-table and metadata
//     reads take neither.
//   - Errors callers branch on are the typed errors in errors.go. Input outside a method's
//     contract is an *InvalidArgumentError before anything is read: a capture instance
//     name CheckCaptureInstance refuses, a table or column name CheckName refuses, n or
//     width below its minimum, a key of the wrong arity or type.
package source

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// Source is one SQL Server database with CDC enabled. Implementations are safe for
// concurrent use: each call may run on its own connection.
type Source interface {
	// MaxLSN is sys.fn_cdc_get_max_lsn(): the newest commit LSN capture has processed,
	// database-wide. It advances on an idle database (capture writes idle entries about
	// every five minutes). Zero when capture has never written.
	MaxLSN(ctx context.Context) (lsn.LSN, error)

	// ServerNow is SYSUTCDATETIME(): SQL Server's clock now, UTC, the clock commit times
	// are on. A seed refuses a time as_of later than it (docs/seed.md § Rules).
	ServerNow(ctx context.Context) (time.Time, error)

	// MinLSN is sys.fn_cdc_get_min_lsn(ci): the low watermark of a capture instance, moved
	// by cleanup before it deletes rows. A capture instance that does not exist, that the
	// login may not see, or that capture has not processed yet (NULL or zero) is a
	// *CaptureInstanceNotFoundError.
	MinLSN(ctx context.Context, captureInstance string) (lsn.LSN, error)

	// CommitTime is the UTC commit time of the commit whose LSN is exactly l (like
	// sys.fn_cdc_map_lsn_to_time). ok is false when l is no commit's (a DDL LSN, a
	// decremented LSN, the zero LSN, a purged mapping row). Millisecond precision.
	CommitTime(ctx context.Context, l lsn.LSN) (t time.Time, ok bool, err error)

	// CommitAtOrBefore is the last commit at or before l: its LSN and UTC commit time.
	// ok is false when no commit that old is left in cdc.lsn_time_mapping.
	CommitAtOrBefore(ctx context.Context, l lsn.LSN) (c Commit, ok bool, err error)

	// LSNAtOrBefore is sys.fn_cdc_map_time_to_lsn('largest less than or equal', t) for a UTC
	// time t: the last commit at or before t, biased earlier (t truncated to whole seconds;
	// on a DST fall-back the earlier reading). ok is false when no commit is that old. The
	// zero time is an *InvalidArgumentError.
	LSNAtOrBefore(ctx context.Context, t time.Time) (l lsn.LSN, ok bool, err error)

	// NthCommitAfter is the n-th commit LSN strictly after l in cdc.lsn_time_mapping,
	// counted database-wide (idle entries and other tables' commits count); with fewer
	// than n such commits, the last one. ok is false when there is none. n >= 1, else
	// *InvalidArgumentError.
	NthCommitAfter(ctx context.Context, after lsn.LSN, n int) (l lsn.LSN, ok bool, err error)

	// CaptureInstances lists every capture instance of the database
	// (sys.sp_cdc_help_change_data_capture), sorted by (CreateDate, StartLSN), oldest
	// first. Use Resolve to find one by name. CDC not enabled on the database is a
	// *CDCNotEnabledError.
	CaptureInstances(ctx context.Context) ([]CaptureInstance, error)

	// CapturedColumns lists the columns a capture instance captures
	// (sys.sp_cdc_get_captured_columns), sorted by Ordinal, with Computed and Present
	// filled from the source table (sys.columns, matched by column_id).
	CapturedColumns(ctx context.Context, captureInstance string) ([]Column, error)

	// DDLHistory lists the DDL of a capture instance (sys.sp_cdc_get_ddl_history) with
	// after < LSN <= upto, oldest first. Time is the commit time of the last commit at or
	// before the DDL's LSN.
	DDLHistory(ctx context.Context, captureInstance string, after, upto lsn.LSN) ([]DDLEvent, error)

	// ReadChanges reads the change table cdc.[<ci>_CT] over the closed range
	// [r.From, r.To], ordered by (__$start_lsn, __$command_id, __$seqval, __$operation).
	// Records have the ChangeSchema: _start_lsn, _seqval, _operation, _command_id,
	// _commit_ts, then r.Columns. A column the instance lacks is read as typed NULL; one
	// with Present false, dropped from the source table, is still read from the change
	// table, which keeps its values captured before the DROP and NULL after it
	// (docs/reference/sqlserver-cdc.md §6.2). A purged range reads as empty, without
	// error: callers check MinLSN before and after. From > To reads nothing.
	ReadChanges(ctx context.Context, r ChangeRead) (Rows, error)

	// SplitChanges cuts the change rows of [from, to] into up to n tiles of about equal
	// rows (NTILE over __$start_lsn). A commit never straddles two tiles: each tile ends on
	// its last commit's LSN. Tiles are returned in order; adjacent tiles can share an end,
	// which is then returned once. No rows, no tiles.
	SplitChanges(ctx context.Context, captureInstance string, from, to lsn.LSN, n int) ([]Tile, error)

	// ReadTable reads the source table's current rows inside r.Range under r.Table's
	// isolation and lock timeout. Records hold r.Columns in order (bronze types). No order
	// is promised. A blocked read past the lock timeout is a *LockTimeoutError. No
	// columns, a negative lock timeout, an isolation other than the two below, or a bound of
	// the wrong arity or Go type for its key column is an *InvalidArgumentError.
	ReadTable(ctx context.Context, r TableRead) (Rows, error)

	// KeyExtent is the MIN and MAX of one key column (S1), restricted to [lo, hi) when
	// given (integers only). ok is false for an empty table or range.
	KeyExtent(ctx context.Context, t Table, key Column, lo, hi *int64) (min, max any, ok bool, err error)

	// KeyMax is the last key in ORDER BY order of keys (S2). ok is false for an empty table.
	KeyMax(ctx context.Context, t Table, keys []Column) (k Key, ok bool, err error)

	// KeyBound is the key that leaves exactly n rows in [lo, key) (S6): the (n+1)-th key at
	// or after lo, below hi. ok is false when [lo, hi) holds n rows or fewer. A nil lo or
	// hi is open. With lo = x, hi = nil, n = 0 it is the first key at or after x; with
	// n = 1 and lo the MAX, the first key strictly after MAX.
	KeyBound(ctx context.Context, t Table, keys []Column, r KeyRange, n int64) (k Key, ok bool, err error)

	// KeyAfter is the first key strictly after after in key order, as SQL Server compares
	// keys (collations: under a case-insensitive one 'a' and 'A' are one value, trailing
	// spaces ignored; uniqueidentifier byte-group order; NULL first): one seek, TOP (1) of
	// the keys above after. On columns that are not unique (snapshotKeys on a heap) it
	// skips every row of after's value, which KeyBound cannot. ok is false when no key is
	// above after. A nil after, or one of the wrong arity or Go type, is an
	// *InvalidArgumentError (docs/reference/sqlserver-cdc.md §8.5).
	KeyAfter(ctx context.Context, t Table, keys []Column, after Key) (k Key, ok bool, err error)

	// KeyTiles is the first key of tiles 2..n of NTILE(n) over the keys (S3): n-1 bounds
	// or fewer (a table of fewer than n rows gives one row per tile).
	KeyTiles(ctx context.Context, t Table, keys []Column, n int) ([]Key, error)

	// KeyBuckets counts the rows per bucket of an integer key, and sums their keys, in one
	// scan (S4): bucket b holds the keys in [b*width, (b+1)*width), floored for negative
	// keys; NULL keys are not counted. A date key counts as its days since 1970-01-01
	// (1969-12-31 is -1), summed as such. Restricted to [lo, hi) when given (integer keys
	// only). Buckets are returned in order, empty ones left out. width >= 1, a key of another
	// type, or bounds on a date key: *InvalidArgumentError (docs/reconcile.md).
	KeyBuckets(ctx context.Context, t Table, key Column, width int64, lo, hi *int64) ([]Bucket, error)

	// SizeEstimate is the table's row count and data size from sys.sp_spaceused (its rows
	// and data columns): estimates, kept by SQL Server's metadata, read without a scan.
	SizeEstimate(ctx context.Context, t Table) (TableSize, error)

	// Ping is one `SELECT 1` round trip on a connection of its own, timed from sending the
	// statement to reading its row (acquiring or logging in the connection is not counted):
	// the source_rtt_ms input of the facts row (docs/reference/sqlserver-cdc.md §11,
	// docs/facts.md § Columns). The duration is positive. An error is
	// returned as is; callers measuring metrics record NULL and go on.
	Ping(ctx context.Context) (time.Duration, error)

	// Close releases connections. Calls after Close fail.
	Close() error
}

// Commit is one row of cdc.lsn_time_mapping: a commit's LSN and its UTC commit time.
type Commit struct {
	LSN  lsn.LSN
	Time time.Time
}

// CaptureInstance is one row of sys.sp_cdc_help_change_data_capture.
type CaptureInstance struct {
	Name         string
	SourceSchema string
	SourceTable  string
	// StartLSN is the instance's first LSN. Until capture reaches it, it can be above
	// MaxLSN and MinLSN reports the instance as not found.
	StartLSN   lsn.LSN
	CreateDate time.Time
	// IndexColumns are the columns of the unique index CDC identifies rows by, in index
	// order (index_column_list). Empty for a table without one (a heap).
	IndexColumns []string
}

// Column is a captured column of a capture instance, or a key column.
type Column struct {
	Name string
	// Ordinal is column_ordinal in the capture instance (1-based); ColumnID is the source
	// table's column_id, which a DROP and ADD of the same name changes.
	Ordinal  int
	ColumnID int
	// DataType is the SQL Server type name in lowercase, without arguments: "int",
	// "decimal", "nvarchar", "datetime2", ... Alias types are given as their base type.
	DataType string
	// Precision and Scale for decimal/numeric; DatetimePrecision for time, datetime2 and
	// datetimeoffset (0..7).
	Precision         int
	Scale             int
	DatetimePrecision int
	// MaxLength is character_maximum_length: characters for char types, bytes for binary,
	// -1 for (max).
	MaxLength int
	// Collation of a char/varchar/nchar/nvarchar column ("" otherwise), e.g.
	// "SQL_Latin1_General_CP1_CI_AS". A name ending in _CI_ compares case-insensitively.
	Collation string
	// Computed columns are captured but NULL in every change row.
	Computed bool
	// Present is false when the source table no longer has the column (DROP COLUMN): the
	// change table keeps it, with the captured values of rows changed before the DROP and
	// NULL in rows changed after it, while a SELECT of it from the table fails (ReadTable
	// reads it as NULL).
	Present bool
	// Nullable is the source column's nullability.
	Nullable bool
}

// DDLEvent is one row of sys.sp_cdc_get_ddl_history.
type DDLEvent struct {
	LSN     lsn.LSN
	Time    time.Time
	Command string
	// RequiredColumnUpdate marks a type change (ALTER COLUMN).
	RequiredColumnUpdate bool
}

// ChangeRead names a closed LSN range of one capture instance's change table.
type ChangeRead struct {
	CaptureInstance string
	From, To        lsn.LSN
	// Columns to read after the metadata columns, from CapturedColumns (or a union over
	// instances: a column this instance lacks is read as NULL).
	Columns []Column
	// WithoutCommandID neither reads nor orders by __$command_id (includeCommandId:
	// false): rows come in (__$start_lsn, __$seqval, __$operation) order and _command_id
	// is NULL. For change tables an upgrade left without the column; reading one without
	// it is a *CommandIDMissingError.
	WithoutCommandID bool
	ReadOptions
}

// Table names a source table and how its rows are read.
type Table struct {
	Schema string
	Name   string
	// Isolation is ReadCommitted (the default, "") or Snapshot.
	Isolation Isolation
	// LockTimeout, when set, is SET LOCK_TIMEOUT in milliseconds (0 = do not wait);
	// nil waits for ever. lockTimeoutMs in the table spec.
	LockTimeout *time.Duration
}

// TableRead names the rows of a source table inside a key range.
type TableRead struct {
	Table
	// Columns are read in this order. A column with Present false is read as NULL.
	Columns []Column
	// Keys are the columns Range bounds compare on, in order. Empty with an open range
	// reads the whole table.
	Keys  []Column
	Range KeyRange
	// AtLeast, when not zero, is the LSN the table state read must include: a snapshot's
	// stamp S. The reading session first checks that its own sys.fn_cdc_get_max_lsn() is at
	// least AtLeast; a session on a secondary whose redo is behind it would return rows
	// older than S that the stream (starting after S) never repairs. Such a session is a
	// *ReplicaBehindError inside a *TransientError (docs/reference/sqlserver-cdc.md §13).
	AtLeast lsn.LSN
	ReadOptions
}

// ReadOptions bound the record batches a read returns. A negative value is an
// *InvalidArgumentError from ReadChanges and ReadTable (see Check).
type ReadOptions struct {
	// BatchRows caps the rows per record batch; 0 means DefaultBatchRows.
	BatchRows int
	// BatchBytes caps the approximate bytes per record batch; 0 means DefaultBatchBytes.
	BatchBytes int
}

// Check refuses negative caps with an *InvalidArgumentError.
func (o ReadOptions) Check() error {
	if o.BatchRows < 0 {
		return &InvalidArgumentError{Arg: "batch rows", Reason: "negative"}
	}
	if o.BatchBytes < 0 {
		return &InvalidArgumentError{Arg: "batch bytes", Reason: "negative"}
	}
	return nil
}

// Defaults of ReadOptions.
const (
	DefaultBatchRows  = 10_000
	DefaultBatchBytes = 64 << 20
)

// Isolation is the transaction isolation level of source-table reads.
type Isolation string

// Isolation levels. READ UNCOMMITTED and NOLOCK do not exist here on purpose: a dirty
// read that a rollback removes is never corrected by a change row.
const (
	ReadCommitted Isolation = "read_committed"
	Snapshot      Isolation = "snapshot"
)

// Key is one key value per key column, in key order. Values are Go values of the
// column's bronze type: int64 for integer types, bool for bit, float64 for real and
// float, string for char types, uniqueidentifier (uppercase canonical form), time and
// decimal (fixed-point text), time.Time (UTC) for date and datetime types, []byte for
// binary types; nil is NULL, which sorts first.
type Key []any

// KeyRange is [Lo, Hi) in key order. A nil Lo is open below and includes NULL keys; a nil
// Hi is open above.
type KeyRange struct {
	Lo Key
	Hi Key
}

// Tile is one tile of SplitChanges: its last commit LSN, the LSN the next tile starts at
// (Next = Last.Next()) and its rows.
type Tile struct {
	Last lsn.LSN
	Next lsn.LSN
	Rows int64
}

// Bucket is one bucket of KeyBuckets: keys in [Index*width, (Index+1)*width).
type Bucket struct {
	Index int64
	Rows  int64
	// KeySum is the exact sum of the bucket's keys as canonical decimal text ("-15",
	// "0"), summed as decimal(38,0) on the server so it cannot overflow: with Rows, what
	// reconcile compares a bucket by (docs/reconcile.md).
	KeySum string
}

// Rows is a stream of record batches. Next returns the next batch, which the caller
// releases, or (nil, io.EOF) at the end. Close may be called at any point, more than
// once, and releases the connection; Next after Close is ErrClosed, never io.EOF.
type Rows interface {
	Schema() *arrow.Schema
	Next(ctx context.Context) (arrow.RecordBatch, error)
	Close() error
}

// NetworkWaiter is implemented by the Rows of ReadChanges when the source can tell how long
// the read's session waited for the client to consume rows: the growth of the session's
// ASYNC_NETWORK_IO wait (sys.dm_exec_session_wait_stats, wait_time_ms for session_id = @@SPID)
// between just before the read and its end, on the same session
// (docs/reference/sqlserver-cdc.md §11; network_wait_ms in docs/facts.md § Columns). No row
// for the wait type counts as 0.
//
// NetworkWait is valid once the rows have been drained (Next returned io.EOF) or closed;
// before that ok is false. ok is also false when the wait could not be read (the view is
// not exposed, a query failed, the read failed): the facts column is then NULL. The
// duration has millisecond resolution and is never negative. Measuring never fails a read.
type NetworkWaiter interface {
	NetworkWait() (wait time.Duration, ok bool)
}

// TableSize is a table's size as SQL Server's metadata estimates it (SizeEstimate).
type TableSize struct {
	// Rows is the row count.
	Rows int64
	// Bytes is the data's size in bytes: the pages holding the rows (in-row, row-overflow
	// and LOB data), without indexes other than the clustered one. 0 for an empty table.
	Bytes int64
}
