package bronze

import (
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// buildRecord makes a record of schema s from rows of Go values (nil is NULL).
func buildRecord(t *testing.T, s *arrow.Schema, rows [][]any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for _, row := range rows {
		for i, v := range row {
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.Int32Builder:
				fb.Append(int32(v.(int)))
			case *array.Int64Builder:
				fb.Append(int64(v.(int)))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(v.(time.Time).UnixMicro()))
			default:
				t.Fatalf("buildRecord: no case for %T", fb)
			}
		}
	}
	return b.NewRecordBatch()
}

// cell renders row i of column name as a Go value (nil for NULL).
func cell(rec arrow.RecordBatch, name string, i int) any {
	c := rec.Column(rec.Schema().FieldIndices(name)[0])
	if c.IsNull(i) {
		return nil
	}
	switch c := c.(type) {
	case *array.String:
		return c.Value(i)
	case *array.Int32:
		return int(c.Value(i))
	case *array.Int64:
		return int(c.Value(i))
	case *array.Timestamp:
		return time.UnixMicro(int64(c.Value(i))).UTC()
	}
	return c.ValueStr(i)
}

var smallCols = []source.Column{{Name: "id", DataType: "int"}, {Name: "name", DataType: "varchar"}}

func TestChangeRecord(t *testing.T) {
	bronze, _ := Schema(append(append([]source.Column{}, smallCols...), source.Column{Name: "added", DataType: "bigint"}))
	cs, _ := ChangeSchema(smallCols)
	ts := time.Date(2024, 5, 1, 12, 0, 0, 123456000, time.UTC)
	rec := buildRecord(t, cs, [][]any{
		{"0x0000002A000001F00003", "0x0000002A000001F00002", 3, 1, ts, 7, "old"},
		{"0x0000002A000001F00003", "0x0000002A000001F00002", 4, 1, ts, 7, nil},
	})
	defer rec.Release()
	out, err := ChangeRecord(bronze, rec, "dbo_orders", 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if !out.Schema().Equal(bronze) || out.NumRows() != 2 {
		t.Fatalf("schema %v rows %d", out.Schema(), out.NumRows())
	}
	want := map[string][]any{
		ColCaptureInstance: {"dbo_orders", "dbo_orders"},
		ColStartLSN:        {"0x0000002A000001F00003", "0x0000002A000001F00003"},
		ColOperation:       {3, 4},
		ColCommandID:       {1, 1},
		ColCommitTS:        {ts, ts},
		"id":               {7, 7},
		"name":             {"old", nil},
		"added":            {nil, nil},
		ColBatchID:         {1 << 40, 1 << 40},
		ColSnapshot:        {nil, nil},
		ColChunk:           {nil, nil},
	}
	for name, vals := range want {
		for i, v := range vals {
			if got := cell(out, name, i); got != v {
				t.Errorf("%s[%d] = %v, want %v", name, i, got, v)
			}
		}
	}
}

func TestSnapshotRecord(t *testing.T) {
	bronze, _ := Schema(smallCols)
	ts, _ := TableSchema(smallCols)
	rec := buildRecord(t, ts, [][]any{{1, "a"}, {2, nil}, {nil, "c"}})
	defer rec.Release()
	commit := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	chunk := int32(12)
	st := SnapshotStamp{CaptureInstance: "dbo_t", LSN: lsn.MustParse("0x00000010000000200003"), CommitTS: &commit, Snapshot: lsn.MustParse("0x00000010000000100001"), Chunk: &chunk}
	out, err := SnapshotRecord(bronze, rec, st)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	for i := range 3 {
		for name, v := range map[string]any{
			ColCaptureInstance: "dbo_t", ColStartLSN: "0x00000010000000200003", ColSeqval: nil,
			ColOperation: 0, ColCommandID: nil, ColCommitTS: commit, ColBatchID: nil,
			ColSnapshot: "0x00000010000000100001", ColChunk: 12,
		} {
			if got := cell(out, name, i); got != v {
				t.Errorf("%s[%d] = %v, want %v", name, i, got, v)
			}
		}
	}
	if cell(out, "id", 2) != nil || cell(out, "name", 0) != "a" || cell(out, "id", 1) != 2 {
		t.Error("captured columns not carried over")
	}

	st.CommitTS, st.Chunk = nil, nil
	out2, err := SnapshotRecord(bronze, rec, st)
	if err != nil {
		t.Fatal(err)
	}
	defer out2.Release()
	if cell(out2, ColCommitTS, 0) != nil || cell(out2, ColChunk, 1) != nil {
		t.Error("nil CommitTS/Chunk must be NULL")
	}
}

func TestAssemblersRefuseMismatch(t *testing.T) {
	bronze, _ := Schema(smallCols)
	// A column the bronze schema lacks.
	extra, _ := TableSchema(append(append([]source.Column{}, smallCols...), source.Column{Name: "new", DataType: "int"}))
	rec := buildRecord(t, extra, [][]any{{1, "a", 2}})
	defer rec.Release()
	_, err := SnapshotRecord(bronze, rec, SnapshotStamp{})
	var me *RecordMismatchError
	if !errors.As(err, &me) || me.Column != "new" || me.Want != nil {
		t.Errorf("extra column: got %v", err)
	}
	// A type change.
	changed, _ := TableSchema([]source.Column{{Name: "id", DataType: "bigint"}, {Name: "name", DataType: "varchar"}})
	rec2 := buildRecord(t, changed, [][]any{{1, "a"}})
	defer rec2.Release()
	_, err = SnapshotRecord(bronze, rec2, SnapshotStamp{})
	if !errors.As(err, &me) || me.Column != "id" || me.Got == nil || me.Want == nil {
		t.Errorf("type change: got %v", err)
	}
	// A change record without the change metadata columns.
	_, err = ChangeRecord(bronze, rec2, "ci", 1)
	if !errors.As(err, &me) || me.Column != ColStartLSN || me.Got != nil {
		t.Errorf("missing _start_lsn: got %v", err)
	}
	// A snapshot record carrying change metadata.
	cs, _ := ChangeSchema(smallCols)
	rec3 := buildRecord(t, cs, [][]any{{"0x00000000000000000001", nil, 2, 1, time.Unix(0, 0), 1, "a"}})
	defer rec3.Release()
	_, err = SnapshotRecord(bronze, rec3, SnapshotStamp{})
	if !errors.As(err, &me) || me.Want != nil {
		t.Errorf("snapshot of a change record: got %v", err)
	}
}

func TestAssembleEmptyRecord(t *testing.T) {
	bronze, _ := Schema(smallCols)
	ts, _ := TableSchema(smallCols)
	rec := buildRecord(t, ts, nil)
	defer rec.Release()
	out, err := SnapshotRecord(bronze, rec, SnapshotStamp{CaptureInstance: "x"})
	if err != nil || out.NumRows() != 0 || out.NumCols() != int64(bronze.NumFields()) {
		t.Fatalf("got %v, %v", out, err)
	}
	out.Release()
}
