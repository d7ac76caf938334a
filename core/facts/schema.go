// Package facts is the facts table: one row per stream batch plus event rows (snapshots,
// schema changes, capture-instance switches, skipped data), shared by many tables, and the
// look-ups the jobs make in it (docs/facts.md). Columns, event kinds, formulas and
// idempotency keys are those of the original library (docs/reference/original-library.md
// §6), unchanged, except that facts rows hold no source key values (docs/design.md §4.3):
// chunk bounds live in the plans table.
//
// Every time column is timestamp_ntz in UTC (microseconds). Every append goes through
// deltalog/ingest keyed by a Delta txn, so that a replayed step never writes a row twice
// (docs/reference/original-library.md §6.2):
//
//	micro-batch row and its event rows   txn(<app_id>#facts, batch id)   TxnFacts
//	bootstrap / resnapshot               txn(<app_id>#events, 0 or n)    TxnEvents
//	snapshot_open (full)                 txn(<app_id>#open.<L>, 0)       TxnOpen
//	snapshot_open (chunked)              txn(<app_id>#snapshots, n)      TxnSnapshots
//	snapshot_chunk                       txn(<app_id>#snapchunks.<S>, wave) TxnSnapChunks
//	snapshot_plan                        txn(<app_id>#snapplan.<S>, 0)   TxnSnapPlan
package facts

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// Column names, in creation order (docs/facts.md). Readers select by name: tables migrated
// by the original append columns after written_at.
const (
	ColAppID                  = "app_id"
	ColBatchID                = "batch_id"
	ColRows                   = "rows"
	ColMinLSN                 = "min_lsn"
	ColMaxLSN                 = "max_lsn"
	ColMinCommitTS            = "min_commit_ts"
	ColMaxCommitTS            = "max_commit_ts"
	ColDeletes                = "deletes"
	ColInserts                = "inserts"
	ColUpdates                = "updates"
	ColStartedAt              = "started_at"
	ColDurationMs             = "duration_ms"
	ColSourceRTTMs            = "source_rtt_ms"
	ColReadSeconds            = "read_seconds"
	ColReadMB                 = "read_mb"
	ColNetworkWaitMs          = "network_wait_ms"
	ColRetentionWatermarkTS   = "retention_watermark_ts"
	ColRetentionHeadroomHours = "retention_headroom_hours"
	ColEvent                  = "event"
	ColLostFromTS             = "lost_from_ts"
	ColLostToTS               = "lost_to_ts"
	ColSourceMaxCommitTS      = "source_max_commit_ts"
	ColCaptureLagSeconds      = "capture_lag_seconds"
	ColIngestionLagSeconds    = "ingestion_lag_seconds"
	ColEndLSN                 = "end_lsn"
	ColEndCommitTS            = "end_commit_ts"
	ColDetail                 = "detail"
	ColTarget                 = "target"
	ColWrittenAt              = "written_at"
)

// Event kinds (docs/reference/original-library.md §6.2); a micro-batch row has no event
// (NULL). Consumers filter event IN (bootstrap, resnapshot) for snapshots and event IS NULL
// for batches.
const (
	EventSnapshotOpen            = "snapshot_open"
	EventSnapshotPlan            = "snapshot_plan"
	EventSnapshotChunk           = "snapshot_chunk"
	EventBootstrap               = "bootstrap"
	EventResnapshot              = "resnapshot"
	EventSchemaChange            = "schema_change"
	EventCaptureInstanceSwitched = "capture_instance_switched"
	EventDataSkipped             = "data_skipped"
)

// TimestampType is the type of every time column: microseconds, no zone (timestamp_ntz),
// holding UTC.
var TimestampType = &arrow.TimestampType{Unit: arrow.Microsecond}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: ColAppID, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColBatchID, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: ColRows, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: ColMinLSN, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColMaxLSN, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColMinCommitTS, Type: TimestampType, Nullable: true},
	{Name: ColMaxCommitTS, Type: TimestampType, Nullable: true},
	{Name: ColDeletes, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: ColInserts, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: ColUpdates, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: ColStartedAt, Type: TimestampType, Nullable: true},
	{Name: ColDurationMs, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: ColSourceRTTMs, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: ColReadSeconds, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: ColReadMB, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: ColNetworkWaitMs, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: ColRetentionWatermarkTS, Type: TimestampType, Nullable: true},
	{Name: ColRetentionHeadroomHours, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: ColEvent, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColLostFromTS, Type: TimestampType, Nullable: true},
	{Name: ColLostToTS, Type: TimestampType, Nullable: true},
	{Name: ColSourceMaxCommitTS, Type: TimestampType, Nullable: true},
	{Name: ColCaptureLagSeconds, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: ColIngestionLagSeconds, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: ColEndLSN, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColEndCommitTS, Type: TimestampType, Nullable: true},
	{Name: ColDetail, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColTarget, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColWrittenAt, Type: TimestampType, Nullable: true},
}, nil)

// Schema is the facts table's Arrow schema, columns in creation order (docs/facts.md).
func Schema() *arrow.Schema { return schema }

// Txn app ids of the facts appends (docs/reference/original-library.md §6.2). The version
// is the batch id, generation, or wave as the package doc lists.
func TxnFacts(appID string) string                  { return appID + "#facts" }
func TxnEvents(appID string) string                 { return appID + "#events" }
func TxnSnapshots(appID string) string              { return appID + "#snapshots" }
func TxnOpen(appID string, snapshot lsn.LSN) string { return appID + "#open." + snapshot.String() }
func TxnSwitch(appID string, s lsn.LSN) string      { return appID + "#switch." + s.String() }
func TxnSnapChunks(appID, snapshot string) string   { return appID + "#snapchunks." + snapshot }
func TxnSnapPlan(appID, snapshot string) string     { return appID + "#snapplan." + snapshot }
