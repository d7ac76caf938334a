package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Read reads range r of snapshot snap into Parquet files in bronze's folder, without a log
// entry, and stages them as the range's manifest (ingest.Stage, replacing a former
// attempt's; that attempt's files are orphans for VACUUM). Rows are stamped as snapshot
// rows (docs/bronze.md): _operation 0, _start_lsn and _snapshot L, _commit_ts the commit
// time of L, NULL _seqval, _command_id, _batch_id and _chunk. Memory stays bounded: record
// batches go to the file writer as they arrive.
func Read(ctx context.Context, d Deps, snap lsn.Offset, r Range) (ReadResult, error) {
	st, ok, err := loadOpen(ctx, d, snap.LSN)
	if err != nil {
		return ReadResult{}, err
	}
	ps, pok, err := loadPlan(ctx, d, snap.LSN)
	if err != nil {
		return ReadResult{}, err
	}
	if !ok || !pok {
		return ReadResult{}, &PlanNotFoundError{Snapshot: snap.LSN}
	}
	if r.Index < 0 || r.Index >= len(ps.Ranges) {
		return ReadResult{}, &EventError{Step: StepRead, Reason: fmt.Sprintf("range index %d: the plan of snapshot %s has ranges 0..%d", r.Index, snap.LSN, len(ps.Ranges)-1)}
	}
	r = ps.Ranges[r.Index] // the recorded bounds, not the payload's
	if err := CheckStamp(ctx, d.Source, st.Snapshot); err != nil {
		return ReadResult{}, err
	}
	ci, cols, keys, err := d.columns(ctx, st.CaptureInstance)
	if err != nil {
		return ReadResult{}, err
	}
	schema, err := d.readSchema(ctx, cols)
	if err != nil {
		return ReadResult{}, err
	}
	read, err := rangeRead(d, ci, cols, keys, r, st.Snapshot)
	if err != nil {
		return ReadResult{}, err
	}
	stamp := bronze.SnapshotStamp{CaptureInstance: ci.Name, LSN: st.Snapshot.LSN, CommitTS: st.Snapshot.CommitTime(), Snapshot: st.Snapshot.LSN}
	var progress func(rows, bytes int64)
	if p := d.Options.Progress; p != nil {
		progress = func(rows, bytes int64) {
			p(ReadProgress{Range: r.Index, Ranges: len(ps.Ranges), Rows: rows, Bytes: bytes})
		}
	}
	files, read2, err := readRange(ctx, d, read, schema, stamp, d.Bronze.Store(), progress)
	if err != nil {
		return ReadResult{}, err
	}
	if err := ingest.Stage(ctx, d.Staging, manifestKey(snap.LSN, r.Index), files); err != nil {
		return ReadResult{}, err
	}
	if p := d.Options.Progress; p != nil {
		p(ReadProgress{Range: r.Index, Ranges: len(ps.Ranges), Rows: files.Rows, Bytes: read2, Done: true})
	}
	return ReadResult{Range: r.Index, Rows: files.Rows, Files: len(files.Adds), Bytes: files.Bytes}, nil
}

// rangeRead is the table read of range r for the snapshot stamped at: the whole table, or
// [Lo, Hi) on the key columns.
func rangeRead(d Deps, ci source.CaptureInstance, cols, keys []source.Column, r Range, at lsn.Offset) (source.TableRead, error) {
	return rangeReadOn(d.table(ci), d.Options, cols, keys, r, at)
}

// rangeReadOn is the read of range r of table t (its isolation and lock timeout) for a
// snapshot or wave stamped at. When the stamp is a commit (max_lsn when it was taken), the
// read's session must have reached it (source.TableRead AtLeast), or a secondary behind it
// could hand back a table older than the stamp. A stamp capture has not reached
// (start_lsn − 1 of a new capture instance, no commit time) is above every session's
// max_lsn until capture gets there, so it cannot be checked this way and is not.
func rangeReadOn(t source.Table, opts Options, cols, keys []source.Column, r Range, at lsn.Offset) (source.TableRead, error) {
	read := source.TableRead{Table: t, Columns: cols, ReadOptions: opts.Read}
	if at.HasTime() {
		read.AtLeast = at.LSN
	}
	if r.Lo == nil && r.Hi == nil {
		return read, nil
	}
	var err error
	if read.Range.Lo, err = decodeKey(r.Lo, keys); err != nil {
		return read, err
	}
	if read.Range.Hi, err = decodeKey(r.Hi, keys); err != nil {
		return read, err
	}
	read.Keys = keys
	return read, nil
}

// readRange streams one ReadTable, stamped, into data files of schema in dst, and
// returns them with the Arrow size of the rows read (facts.ArrowBytes, the measure of the
// facts' read_mb). progress, when set, is told the rows and bytes read so far after each
// record batch.
func readRange(ctx context.Context, d Deps, read source.TableRead, schema *arrow.Schema, stamp bronze.SnapshotStamp, dst storage.Store, progress func(rows, bytes int64)) (ingest.Files, int64, error) {
	rows, err := d.Source.ReadTable(ctx, read)
	if err != nil {
		return ingest.Files{}, 0, source.WithOp(fmt.Sprintf("read %s.%s", read.Schema, read.Name), err)
	}
	defer rows.Close()
	var nRows, nBytes int64
	next := func(ctx context.Context) (arrow.RecordBatch, error) {
		rec, err := rows.Next(ctx)
		if err != nil && !errors.Is(err, io.EOF) {
			err = source.WithOp(fmt.Sprintf("read %s.%s", read.Schema, read.Name), err)
		}
		if rec != nil {
			nRows += rec.NumRows()
			nBytes += facts.ArrowBytes(rec)
			if progress != nil {
				progress(nRows, nBytes)
			}
		}
		return rec, err
	}
	w := ingest.NewWriter(dst, schema, d.Options.Writer)
	err = ingest.Copy(ctx, next, w, func(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		return bronze.SnapshotRecord(schema, rec, stamp)
	})
	if err != nil {
		w.Abort(ctx)
		return ingest.Files{}, 0, err
	}
	files, err := w.Close(ctx)
	return files, nBytes, err
}

// targetSchema is TargetSchema of d's bronze (Deps.bronzeState).
func targetSchema(ctx context.Context, d Deps, cols []source.Column) (*arrow.Schema, error) {
	snap, err := d.bronzeState(ctx)
	if err != nil {
		return nil, err
	}
	return schemaOn(snap, cols)
}

// TargetSchema is the schema snapshot rows (a snapshot's, a seed's) are written in:
// bronze's current schema with the capture instance's columns cols it lacks appended (a
// column is matched ignoring case), or the bronze schema of cols when bronze does not exist
// yet.
func TargetSchema(ctx context.Context, bronzeT *deltalog.Table, cols []source.Column) (*arrow.Schema, error) {
	want, err := bronze.Schema(cols)
	if err != nil {
		return nil, err
	}
	snap, err := bronzeT.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("read bronze schema: %w", err)
	}
	return targetSchemaOn(snap, want)
}

// schemaOn is TargetSchema of cols on bronze as snap holds it.
func schemaOn(snap *deltalog.Snapshot, cols []source.Column) (*arrow.Schema, error) {
	want, err := bronze.Schema(cols)
	if err != nil {
		return nil, err
	}
	return targetSchemaOn(snap, want)
}

func targetSchemaOn(snap *deltalog.Snapshot, want *arrow.Schema) (*arrow.Schema, error) {
	if snap.Version() < 0 {
		return want, nil
	}
	have, err := snap.ArrowSchema()
	if err != nil {
		return nil, fmt.Errorf("read bronze schema: %w", err)
	}
	return mergeSchemas(have, want), nil
}

// readSchema is the schema Read writes its range in: targetSchema, which the reads of one
// Run (its ranges, read at once in one process) compute once between them, reading bronze
// once rather than once per range.
func (d Deps) readSchema(ctx context.Context, cols []source.Column) (*arrow.Schema, error) {
	m := d.runSchema
	if m == nil {
		return targetSchema(ctx, d, cols)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.schema == nil {
		s, err := targetSchema(ctx, d, cols)
		if err != nil {
			return nil, err
		}
		m.schema = s
	}
	return m.schema, nil
}

// schemaMemo is the read schema one Run's reads share.
type schemaMemo struct {
	mu     sync.Mutex
	schema *arrow.Schema
}

// mergeSchemas is have's fields followed by the fields of want it lacks (names compared
// ignoring case), every appended field nullable.
func mergeSchemas(have, want *arrow.Schema) *arrow.Schema {
	fields := append([]arrow.Field(nil), have.Fields()...)
	for _, f := range want.Fields() {
		found := false
		for _, h := range have.Fields() {
			if strings.EqualFold(h.Name, f.Name) {
				found = true
				break
			}
		}
		if !found {
			f.Nullable = true
			fields = append(fields, f)
		}
	}
	md := have.Metadata()
	return arrow.NewSchema(fields, &md)
}
