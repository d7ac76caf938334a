package bronze

import (
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// SnapshotStamp is what a snapshot read stamps on every row it read
// (docs/reference/original-library.md §9.1, docs/bronze.md § Columns).
type SnapshotStamp struct {
	// CaptureInstance is the instance the snapshot was taken for.
	CaptureInstance string
	// LSN is the stamp L recorded before the read; it becomes _start_lsn.
	LSN lsn.LSN
	// CommitTS is the UTC commit time of L, or nil when unknown (_commit_ts NULL).
	CommitTS *time.Time
	// Snapshot is S, the snapshot the rows belong to; it becomes _snapshot.
	Snapshot lsn.LSN
	// Chunk is the chunk number of a chunked snapshot, nil for a full snapshot.
	Chunk *int32
}

// changeColumns are the columns a Source.ReadChanges record must hold.
var changeColumns = []string{ColStartLSN, ColSeqval, ColOperation, ColCommandID, ColCommitTS}

// ChangeRecord turns a Source.ReadChanges record (ChangeSchema) into a record of the
// bronze schema: _capture_instance is captureInstance, _batch_id is batchID, _snapshot and
// _chunk are NULL, the change metadata and captured columns come from rec. schema may hold
// more captured columns than rec (after schema evolution); they are NULL. Columns are
// matched by name, exactly or else ignoring case. A record column the schema lacks, a
// missing change metadata column or a type that differs from the schema's is a
// *RecordMismatchError; a nil schema or record a *source.InvalidArgumentError. The caller
// releases both records.
func ChangeRecord(schema *arrow.Schema, rec arrow.RecordBatch, captureInstance string, batchID int64) (arrow.RecordBatch, error) {
	if err := checkInputs(schema, rec); err != nil {
		return nil, err
	}
	n := int(rec.NumRows())
	for _, name := range changeColumns {
		if columnIndex(rec.Schema(), name) < 0 {
			f, _ := leadingField(name)
			return nil, &RecordMismatchError{Column: name, Want: f.Type}
		}
	}
	consts := map[string]func(memory.Allocator) arrow.Array{
		ColCaptureInstance: func(m memory.Allocator) arrow.Array { return repeatString(m, captureInstance, n) },
		ColBatchID:         func(m memory.Allocator) arrow.Array { return repeatInt64(m, batchID, n) },
	}
	return assemble(schema, rec, consts)
}

// SnapshotRecord turns a Source.ReadTable record (TableSchema) into a record of the bronze
// schema: _capture_instance, _start_lsn (st.LSN), _commit_ts, _snapshot (st.Snapshot) and
// _chunk come from st; _operation is 0; _seqval, _command_id and _batch_id are NULL; the
// captured columns come from rec. Missing columns and errors as in ChangeRecord.
func SnapshotRecord(schema *arrow.Schema, rec arrow.RecordBatch, st SnapshotStamp) (arrow.RecordBatch, error) {
	if err := checkInputs(schema, rec); err != nil {
		return nil, err
	}
	n := int(rec.NumRows())
	consts := map[string]func(memory.Allocator) arrow.Array{
		ColCaptureInstance: func(m memory.Allocator) arrow.Array { return repeatString(m, st.CaptureInstance, n) },
		ColStartLSN:        func(m memory.Allocator) arrow.Array { return repeatString(m, st.LSN.String(), n) },
		ColSeqval:          nil,
		ColOperation:       func(m memory.Allocator) arrow.Array { return repeatInt32(m, OpSnapshot, n) },
		ColCommandID:       nil,
		ColCommitTS: func(m memory.Allocator) arrow.Array {
			if st.CommitTS == nil {
				return nulls(m, CommitTSType, n)
			}
			return repeatTimestamp(m, arrow.Timestamp(st.CommitTS.UTC().UnixMicro()), n)
		},
		ColBatchID:  nil,
		ColSnapshot: func(m memory.Allocator) arrow.Array { return repeatString(m, st.Snapshot.String(), n) },
		ColChunk: func(m memory.Allocator) arrow.Array {
			if st.Chunk == nil {
				return nulls(m, arrow.PrimitiveTypes.Int32, n)
			}
			return repeatInt32(m, *st.Chunk, n)
		},
	}
	return assemble(schema, rec, consts)
}

// assemble builds a record of schema: a field named in consts is built by its function
// (a nil function means NULL), else taken from rec, else NULL. Every rec column must be
// used.
func assemble(schema *arrow.Schema, rec arrow.RecordBatch, consts map[string]func(memory.Allocator) arrow.Array) (arrow.RecordBatch, error) {
	mem := memory.DefaultAllocator
	n := int(rec.NumRows())
	used := make([]bool, rec.NumCols())
	cols := make([]arrow.Array, 0, schema.NumFields())
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	for _, f := range schema.Fields() {
		if build, ok := consts[f.Name]; ok {
			if build == nil {
				cols = append(cols, nulls(mem, f.Type, n))
			} else {
				cols = append(cols, build(mem))
			}
			continue
		}
		i := columnIndex(rec.Schema(), f.Name)
		if i < 0 || used[i] {
			cols = append(cols, nulls(mem, f.Type, n))
			continue
		}
		used[i] = true
		c := rec.Column(i)
		if !arrow.TypeEqual(c.DataType(), f.Type) {
			release()
			return nil, &RecordMismatchError{Column: f.Name, Want: f.Type, Got: c.DataType()}
		}
		c.Retain()
		cols = append(cols, c)
	}
	for i, u := range used {
		if !u {
			release()
			return nil, &RecordMismatchError{Column: rec.Schema().Field(i).Name, Got: rec.Column(i).DataType()}
		}
	}
	out := array.NewRecordBatch(schema, cols, int64(n))
	release()
	return out, nil
}

// columnIndex finds name in s: an exact match, else the first match ignoring case; -1
// when absent.
func columnIndex(s *arrow.Schema, name string) int {
	if idx := s.FieldIndices(name); len(idx) > 0 {
		return idx[0]
	}
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// leadingField is the leading metadata field named name.
func leadingField(name string) (arrow.Field, bool) {
	for _, f := range leadingFields {
		if f.Name == name {
			return f, true
		}
	}
	return arrow.Field{}, false
}
