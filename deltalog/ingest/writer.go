package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// DefaultRowGroupBytes bounds the Arrow data a Writer holds before it encodes a row group,
// when WriterOptions.RowGroupBytes is 0: parquetio's one default, the measured best
// (docs/performance.md § Row-group size).
const DefaultRowGroupBytes = parquetio.DefaultRowGroupBytes

// Options are opts with DefaultRowGroupBytes for a zero RowGroupBytes; the other zero
// fields take parquetio's defaults.
func Options(opts parquetio.WriterOptions) parquetio.WriterOptions {
	if opts.RowGroupBytes == 0 {
		opts.RowGroupBytes = DefaultRowGroupBytes
	}
	return opts
}

// Files are data files written into a table's folder and not yet in its log: the add
// actions that will commit them (paths relative to the table root, escaped as the log
// wants them, dataChange true, statistics), with their rows and bytes. It is also the
// body of a staging manifest (Stage, Gather), so its JSON names are stable.
type Files struct {
	// Rows is the rows in the files; Bytes their size on storage.
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
	// Adds are the files' add actions in the order they were written; never nil in JSON.
	Adds []deltalog.Add `json:"files"`
}

// Add appends o's files and counts.
func (f *Files) Add(o Files) {
	f.Rows += o.Rows
	f.Bytes += o.Bytes
	f.Adds = append(f.Adds, o.Adds...)
}

// Writer streams record batches of one schema into Parquet data files in a folder (a
// table's, or an export's), rolling files at WriterOptions.TargetFileSize and holding at
// most one row group of Arrow data in memory. Not safe for concurrent use: give each
// goroutine its own.
type Writer struct {
	w *parquetio.Writer
}

// NewWriter starts data files of schema in store (the table's root, the same store its
// log's paths are relative to). Zero options take Options' defaults. No I/O until Write.
func NewWriter(store storage.Store, schema *arrow.Schema, opts parquetio.WriterOptions) *Writer {
	return &Writer{w: parquetio.NewWriter(store, schema, Options(opts))}
}

// Write adds rec's rows; the caller keeps its reference to rec. An error leaves the writer
// unusable: Abort it.
func (w *Writer) Write(ctx context.Context, rec arrow.RecordBatch) error {
	if err := w.w.Write(ctx, rec); err != nil {
		return fmt.Errorf("write data file: %w", err)
	}
	return nil
}

// Close uploads the last file and returns every file written (no files, Adds empty, when
// no row was written).
func (w *Writer) Close(ctx context.Context) (Files, error) {
	files, err := w.w.Close(ctx)
	if err != nil {
		return Files{}, fmt.Errorf("write data file: %w", err)
	}
	return FilesOf(files), nil
}

// FilesOf are the add actions of data files written by a parquetio writer (Writer or
// SpliceWriter), with their rows and bytes.
func FilesOf(files []parquetio.File) Files {
	out := Files{Adds: make([]deltalog.Add, 0, len(files))}
	for _, f := range files {
		out.Adds = append(out.Adds, deltalog.AddFromParquet(f))
		out.Rows += f.NumRecords
		out.Bytes += f.Size
	}
	return out
}

// Abort drops what is buffered and deletes the files already uploaded, best effort (a
// file left behind is an orphan VACUUM removes). It never fails: the caller is already
// returning another error.
func (w *Writer) Abort(ctx context.Context) { _ = w.w.Abort(context.WithoutCancel(ctx)) }

// Copy drains a read into w: next returns record batches until io.EOF (any other error is
// returned as next returned it, so the caller maps its source's errors itself); each batch
// goes through conv, which returns the record to write (rec itself, or a new record Copy
// releases) or nil to write nothing (a count-only pass). w may be nil when conv never
// returns a record. Copy neither closes nor aborts w.
func Copy(ctx context.Context, next func(context.Context) (arrow.RecordBatch, error), w *Writer,
	conv func(rec arrow.RecordBatch) (arrow.RecordBatch, error)) error {
	for {
		rec, err := next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		out, err := conv(rec)
		if err == nil && out != nil {
			err = w.Write(ctx, out)
			if out != rec {
				out.Release()
			}
		}
		rec.Release()
		if err != nil {
			return err
		}
	}
}
