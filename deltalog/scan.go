package deltalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// RecordIterator is a stream of record batches: Next returns the next batch, which the
// caller releases, or (nil, io.EOF) at the end; Close may be called at any point.
type RecordIterator = parquetio.RecordIterator

// ScanOptions select what Snapshot.Scan returns.
type ScanOptions struct {
	// Columns are the top-level columns to return, in this order, matched ignoring case;
	// nil returns every column of the table schema. An empty non-nil slice returns
	// batches with no columns that carry only row counts.
	Columns []string
	// Filter keeps only the matching rows and skips files by their statistics; nil keeps
	// every row.
	Filter Filter
	// Files, when not nil, are the files to read instead of the snapshot's live files, in
	// this order: add actions of this table (from Snapshot.Files, or from the commits of
	// a version range, Table.ReadCommits), read with the snapshot's schema. Each file's rows
	// come in file order.
	Files []Add
}

// ScanStats counts what a scan read, for tests and benchmarks.
type ScanStats struct {
	// Files is the number of live files; Skipped of them were skipped by statistics.
	Files, Skipped int
}

// Scan reads the rows of the snapshot's live files as Arrow record batches with the
// table's schema (ToArrow) projected to opts.Columns. Rows of a file written before a
// column was added read that column as NULL; partition columns come from the add's
// partitionValues (string, integer, boolean, float, double and date partitions).
// Files are read one at a time in path order, each with parquetio.ReadFileSized and the
// add's size: one GET for a file of at most parquetio.SmallFileBytes, else ranged gets of
// only the columns needed. A file column whose Arrow type differs from the table's (an
// older writer's encoding) is cast, and a failed cast is an error.
//
// Rows a file's deletion vector marks deleted are never returned (docs/delta-reading.md
// § Deletion vectors): the DV is read (inline, or one ranged GET of its file) when the file is
// opened, and one that cannot be read or disagrees with its descriptor is a
// *DeletionVectorError from Next.
//
// Errors: ErrNoTable for a snapshot with no version; Snapshot.CanReadData's refusal
// (column mapping); *SchemaError for an unknown column; *FilterError for
// a filter that does not fit the schema. Errors while reading come from Next.
func (s *Snapshot) Scan(ctx context.Context, opts ScanOptions) (RecordIterator, error) {
	it, _, err := s.scan(ctx, opts)
	return it, err
}

// ScanWithStats is Scan that also reports how many files statistics let it skip.
func (s *Snapshot) ScanWithStats(ctx context.Context, opts ScanOptions) (RecordIterator, ScanStats, error) {
	return s.scan(ctx, opts)
}

func (s *Snapshot) scan(ctx context.Context, opts ScanOptions) (RecordIterator, ScanStats, error) {
	if s.version < 0 {
		return nil, ScanStats{}, ErrNoTable
	}
	if err := s.CanReadData(); err != nil {
		return nil, ScanStats{}, err
	}
	st, err := s.Schema()
	if err != nil {
		return nil, ScanStats{}, err
	}
	full, err := ToArrow(st)
	if err != nil {
		return nil, ScanStats{}, err
	}
	out := full
	if opts.Columns != nil {
		fields := make([]arrow.Field, 0, len(opts.Columns))
		for _, c := range opts.Columns {
			i := fieldIndexFold(full, c)
			if i < 0 {
				return nil, ScanStats{}, &SchemaError{Path: c, Reason: "no such column in the table"}
			}
			fields = append(fields, full.Field(i))
		}
		out = arrow.NewSchema(fields, nil)
	}
	// read holds the output columns plus those the filter needs.
	read := out
	if opts.Filter != nil {
		if err := opts.Filter.check(st); err != nil {
			return nil, ScanStats{}, err
		}
		fields := out.Fields()
		for _, c := range opts.Filter.columns() {
			if fieldIndexFold(arrow.NewSchema(fields, nil), c) < 0 {
				fields = append(fields, full.Field(fieldIndexFold(full, c)))
			}
		}
		read = arrow.NewSchema(fields, nil)
	}
	parts := map[string]bool{}
	for _, p := range s.metadata.PartitionColumns {
		parts[strings.ToLower(p)] = true
	}
	var fileCols []string
	for _, f := range read.Fields() {
		if !parts[strings.ToLower(f.Name)] {
			fileCols = append(fileCols, f.Name)
		}
	}
	if fileCols == nil {
		fileCols = []string{} // read no column, only row counts
	}

	var all []Add
	if opts.Files != nil {
		all = opts.Files
	} else {
		all = s.Files()
	}
	stats := ScanStats{Files: len(all)}
	files := make([]*Add, 0, len(all))
	for i := range all {
		a := &all[i]
		if opts.Filter != nil {
			v := &fileView{add: a, partCols: parts}
			v.stats, v.hasStats, _ = ParseStats(a.Stats)
			if opts.Filter.skip(v) {
				stats.Skipped++
				continue
			}
		}
		if strings.Contains(a.Path, "://") {
			return nil, ScanStats{}, fmt.Errorf("scan %s: absolute file paths are not supported", a.Path)
		}
		files = append(files, a)
	}
	return &scanIter{snap: s, out: out, read: read, fileCols: fileCols, parts: parts,
		filter: opts.Filter, files: files, mem: memory.DefaultAllocator}, stats, nil
}

type scanIter struct {
	snap     *Snapshot
	out      *arrow.Schema // what Next returns
	read     *arrow.Schema // out plus the filter's columns
	fileCols []string      // read minus partition columns: what the files are asked for
	parts    map[string]bool
	filter   Filter
	files    []*Add
	mem      memory.Allocator

	cur    RecordIterator
	curAdd *Add
	// deleted holds the current file's rows its deletion vector marks deleted (nil when
	// it has none); pos is the file position of the next row read.
	deleted *RowBitmap
	pos     uint64
	closed  bool
}

func (it *scanIter) Schema() *arrow.Schema { return it.out }

func (it *scanIter) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if it.closed {
			return nil, io.EOF
		}
		if it.cur == nil {
			if len(it.files) == 0 {
				return nil, io.EOF
			}
			it.curAdd, it.files = it.files[0], it.files[1:]
			it.deleted, it.pos = nil, 0
			if it.curAdd.DeletionVector != nil {
				d, err := it.snap.DeletedRows(ctx, it.curAdd)
				if err != nil {
					return nil, fmt.Errorf("scan: %w", err)
				}
				it.deleted = d
			}
			r, err := parquetio.ReadFileSized(ctx, it.snap.table.store, it.curAdd.DecodedPath(), it.curAdd.Size, it.fileCols)
			if err != nil {
				return nil, fmt.Errorf("scan: %w", err)
			}
			it.cur = r
		}
		rec, err := it.cur.Next(ctx)
		if errors.Is(err, io.EOF) {
			cerr := it.cur.Close()
			it.cur = nil
			if cerr != nil {
				return nil, fmt.Errorf("scan %s: %w", it.curAdd.Path, cerr)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		out, err := it.shape(ctx, rec)
		it.pos += uint64(rec.NumRows())
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", it.curAdd.Path, err)
		}
		if out.NumRows() == 0 {
			out.Release()
			continue
		}
		return out, nil
	}
}

// shape turns a file batch into an output batch: columns conformed to the read schema
// (cast, NULL-filled or taken from partition values), rows filtered, columns projected.
func (it *scanIter) shape(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	n := rec.NumRows()
	cols := make([]arrow.Array, 0, len(it.read.Fields()))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, f := range it.read.Fields() {
		c, err := it.column(ctx, rec, f, n)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	full := array.NewRecordBatch(it.read, cols, n)
	defer full.Release()
	if it.filter != nil || it.deleted != nil {
		keep := make([]bool, n)
		if it.filter != nil {
			var err error
			if keep, err = it.filter.eval(full); err != nil {
				return nil, err
			}
		} else {
			for i := range keep {
				keep[i] = true
			}
		}
		// Rows a deletion vector marks deleted are never returned (docs/delta-reading.md
		// § Deletion vectors).
		if it.deleted != nil {
			for i := range keep {
				if keep[i] && it.deleted.Contains(it.pos+uint64(i)) {
					keep[i] = false
				}
			}
		}
		all := true
		for _, k := range keep {
			all = all && k
		}
		if !all {
			b := array.NewBooleanBuilder(it.mem)
			b.AppendValues(keep, nil)
			mask := b.NewBooleanArray()
			b.Release()
			filtered, err := compute.FilterRecordBatch(ctx, full, mask, compute.DefaultFilterOptions())
			mask.Release()
			if err != nil {
				return nil, fmt.Errorf("filter rows: %w", err)
			}
			defer filtered.Release()
			return project(filtered, it.out), nil
		}
	}
	return project(full, it.out), nil
}

// project returns rec's first len(out.Fields()) columns (read puts out's first) as a
// batch with schema out.
func project(rec arrow.RecordBatch, out *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, len(out.Fields()))
	for i := range cols {
		cols[i] = rec.Column(i)
	}
	return array.NewRecordBatch(out, cols, rec.NumRows())
}

// column is field f of the read schema for a file batch of n rows: the file's column
// (cast when its type differs), the partition value, or NULLs. The caller releases it.
func (it *scanIter) column(ctx context.Context, rec arrow.RecordBatch, f arrow.Field, n int64) (arrow.Array, error) {
	if it.parts[strings.ToLower(f.Name)] {
		v, _ := lookupFold(it.curAdd.PartitionValues, f.Name)
		return partitionArray(it.mem, f, v, int(n))
	}
	c := columnFold(rec, f.Name)
	if c == nil {
		return array.MakeArrayOfNull(it.mem, f.Type, int(n)), nil
	}
	if arrow.TypeEqual(c.DataType(), f.Type) {
		c.Retain()
		return c, nil
	}
	cast, err := compute.CastArray(ctx, c, compute.SafeCastOptions(f.Type))
	if err != nil {
		return nil, fmt.Errorf("column %s: file type %s, table type %s: %w", f.Name, c.DataType(), f.Type, err)
	}
	return cast, nil
}

// partitionArray repeats a partition value (docs/reference/delta-protocol.md §3;
// "" is NULL) n times as an array of f's type.
func partitionArray(mem memory.Allocator, f arrow.Field, v string, n int) (arrow.Array, error) {
	if v == "" {
		return array.MakeArrayOfNull(mem, f.Type, n), nil
	}
	b := array.NewBuilder(mem, f.Type)
	defer b.Release()
	bad := func(err error) error {
		return &SchemaError{Path: f.Name, Reason: fmt.Sprintf("partition value %q: %v", v, err)}
	}
	for range n {
		switch bb := b.(type) {
		case *array.StringBuilder:
			bb.Append(v)
		case *array.Int64Builder, *array.Int32Builder, *array.Int16Builder, *array.Int8Builder:
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, bad(err)
			}
			switch bb := bb.(type) {
			case *array.Int64Builder:
				bb.Append(x)
			case *array.Int32Builder:
				bb.Append(int32(x))
			case *array.Int16Builder:
				bb.Append(int16(x))
			case *array.Int8Builder:
				bb.Append(int8(x))
			}
		case *array.BooleanBuilder:
			x, err := strconv.ParseBool(v)
			if err != nil {
				return nil, bad(err)
			}
			bb.Append(x)
		case *array.Float64Builder:
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, bad(err)
			}
			bb.Append(x)
		case *array.Float32Builder:
			x, err := strconv.ParseFloat(v, 32)
			if err != nil {
				return nil, bad(err)
			}
			bb.Append(float32(x))
		case *array.Date32Builder:
			d, err := time.Parse(time.DateOnly, v)
			if err != nil {
				return nil, bad(err)
			}
			bb.Append(arrow.Date32FromTime(d))
		default:
			return nil, &SchemaError{Path: f.Name, Reason: "partition column type " + f.Type.String() + " is not supported by Scan"}
		}
	}
	return b.NewArray(), nil
}

func (it *scanIter) Close() error {
	it.closed = true
	if it.cur != nil {
		err := it.cur.Close()
		it.cur = nil
		return err
	}
	return nil
}

func fieldIndexFold(s *arrow.Schema, name string) int {
	for i, f := range s.Fields() {
		if f.Name == name {
			return i
		}
	}
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}
