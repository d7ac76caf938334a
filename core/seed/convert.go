package seed

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// ConvertResult is the output of Convert for one file group.
type ConvertResult struct {
	Group int `json:"group"`
	// Files and CopyBytes are the copy's files read and their size; Rows the rows
	// converted.
	Files     int   `json:"files"`
	CopyBytes int64 `json:"copy_bytes"`
	Rows      int64 `json:"rows"`
	// Written and Bytes are the bronze Parquet files written and their size.
	Written int   `json:"written"`
	Bytes   int64 `json:"bytes"`
	// CopiedChunks is the copy's column chunks written into bronze as they are, without
	// decoding (docs/seed.md § Conversion).
	CopiedChunks int `json:"copied_chunks"`
}

// Convert reads file group g of plan id of seed seedLSN from the copy and writes its rows
// as bronze snapshot rows into Parquet files in bronze's folder, without a log entry, then
// stages them as the group's manifest (ingest.Stage, replacing an earlier attempt's, whose
// files become orphans for VACUUM). Rows are stamped as the snapshot rows of
// docs/bronze.md: _operation 0, _start_lsn and _snapshot L, _commit_ts the commit time of
// L, _capture_instance the configured instance, NULL _seqval, _command_id, _batch_id and
// _chunk; each captured column is cast from its copy column (docs/seed.md § Columns and
// types). A value no cast takes is a *CastError and nothing is staged. Memory stays
// bounded: the copy is read a batch at a time into the file writer (one row group).
// SQL Server is not read.
func Convert(ctx context.Context, d Deps, seed lsn.Offset, id string, g Group) (ConvertResult, error) {
	st, err := loadPlan(ctx, d, seed.LSN, id)
	if err != nil {
		return ConvertResult{}, err
	}
	if g.Index < 0 || g.Index >= len(st.Groups) {
		return ConvertResult{}, &PlanNotFoundError{Seed: seed.LSN, Plan: fmt.Sprintf("%s (group %d)", id, g.Index)}
	}
	cd, err := openCopy(ctx, d.OpenCopy, st.Copy, st.Format, st.Version)
	if err != nil {
		return ConvertResult{}, err
	}
	schema, err := st.bronzeSchema(ctx, d)
	if err != nil {
		return ConvertResult{}, err
	}
	cv := &converter{plan: st.Columns, schema: schema, stamp: st.stamp()}
	files := st.Groups[g.Index]
	opts := ingest.Options(d.Options.Writer)
	w := ingest.NewWriter(d.Bronze.Store(), schema, opts)
	sw := parquetio.NewSpliceWriter(d.Bronze.Store(), schema, opts)
	codec := opts.Codec
	if codec == "" {
		codec = parquetio.Snappy
	}
	sp, err := newSplicer(cv, sw, codec)
	if err != nil {
		return ConvertResult{}, err
	}
	defer sp.release()
	out := ConvertResult{Group: g.Index, Files: len(files)}
	for _, f := range files {
		var n int64
		var spliced bool
		if !d.Options.DecodeAll {
			n, spliced, err = sp.convert(ctx, cd, f)
		}
		if err == nil && !spliced {
			n, err = convertFile(ctx, cd, f, cv, w)
		}
		if err != nil {
			w.Abort(ctx)
			_ = sw.Abort(context.WithoutCancel(ctx))
			return ConvertResult{}, err
		}
		out.Rows += n
		out.CopyBytes += f.Size
	}
	written, err := w.Close(ctx)
	if err != nil {
		_ = sw.Abort(context.WithoutCancel(ctx))
		return ConvertResult{}, err
	}
	splicedFiles, err := sw.Close(ctx)
	if err != nil {
		return ConvertResult{}, fmt.Errorf("write data file: %w", err)
	}
	written.Add(ingest.FilesOf(splicedFiles))
	out.CopiedChunks = sp.copied
	if err := ingest.Stage(ctx, d.Staging, groupKey(seed.LSN, id, g.Index), written); err != nil {
		return ConvertResult{}, err
	}
	out.Written, out.Bytes = len(written.Adds), written.Bytes
	return out, nil
}

// bronzeSchema is the schema the seed's files are written in (snapshot.TargetSchema of the
// captured columns).
func (st planState) bronzeSchema(ctx context.Context, d Deps) (*arrow.Schema, error) {
	return snapshot.TargetSchema(ctx, d.Bronze, st.captured())
}

// captured are the plan's captured columns.
func (st planState) captured() []source.Column {
	out := make([]source.Column, len(st.Columns))
	for i, p := range st.Columns {
		out[i] = p.Column
	}
	return out
}

// stamp is what every seed row is stamped with (docs/bronze.md § Columns).
func (st planState) stamp() bronze.SnapshotStamp {
	return bronze.SnapshotStamp{CaptureInstance: st.CaptureInstance, LSN: st.Seed.LSN, CommitTS: st.Seed.CommitTime(), Snapshot: st.Seed.LSN}
}

// convertFile converts one file of the copy into w and returns its rows. A refused value
// is a *CastError naming the file, row group, row, column and value.
func convertFile(ctx context.Context, cd *copyData, f copyFile, cv *converter, w *ingest.Writer) (int64, error) {
	it, err := cd.read(ctx, f, copyColumns(cv.plan))
	if err != nil {
		return 0, fmt.Errorf("copy %s: %w", cd.fileURL(f.Path), err)
	}
	var parts map[string]*string
	if cd.format == FormatParquet {
		parts = hiveValues(f.Path)
	}
	var rows int64
	err = parquetio.Drain(ctx, it, func(rec arrow.RecordBatch) error {
		out, cf, err := cv.convert(rec, parts, f.Path)
		if err != nil {
			return err
		}
		if cf != nil {
			return castError(ctx, cd, f, rows+int64(cf.Row), cf)
		}
		err = w.Write(ctx, out)
		out.Release()
		rows += rec.NumRows()
		return err
	})
	if err != nil {
		return 0, err
	}
	return rows, nil
}

// castError describes a refused value at position pos of file f's rows as read (without
// the rows a deletion vector deletes), with its row group and its position in the file
// from the file's footer (and its deletion vector). Both stay unknown (-1, the position
// among the live rows) when they cannot be read: the value, column and file are named
// anyway.
func castError(ctx context.Context, cd *copyData, f copyFile, pos int64, cf *columnFailure) error {
	e := &CastError{Copy: cd.url, File: f.Path, RowGroup: -1, Row: pos, FileRow: pos, Column: cf.plan.Column.Name,
		SQLType: sqlTypeText(cf.plan.Column), CopyColumn: cf.plan.Copy, Value: cf.Value, Reason: cf.Reason}
	phys := pos
	if f.DV {
		var ok bool
		if phys, ok = cd.physicalRow(ctx, f, pos); !ok {
			return e
		}
	}
	if groups, err := parquetio.RowGroupRows(ctx, cd.store, f.key(cd.format)); err == nil {
		if g, in, ok := parquetio.RowGroupOf(groups, phys); ok {
			e.RowGroup, e.Row, e.FileRow = g, in, phys
		}
	}
	return e
}

// physicalRow is the position in the file of the live row at position live of a Delta
// file with a deletion vector; ok is false when the vector cannot be read.
func (cd *copyData) physicalRow(ctx context.Context, f copyFile, live int64) (int64, bool) {
	for _, a := range cd.snap.Files() {
		if a.Path != f.Path {
			continue
		}
		deleted, err := cd.snap.DeletedRows(ctx, &a)
		if err != nil {
			return 0, false
		}
		for p := int64(0); ; p++ {
			if deleted.Contains(uint64(p)) {
				continue
			}
			if live == 0 {
				return p, true
			}
			live--
		}
	}
	return 0, false
}
