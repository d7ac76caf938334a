package parquetio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// ReadBatchRows is the number of rows per record batch ReadFile returns.
const ReadBatchRows = 16 << 10

// RecordIterator is a stream of record batches. Next returns the next batch, which the
// caller releases, or (nil, io.EOF) at the end. Close releases the file and may be called
// at any point.
type RecordIterator interface {
	Schema() *arrow.Schema
	Next(ctx context.Context) (arrow.RecordBatch, error)
	Close() error
}

// Drain reads it to the end, calling fn with each record batch (released after fn returns,
// so fn must not keep it), and closes it. The first error, fn's or the iterator's, ends it
// and is returned as is. Any Schema/Next/Close iterator fits, source.Rows included.
func Drain(ctx context.Context, it RecordIterator, fn func(rec arrow.RecordBatch) error) error {
	defer it.Close()
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
}

// SmallFileBytes is the size up to which ReadFile fetches a whole file with one GET
// instead of a ranged GET for the footer and one per column chunk: below a few MB, a
// request's latency (tens of ms on S3) costs more than the bytes (a one-row facts file of
// 30 columns took 30 GETs).
const SmallFileBytes = 4 << 20

// ReadFile reads the Parquet file at key as record batches of at most ReadBatchRows rows.
// Legacy INT96 timestamps (Spark's default before 3.x, Databricks, Impala) are read as
// timestamp[us, UTC], the Delta timestamp, so years up to 9999 survive (Arrow's
// nanosecond range ends in 2262).
// columns selects top-level columns by name (exactly, else ignoring case), in that order;
// nil reads every column. A requested column the file lacks is left out of the batches (an
// older file of a table whose schema grew): the caller fills it with NULL. A missing key is
// storage.ErrNotFound (wrapped). The file's size comes from a HEAD; a file of at most
// SmallFileBytes is then read with one GET, a larger one with ranged gets (the footer,
// then each column chunk read).
func ReadFile(ctx context.Context, store storage.Store, key string, columns []string) (RecordIterator, error) {
	return ReadFileSized(ctx, store, key, -1, columns)
}

// ReadFileSized is ReadFile for a file whose size the caller knows (a Delta add action's
// size), which saves the HEAD: a file of at most SmallFileBytes costs exactly one GET.
// size < 0 means unknown.
func ReadFileSized(ctx context.Context, store storage.Store, key string, size int64, columns []string) (RecordIterator, error) {
	src, pf, err := openSized(ctx, store, key, size)
	if err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: ReadBatchRows}, memory.DefaultAllocator)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("read parquet %s: %w", key, err)
	}
	var fields []int // top-level fields to read, in order
	if columns == nil {
		for i := range fr.Manifest.Fields {
			fields = append(fields, i)
		}
	} else {
		for _, name := range columns {
			if i := fieldIndex(fr.Manifest.Fields, name); i >= 0 {
				fields = append(fields, i)
			}
		}
	}
	if hasInt96(pf, fr, fields) {
		return newInt96Iterator(ctx, pf, fr, fields, src)
	}
	var leaves []int
	for _, i := range fields {
		leaves = appendLeaves(leaves, &fr.Manifest.Fields[i])
	}
	if len(leaves) == 0 {
		// Nothing to read but the row count (GetRecordReader would read every column).
		rows := pf.NumRows()
		pf.Close()
		return &countIterator{left: rows}, nil
	}
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("read parquet %s: %w", key, err)
	}
	return &fileIterator{pf: pf, rr: rr, src: src}, nil
}

// appendLeaves adds the leaf column indices of a field.
func appendLeaves(out []int, f *pqarrow.SchemaField) []int {
	if f.ColIndex >= 0 && len(f.Children) == 0 {
		return append(out, f.ColIndex)
	}
	for i := range f.Children {
		out = appendLeaves(out, &f.Children[i])
	}
	return out
}

func fieldIndex(fields []pqarrow.SchemaField, name string) int {
	for i, f := range fields {
		if f.Field.Name == name {
			return i
		}
	}
	for i, f := range fields {
		if strings.EqualFold(f.Field.Name, name) {
			return i
		}
	}
	return -1
}

type fileIterator struct {
	pf  *file.Reader
	rr  pqarrow.RecordReader
	src *rangeReader
}

func (it *fileIterator) Schema() *arrow.Schema { return it.rr.Schema() }

func (it *fileIterator) Next(ctx context.Context) (arrow.RecordBatch, error) {
	it.src.ctx = ctx
	rec, err := it.rr.Read()
	if rec != nil && rec.NumRows() > 0 {
		rec.Retain() // Read's batch is only valid until the next call
		return rec, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	return nil, fmt.Errorf("read parquet %s: %w", it.src.key, err)
}

func (it *fileIterator) Close() error {
	it.rr.Release()
	return it.pf.Close()
}

// countIterator yields batches without columns that carry only a row count.
type countIterator struct {
	left int64
}

var emptySchema = arrow.NewSchema(nil, nil)

func (it *countIterator) Schema() *arrow.Schema { return emptySchema }

func (it *countIterator) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if it.left == 0 {
		return nil, io.EOF
	}
	n := min(it.left, ReadBatchRows)
	it.left -= n
	return array.NewRecordBatch(emptySchema, nil, n), nil
}

func (it *countIterator) Close() error { return nil }

// rangeReader is an io.ReaderAt and io.Seeker over an object, by ranged gets, or over
// its bytes when buf holds the whole object.
// openSized opens the Parquet file at key of size bytes (< 0: HEAD it): one GET for a
// file of at most SmallFileBytes, else ranged GETs as the reader asks.
func openSized(ctx context.Context, store storage.Store, key string, size int64) (*rangeReader, *file.Reader, error) {
	if size < 0 {
		info, err := store.Head(ctx, key)
		if err != nil {
			return nil, nil, fmt.Errorf("read parquet %s: %w", key, err)
		}
		size = info.Size
	}
	src := &rangeReader{ctx: ctx, store: store, key: key, size: size}
	if size <= SmallFileBytes {
		data, err := store.GetRange(ctx, key, 0, -1)
		if err != nil {
			return nil, nil, fmt.Errorf("read parquet %s: %w", key, err)
		}
		src.buf, src.size = data, int64(len(data))
	}
	pf, err := file.NewParquetReader(src)
	if err != nil {
		return nil, nil, fmt.Errorf("read parquet %s: %w", key, err)
	}
	return src, pf, nil
}

// Source is a Parquet file opened for reading column chunk by column chunk (OpenSource):
// its footer, its pages through Reader, a chunk's bytes as they lie (ChunkBytes).
type Source struct {
	*file.Reader
	src *rangeReader
}

// OpenSource opens the Parquet file at key, of size bytes (< 0: unknown, HEAD it); a
// file of at most SmallFileBytes is read with one GET. Close it.
func OpenSource(ctx context.Context, store storage.Store, key string, size int64) (*Source, error) {
	src, pf, err := openSized(ctx, store, key, size)
	if err != nil {
		return nil, err
	}
	return &Source{Reader: pf, src: src}, nil
}

// ChunkBytes reads column chunk m of the file as it lies (its pages with their headers),
// with the offset it starts at: a Chunk for SpliceWriter.
func (s *Source) ChunkBytes(m *metadata.ColumnChunkMetaData) ([]byte, int64, error) {
	start := ChunkStart(m)
	n := m.TotalCompressedSize()
	if start < 0 || n < 0 || start+n > s.src.size {
		return nil, 0, fmt.Errorf("read parquet %s: column chunk at %d of %d bytes is outside the file's %d", s.src.key, start, n, s.src.size)
	}
	if s.src.buf != nil {
		return s.src.buf[start : start+n], start, nil
	}
	b, err := s.src.store.GetRange(s.src.ctx, s.src.key, start, n)
	if err != nil {
		return nil, 0, fmt.Errorf("read parquet %s: %w", s.src.key, err)
	}
	return b, start, nil
}

// ChunkPages reads the pages of column col of row group g from data, the chunk's bytes as
// ChunkBytes returned them (starting at start): no second read of the file.
func (s *Source) ChunkPages(g, col int, data []byte, start int64) (file.PageReader, error) {
	r, err := file.NewParquetReader(&overlayReader{rangeReader: s.src, data: data, start: start}, file.WithMetadata(s.MetaData()))
	if err != nil {
		return nil, fmt.Errorf("read parquet %s: %w", s.src.key, err)
	}
	return r.RowGroup(g).GetColumnPageReader(col)
}

// overlayReader serves reads inside [start, start+len(data)) from data, the rest from the
// file.
type overlayReader struct {
	*rangeReader
	data  []byte
	start int64
}

func (o *overlayReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.start && off+int64(len(p)) <= o.start+int64(len(o.data)) {
		return copy(p, o.data[off-o.start:]), nil
	}
	return o.rangeReader.ReadAt(p, off)
}

type rangeReader struct {
	ctx   context.Context
	store storage.Store
	key   string
	size  int64
	pos   int64
	buf   []byte
}

func (r *rangeReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	n := int64(len(p))
	if off+n > r.size {
		n = r.size - off
	}
	var b []byte
	if r.buf != nil {
		b = r.buf[off : off+n]
	} else {
		var err error
		if b, err = r.store.GetRange(r.ctx, r.key, off, n); err != nil {
			return 0, err
		}
	}
	copied := copy(p, b)
	if copied < len(p) {
		return copied, io.EOF
	}
	return copied, nil
}

func (r *rangeReader) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.pos)
	r.pos += int64(n)
	return n, err
}

func (r *rangeReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek: negative position %d", offset)
	}
	r.pos = offset
	return offset, nil
}
