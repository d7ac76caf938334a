package silver

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
)

// Silver's own columns, after the captured ones (docs/silver.md § Columns): the LSN and
// the UTC commit time of the image a row holds.
const (
	ColStartLSN = bronze.ColStartLSN
	ColCommitTS = bronze.ColCommitTS
)

// Schema is silver's schema for bronze's: the captured columns in bronze's order and with
// bronze's types, then _start_lsn (string) and _commit_ts (timestamp_ntz), all nullable.
// A column bronze gains later is added to silver; a type never changes (bronze's never
// do).
func Schema(bronzeSchema *arrow.Schema) *arrow.Schema {
	fields := bronze.CapturedFields(bronzeSchema)
	out := make([]arrow.Field, 0, len(fields)+2)
	out = append(out, fields...)
	out = append(out,
		arrow.Field{Name: ColStartLSN, Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: ColCommitTS, Type: bronze.CommitTSType, Nullable: true})
	return arrow.NewSchema(out, nil)
}

// conform returns rec's columns as a record of schema: each field taken by name (exact,
// then ignoring case) or, when rec lacks it, a NULL column. The types must already agree.
// The caller releases the result.
func conform(rec arrow.RecordBatch, schema *arrow.Schema) arrow.RecordBatch {
	n := rec.NumRows()
	cols := make([]arrow.Array, len(schema.Fields()))
	for i, f := range schema.Fields() {
		if j := fieldIndexFold(rec.Schema(), f.Name); j >= 0 && arrow.TypeEqual(rec.Column(j).DataType(), f.Type) {
			cols[i] = rec.Column(j)
			cols[i].Retain()
		} else {
			cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, int(n))
		}
	}
	out := array.NewRecordBatch(schema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return out
}
