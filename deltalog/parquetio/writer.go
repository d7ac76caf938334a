package parquetio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// File is one data file written and uploaded: what a Delta add action needs.
type File struct {
	// Path is the key relative to the store root, e.g.
	// "part-00000-1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed-c000.snappy.parquet".
	Path string
	// Size in bytes.
	Size int64
	// ModTime is when the upload finished (add.modificationTime).
	ModTime time.Time
	// NumRecords is the number of rows.
	NumRecords int64
	// Stats is the Delta per-file statistics JSON (stats.go).
	Stats string
}

// ErrClosed is returned by Write and Close after Close or Abort.
var ErrClosed = errors.New("parquetio: writer closed")

// SchemaMismatchError: a record given to Write does not have the writer's schema.
type SchemaMismatchError struct {
	Want, Got *arrow.Schema
}

func (e *SchemaMismatchError) Error() string {
	return fmt.Sprintf("parquetio: record schema %s differs from the writer's %s", e.Got, e.Want)
}

// Writer writes record batches of one schema into Parquet files, rolling to a new file at
// TargetFileSize. Files are uploaded as they are finished; Close uploads the last one and
// returns them all. A Writer is not safe for concurrent use.
//
// Memory: the rows of the open row group, kept as the caller's Arrow batches (retained,
// not copied) until RowGroupBytes of Arrow data are held; then they are encoded as one row
// group, one column at a time, and released. The encoded file is held in memory up to
// 1 MiB, then in a temporary file behind a 1 MiB buffer (spill.go). The encoder's buffers
// are one column chunk's. The statistics are a few values per column.
//
// Size: a row group is also cut early, and the file rolled after it, when the file's
// bytes plus the held rows' estimated encoded size (at the ratio of the row groups
// written so far) reach TargetFileSize; checked every few thousand rows.
type Writer struct {
	store  storage.Store
	schema *arrow.Schema
	opts   WriterOptions
	optErr error

	cur  *openFile
	part int
	// arrowBytes and encodedBytes of the row groups written, for encodedRatio.
	arrowBytes, encodedBytes int64
	files                    []File
	closed                   bool
}

// openFile is the file being written.
type openFile struct {
	name string
	// file holds the encoded bytes (spill.go), cw counts them.
	file  *spillFile
	cw    *countingWriter
	enc   rowGroupEncoder
	stats *fileStats
	// held are the rows of the open row group, heldBytes their Arrow size.
	held      []arrow.RecordBatch
	heldBytes int64
	// encs are the columns' encodings in this file (dictionary.go), chosen from its first
	// rows; encOwnDict turns to encDict for the rest of the file when a row group's
	// dictionary did not pay.
	encs []colEncoding
}

// NewWriter returns a writer of schema's records into store. It does no I/O; an invalid
// option is reported by the first Write as an *OptionError.
func NewWriter(store storage.Store, schema *arrow.Schema, opts WriterOptions) *Writer {
	o, err := opts.withDefaults()
	return &Writer{store: store, schema: schema, opts: o, optErr: err}
}

// Write appends the record's rows. The caller keeps its reference to rec and may release
// it; the writer retains what it holds. An error leaves the writer unusable: call Abort.
func (w *Writer) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if w.closed {
		return ErrClosed
	}
	if w.optErr != nil {
		return w.optErr
	}
	if !rec.Schema().Equal(w.schema) {
		return &SchemaMismatchError{Want: w.schema, Got: rec.Schema()}
	}
	n := rec.NumRows()
	for off := int64(0); off < n; off += sliceRows {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(off+sliceRows, n)
		piece := rec
		if off != 0 || end != n {
			piece = rec.NewSlice(off, end)
		}
		err := w.writePiece(ctx, piece)
		if piece != rec {
			piece.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writePiece adds a few thousand rows to the open row group, then writes the row group
// and rolls the file when a bound is reached.
func (w *Writer) writePiece(ctx context.Context, rec arrow.RecordBatch) error {
	if w.cur == nil {
		if err := w.openFile(rec); err != nil {
			return err
		}
	}
	f := w.cur
	rec.Retain()
	f.held = append(f.held, rec)
	f.heldBytes += RecordBytes(rec)
	f.stats.add(rec, f.ownDictionary)
	full := f.cw.n+int64(float64(f.heldBytes)*w.encodedRatio()) >= w.opts.TargetFileSize
	if f.heldBytes < w.opts.RowGroupBytes && !full {
		return nil
	}
	if err := w.flushRowGroup(); err != nil {
		return err
	}
	if full || f.cw.n >= w.opts.TargetFileSize {
		return w.finishFile(ctx)
	}
	return nil
}

// encodedRatio is the encoded bytes per Arrow byte of the row groups written so far; 1
// (Parquet is rarely larger than Arrow) before the first.
func (w *Writer) encodedRatio() float64 {
	if w.arrowBytes == 0 {
		return 1
	}
	return float64(w.encodedBytes) / float64(w.arrowBytes)
}

// flushRowGroup encodes the held rows as one row group, column after column, into the
// temporary file, and releases them.
func (w *Writer) flushRowGroup() error {
	f := w.cur
	if len(f.held) == 0 {
		return nil
	}
	before := f.cw.n
	err := w.writeRowGroup(f)
	for _, r := range f.held {
		r.Release()
	}
	w.arrowBytes += f.heldBytes
	w.encodedBytes += f.cw.n - before
	f.held, f.heldBytes = f.held[:0], 0
	if err != nil {
		return fmt.Errorf("encode parquet: %w", err)
	}
	return nil
}

// writeRowGroup writes f's held rows as one row group through f.enc (flat.go): each
// column's pieces in order, a string column chosen for encOwnDict as one dictionary
// array.
func (w *Writer) writeRowGroup(f *openFile) error {
	if err := f.enc.newRowGroup(); err != nil {
		return err
	}
	var rows int64
	for _, r := range f.held {
		rows += r.NumRows()
	}
	pieces := make([]arrow.Array, len(f.held))
	for i := range w.schema.NumFields() {
		field := w.schema.Field(i) // not Fields(), which copies them all
		for j, r := range f.held {
			pieces[j] = r.Column(i)
		}
		if f.encs[i] == encOwnDict {
			// The pieces' statistics were deferred (writePiece): they come from the
			// dictionary's distinct values, or from the pieces when it did not pay.
			if d, ok := ownDictionary(field.Type, pieces); ok {
				f.stats.addDictionary(i, d.(*array.Dictionary).Dictionary(), int64(d.NullN()))
				err := f.enc.writeColumn(d.DataType(), []arrow.Array{d}, rows)
				d.Release()
				if err != nil {
					return err
				}
				continue
			}
			f.encs[i] = encDict
			if cs := f.stats.column(i); cs != nil {
				for _, p := range pieces {
					f.stats.addColumn(cs, p)
				}
			}
		}
		if err := f.enc.writeColumn(field.Type, pieces, rows); err != nil {
			return err
		}
	}
	return nil
}

// writeColumn writes one column of the open row group from its pieces.
func writeColumn(fw *pqarrow.FileWriter, dt arrow.DataType, pieces []arrow.Array, rows int64) error {
	ch := arrow.NewChunked(dt, pieces)
	defer ch.Release()
	return fw.WriteColumnChunked(ch, 0, rows)
}

// tempBufs are the 1 MiB write buffers of the temporary files, kept for the next file: a
// stream batch writes a file or two and every tenth commit a checkpoint, and allocating
// and zeroing 1 MiB for each was about a fifth of a small batch's CPU (deltalog
// BenchmarkThirtyDays' profile).
var tempBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 1<<20) }}

// putTempBuf drops what buf holds and keeps it for the next file.
func putTempBuf(buf *bufio.Writer) {
	buf.Reset(nil)
	tempBufs.Put(buf)
}

// ownDictionary says whether column i is dictionary-encoded by the writer in this file,
// its statistics then taken at the row group's end (writeRowGroup).
func (f *openFile) ownDictionary(i int) bool { return f.encs[i] == encOwnDict }

// openFile opens a file whose first rows are first (they choose its encodings).
func (w *Writer) openFile(first arrow.RecordBatch) error {
	encs := chooseEncodings(first)
	settings, err := fileSettings(w.schema, w.opts.Codec, encs)
	if err != nil {
		return err
	}
	sf := newSpillFile(w.opts.TempDir)
	cw := &countingWriter{w: sf}
	enc, err := newRowGroupEncoder(cw, w.schema, settings)
	if err != nil {
		sf.close()
		return fmt.Errorf("open parquet writer: %w", err)
	}
	w.cur = &openFile{
		name:  fileName(w.part, w.opts.Codec),
		file:  sf,
		cw:    cw,
		enc:   enc,
		stats: newFileStats(w.schema, w.opts.NumIndexedCols, w.opts.StringPrefixLength),
		encs:  encs,
	}
	w.part++
	return nil
}

// finishFile closes the current file, uploads it and records it.
func (w *Writer) finishFile(ctx context.Context) error {
	f := w.cur
	defer f.file.close()
	if err := w.flushRowGroup(); err != nil {
		w.cur = nil
		return err
	}
	w.cur = nil
	if err := f.enc.close(); err != nil {
		return fmt.Errorf("close parquet writer: %w", err)
	}
	r, err := f.file.reader()
	if err != nil {
		return err
	}
	if err := w.store.Put(ctx, f.name, r, f.cw.n); err != nil {
		return fmt.Errorf("upload %s: %w", f.name, err)
	}
	w.files = append(w.files, File{
		Path:       f.name,
		Size:       f.cw.n,
		ModTime:    time.Now().UTC(),
		NumRecords: f.stats.rows,
		Stats:      f.stats.json(),
	})
	return nil
}

// Close finishes and uploads the last file and returns every file written, in order. A
// writer that got no rows returns no files. Close after Close or Abort is ErrClosed.
func (w *Writer) Close(ctx context.Context) ([]File, error) {
	if w.closed {
		return nil, ErrClosed
	}
	w.closed = true
	if w.cur != nil {
		if err := w.finishFile(ctx); err != nil {
			return nil, err
		}
	}
	return w.files, nil
}

// Abort drops the file being written and deletes the files already uploaded (best
// effort: an uncommitted file left behind is harmless, VACUUM removes it). It returns the
// first delete error.
func (w *Writer) Abort(ctx context.Context) error {
	w.closed = true
	if f := w.cur; f != nil {
		w.cur = nil
		for _, r := range f.held {
			r.Release()
		}
		_ = f.enc.close()
		f.file.close()
	}
	var first error
	for _, f := range w.files {
		if err := w.store.Delete(ctx, f.Path); err != nil && first == nil {
			first = fmt.Errorf("delete %s: %w", f.Path, err)
		}
	}
	w.files = nil
	return first
}

// RecordBytes is the Arrow size of a record's values: fixed-width values, string and
// binary bytes with their offsets, and validity bitmaps. Slices count only their rows.
func RecordBytes(rec arrow.RecordBatch) int64 {
	var total int64
	for _, col := range rec.Columns() {
		n := int64(col.Len())
		total += (n + 7) / 8
		switch a := col.(type) {
		case *array.String:
			total += offsetSpan(a.ValueOffsets()) + 4*n
		case *array.Binary:
			total += offsetSpan(a.ValueOffsets()) + 4*n
		default:
			if fw, ok := col.DataType().(arrow.FixedWidthDataType); ok {
				total += n * int64(max(fw.BitWidth()/8, 1))
			} else {
				total += 8 * n
			}
		}
	}
	return total
}

// offsetSpan is the value bytes an offsets slice covers.
func offsetSpan(offs []int32) int64 {
	if len(offs) < 2 {
		return 0
	}
	return int64(offs[len(offs)-1] - offs[0])
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Tell is the position in the file: the bytes written (the flat encoder's sink, where
// arrow-go's page writers ask for it).
func (c *countingWriter) Tell() int64 { return c.n }
