package stream

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// synthSource is a cdcsim database whose change reads return n generated rows, all of
// the range's last commit, built batch by batch: nothing of the rows is stored, so the
// live heap during a read is the reader's own. For benchmarks of the stream's memory.
type synthSource struct {
	source.Source
	n int
}

func (s *synthSource) SplitChanges(ctx context.Context, ci string, from, to lsn.LSN, n int) ([]source.Tile, error) {
	return []source.Tile{{Last: to, Next: to.Next(), Rows: int64(s.n)}}, nil
}

func (s *synthSource) ReadChanges(ctx context.Context, r source.ChangeRead) (source.Rows, error) {
	sc, err := bronze.ChangeSchema(r.Columns)
	if err != nil {
		return nil, err
	}
	ts, _, err := s.Source.CommitTime(ctx, r.To)
	if err != nil {
		return nil, err
	}
	batch := r.BatchRows
	if batch == 0 {
		batch = source.DefaultBatchRows
	}
	return &synthRows{schema: sc, left: s.n, batch: batch, lsn: r.To.String(), ts: arrow.Timestamp(ts.UnixMicro())}, nil
}

type synthRows struct {
	schema      *arrow.Schema
	left, batch int
	done        int
	lsn         string
	ts          arrow.Timestamp
}

func (r *synthRows) Schema() *arrow.Schema { return r.schema }
func (r *synthRows) Close() error          { return nil }

func (r *synthRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.left == 0 {
		return nil, io.EOF
	}
	k := min(r.batch, r.left)
	b := array.NewRecordBuilder(memory.DefaultAllocator, r.schema)
	defer b.Release()
	for i := 0; i < k; i++ {
		row := r.done + i
		for j, f := range r.schema.Fields() {
			fb := b.Field(j)
			switch f.Name {
			case bronze.ColStartLSN:
				fb.(*array.StringBuilder).Append(r.lsn)
				continue
			case bronze.ColSeqval:
				fb.(*array.StringBuilder).Append(fmt.Sprintf("0x%020X", row))
				continue
			case bronze.ColOperation:
				fb.(*array.Int32Builder).Append(2)
				continue
			case bronze.ColCommitTS:
				fb.(*array.TimestampBuilder).Append(r.ts)
				continue
			}
			switch t := f.Type.(type) {
			case *arrow.Int32Type:
				fb.(*array.Int32Builder).Append(int32(row))
			case *arrow.Int16Type:
				fb.(*array.Int16Builder).Append(int16(row))
			case *arrow.Int64Type:
				fb.(*array.Int64Builder).Append(int64(row))
			case *arrow.StringType:
				fb.(*array.StringBuilder).Append(fmt.Sprintf("customer-%07d", row%100_000))
			case *arrow.Decimal128Type:
				fb.(*array.Decimal128Builder).Append(decimal128.FromI64(int64(row % 1_000_000)))
			case *arrow.TimestampType:
				fb.(*array.TimestampBuilder).Append(r.ts - arrow.Timestamp(row))
			default:
				_ = t
				fb.AppendNull()
			}
		}
	}
	r.left -= k
	r.done += k
	return b.NewRecordBatch(), nil
}
