package parquetio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Reading INT96 timestamps. pqarrow maps INT96 to timestamp[ns] and fails on values past
// 2262 (Spark writes 9999-12-31 fine), so top-level INT96 columns are decoded here, next to
// a pqarrow reader of the other columns, row group by row group.

// julianUnixEpoch is the Julian day number of 1970-01-01.
const julianUnixEpoch = 2_440_588

// int96Type is what an INT96 column reads as: microseconds, UTC (Delta timestamp).
var int96Type = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// int96Micros converts an INT96 (nanoseconds of the day, then the Julian day, little
// endian) to microseconds since the Unix epoch.
func int96Micros(v parquet.Int96) int64 {
	nanos := int64(uint64(v[0]) | uint64(v[1])<<8 | uint64(v[2])<<16 | uint64(v[3])<<24 |
		uint64(v[4])<<32 | uint64(v[5])<<40 | uint64(v[6])<<48 | uint64(v[7])<<56)
	day := int64(int32(uint32(v[8]) | uint32(v[9])<<8 | uint32(v[10])<<16 | uint32(v[11])<<24))
	return (day-julianUnixEpoch)*86_400_000_000 + nanos/1000
}

// isInt96Field reports whether manifest field i is a top-level INT96 column.
func isInt96Field(pf *file.Reader, fr *pqarrow.FileReader, i int) bool {
	f := &fr.Manifest.Fields[i]
	return len(f.Children) == 0 && f.ColIndex >= 0 &&
		pf.MetaData().Schema.Column(f.ColIndex).PhysicalType() == parquet.Types.Int96
}

func hasInt96(pf *file.Reader, fr *pqarrow.FileReader, fields []int) bool {
	for _, i := range fields {
		if isInt96Field(pf, fr, i) {
			return true
		}
	}
	return false
}

// int96Iterator reads fields: the INT96 ones with column readers, the rest with pqarrow.
type int96Iterator struct {
	pf     *file.Reader
	fr     *pqarrow.FileReader
	src    *rangeReader
	schema *arrow.Schema
	// per output column: the leaf of an INT96 column, or -1 for a pqarrow column.
	int96Leaf []int
	// other are the leaves read with pqarrow; otherPos maps output column → pqarrow column.
	other    []int
	otherPos []int

	rg       int // next row group
	left     int64
	rr       pqarrow.RecordReader
	int96Rdr map[int]*file.Int96ColumnChunkReader
	values   []parquet.Int96
	defs     []int16
}

func newInt96Iterator(ctx context.Context, pf *file.Reader, fr *pqarrow.FileReader, fields []int, src *rangeReader) (RecordIterator, error) {
	it := &int96Iterator{pf: pf, fr: fr, src: src}
	var outFields []arrow.Field
	nOther := 0
	for _, i := range fields {
		f := &fr.Manifest.Fields[i]
		if isInt96Field(pf, fr, i) {
			it.int96Leaf = append(it.int96Leaf, f.ColIndex)
			it.otherPos = append(it.otherPos, -1)
			outFields = append(outFields, arrow.Field{Name: f.Field.Name, Type: int96Type, Nullable: f.Field.Nullable})
			continue
		}
		it.int96Leaf = append(it.int96Leaf, -1)
		// pqarrow returns the fields in the order their leaves are asked for.
		it.otherPos = append(it.otherPos, nOther)
		nOther++
		it.other = appendLeaves(it.other, f)
		outFields = append(outFields, *f.Field)
	}
	it.schema = arrow.NewSchema(outFields, nil)
	return it, nil
}

func (it *int96Iterator) Schema() *arrow.Schema { return it.schema }

// openRowGroup starts the readers of the next row group.
func (it *int96Iterator) openRowGroup(ctx context.Context) error {
	if it.rr != nil {
		it.rr.Release()
		it.rr = nil
	}
	rg := it.pf.RowGroup(it.rg)
	it.left = rg.NumRows()
	it.int96Rdr = map[int]*file.Int96ColumnChunkReader{}
	for _, leaf := range it.int96Leaf {
		if leaf < 0 {
			continue
		}
		cr, err := rg.Column(leaf)
		if err != nil {
			return err
		}
		r, ok := cr.(*file.Int96ColumnChunkReader)
		if !ok {
			return fmt.Errorf("column %d is not INT96", leaf)
		}
		it.int96Rdr[leaf] = r
	}
	if len(it.other) > 0 {
		rr, err := it.fr.GetRecordReader(ctx, it.other, []int{it.rg})
		if err != nil {
			return err
		}
		it.rr = rr
	}
	it.rg++
	return nil
}

func (it *int96Iterator) Next(ctx context.Context) (arrow.RecordBatch, error) {
	it.src.ctx = ctx
	for it.left == 0 {
		if it.rg >= it.pf.NumRowGroups() {
			return nil, io.EOF
		}
		if err := it.openRowGroup(ctx); err != nil {
			return nil, fmt.Errorf("read parquet %s: %w", it.src.key, err)
		}
	}
	n := min(it.left, ReadBatchRows)
	var rec arrow.RecordBatch
	if it.rr != nil {
		var err error
		rec, err = it.rr.Read()
		if rec == nil || rec.NumRows() == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				err = fmt.Errorf("row group ended %d rows early", it.left)
			}
			return nil, fmt.Errorf("read parquet %s: %w", it.src.key, err)
		}
		n = rec.NumRows()
	}
	cols := make([]arrow.Array, len(it.int96Leaf))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, leaf := range it.int96Leaf {
		if leaf < 0 {
			cols[i] = rec.Column(it.otherPos[i])
			cols[i].Retain()
			continue
		}
		a, err := it.readInt96(it.int96Rdr[leaf], n)
		if err != nil {
			return nil, fmt.Errorf("read parquet %s: %w", it.src.key, err)
		}
		cols[i] = a
	}
	it.left -= n
	return array.NewRecordBatch(it.schema, cols, n), nil
}

// readInt96 reads n rows of a flat INT96 column as timestamp[us, UTC].
func (it *int96Iterator) readInt96(r *file.Int96ColumnChunkReader, n int64) (arrow.Array, error) {
	if int64(cap(it.values)) < n {
		it.values = make([]parquet.Int96, n)
		it.defs = make([]int16, n)
	}
	maxDef := r.Descriptor().MaxDefinitionLevel()
	b := array.NewTimestampBuilder(memory.DefaultAllocator, int96Type)
	defer b.Release()
	b.Reserve(int(n))
	for got := int64(0); got < n; {
		levels, read, err := r.ReadBatch(n-got, it.values[:n-got], it.defs[:n-got], nil)
		if err != nil {
			return nil, err
		}
		if levels == 0 {
			return nil, fmt.Errorf("INT96 column ended %d rows early", n-got)
		}
		v := 0
		for j := range levels {
			if maxDef > 0 && it.defs[j] < maxDef {
				b.AppendNull()
				continue
			}
			b.Append(arrow.Timestamp(int96Micros(it.values[v])))
			v++
		}
		if v != read {
			return nil, fmt.Errorf("INT96 column: %d values for %d levels", read, levels)
		}
		got += levels
	}
	return b.NewArray(), nil
}

func (it *int96Iterator) Close() error {
	if it.rr != nil {
		it.rr.Release()
	}
	return it.pf.Close()
}
