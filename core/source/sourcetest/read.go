package sourcetest

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// ChangeRow is one decoded change row.
type ChangeRow struct {
	Start, Seqval lsn.LSN
	Op, CommandID int
	CommitTS      time.Time
	Values        map[string]any
}

// ReadChanges reads every change row of [from, to] with all captured columns.
func ReadChanges(ctx context.Context, t testing.TB, src source.Source, ci string, from, to lsn.LSN) []ChangeRow {
	t.Helper()
	cols, err := src.CapturedColumns(ctx, ci)
	if err != nil {
		t.Fatalf("CapturedColumns(%s): %v", ci, err)
	}
	rows, err := src.ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: from, To: to, Columns: cols, ReadOptions: source.ReadOptions{BatchRows: 7}})
	if err != nil {
		t.Fatalf("ReadChanges(%s, %s, %s): %v", ci, from, to, err)
	}
	var out []ChangeRow
	for _, m := range Drain(ctx, t, rows) {
		r := ChangeRow{Start: lsn.MustParse(m["_start_lsn"].(string)), Seqval: lsn.MustParse(m["_seqval"].(string)),
			Op: int(m["_operation"].(int64)), CommandID: int(m["_command_id"].(int64)), Values: map[string]any{}}
		if ts, ok := m["_commit_ts"].(time.Time); ok {
			r.CommitTS = ts
		}
		for k, v := range m {
			if k[0] != '_' {
				r.Values[k] = v
			}
		}
		out = append(out, r)
	}
	return out
}

// Drain reads a Rows to the end into one map per row (column name → Go value: int64 for
// integers, float64, bool, string, time.Time in UTC, []byte, decimal as text).
func Drain(ctx context.Context, t testing.TB, rows source.Rows) []map[string]any {
	t.Helper()
	defer rows.Close()
	var out []map[string]any
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("Rows.Next: %v", err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			m := make(map[string]any, rec.NumCols())
			for j, f := range rec.Schema().Fields() {
				m[f.Name] = Cell(rec.Column(j), i)
			}
			out = append(out, m)
		}
		rec.Release()
	}
}

// Cell is the Go value of one Arrow cell (nil for NULL).
func Cell(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch x := a.(type) {
	case *array.String:
		return x.Value(i)
	case *array.Binary:
		return append([]byte(nil), x.Value(i)...)
	case *array.Boolean:
		return x.Value(i)
	case *array.Int16:
		return int64(x.Value(i))
	case *array.Int32:
		return int64(x.Value(i))
	case *array.Int64:
		return x.Value(i)
	case *array.Float32:
		return float64(x.Value(i))
	case *array.Float64:
		return x.Value(i)
	case *array.Decimal128:
		return x.Value(i).ToString(x.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Date32:
		return x.Value(i).ToTime().UTC()
	case *array.Timestamp:
		return x.Value(i).ToTime(x.DataType().(*arrow.TimestampType).Unit).UTC()
	}
	return a.ValueStr(i)
}
