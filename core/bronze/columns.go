package bronze

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// Names of the metadata columns (docs/design.md §4.2, docs/bronze.md § Columns). They keep
// the original's names so downstream SQL runs unchanged.
const (
	ColCaptureInstance = "_capture_instance"
	ColStartLSN        = "_start_lsn"
	ColSeqval          = "_seqval"
	ColOperation       = "_operation"
	ColCommandID       = "_command_id"
	ColCommitTS        = "_commit_ts"
	ColBatchID         = "_batch_id"
	ColSnapshot        = "_snapshot"
	ColChunk           = "_chunk"
)

// Values of _operation: the CDC __$operation codes, and 0 for a snapshot row.
const (
	OpSnapshot     int32 = 0
	OpDelete       int32 = 1
	OpInsert       int32 = 2
	OpUpdateBefore int32 = 3
	OpUpdateAfter  int32 = 4
)

// CommitTSType is the type of _commit_ts and of datetime/datetime2/smalldatetime columns:
// microseconds without a zone, Delta timestamp_ntz.
var CommitTSType = &arrow.TimestampType{Unit: arrow.Microsecond}

// UTCTimestampType is the type of datetimeoffset columns: the UTC instant in
// microseconds, Delta timestamp.
var UTCTimestampType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// leadingFields are the metadata columns before the captured columns, in order.
var leadingFields = []arrow.Field{
	{Name: ColCaptureInstance, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColStartLSN, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColSeqval, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColOperation, Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: ColCommandID, Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: ColCommitTS, Type: CommitTSType, Nullable: true},
}

// trailingFields are the writer's columns after the captured columns, in order.
var trailingFields = []arrow.Field{
	{Name: ColBatchID, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: ColSnapshot, Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ColChunk, Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}

// MetadataFields returns the metadata columns of a bronze table in table order: the six
// leading ones then the three trailing ones. The slice is a copy.
func MetadataFields() []arrow.Field {
	out := make([]arrow.Field, 0, len(leadingFields)+len(trailingFields))
	out = append(out, leadingFields...)
	return append(out, trailingFields...)
}

// IsMetadataColumn reports whether name is a metadata column name, ignoring case (Delta
// column names are unique ignoring case, docs/reference/delta-protocol.md §5.1).
func IsMetadataColumn(name string) bool {
	_, ok := metadataName(name)
	return ok
}
