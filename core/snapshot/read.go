package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Read reads range r of snapshot snap into Parquet files in bronze's folder, without a log
// entry, and records them in the range's staging manifest (replacing a former attempt's;
// that attempt's files are orphans for VACUUM). Rows are stamped as snapshot rows
// (DESIGN.md §4.2): _operation 0, _start_lsn and _snapshot L, _commit_ts the commit time
// of L, NULL _seqval, _command_id, _batch_id and _chunk. Memory stays bounded: batches go
// to the file writer as they arrive.
func (j *Job) Read(ctx context.Context, snap lsn.Offset, r Range) (ReadResult, error) {
	st, ok, err := j.loadOpen(ctx, snap.LSN)
	if err != nil {
		return ReadResult{}, err
	}
	var ps planState
	pok, err := getJSON(ctx, j.Staging, planKey(snap.LSN), &ps)
	if err != nil {
		return ReadResult{}, err
	}
	if !ok || !pok || r.Index < 0 || r.Index >= len(ps.Ranges) {
		return ReadResult{}, &PlanNotFoundError{Snapshot: snap.LSN.String()}
	}
	r = ps.Ranges[r.Index] // the recorded bounds, not the payload's
	ci, cols, keys, err := j.columns(ctx, st.CaptureInstance)
	if err != nil {
		return ReadResult{}, err
	}
	schema, err := j.targetSchema(ctx, cols)
	if err != nil {
		return ReadResult{}, err
	}
	read := source.TableRead{Table: j.table(ci), Columns: cols, ReadOptions: j.ReadOptions}
	if r.Lo != nil || r.Hi != nil {
		if read.Range.Lo, err = decodeKey(r.Lo, keys); err != nil {
			return ReadResult{}, err
		}
		if read.Range.Hi, err = decodeKey(r.Hi, keys); err != nil {
			return ReadResult{}, err
		}
		read.Keys = keys
	}
	l := st.Snapshot.LSN
	stamp := bronze.SnapshotStamp{CaptureInstance: ci.Name, LSN: l, CommitTS: st.Snapshot.CommitTime(), Snapshot: l}
	m, err := j.readRange(ctx, read, schema, stamp, j.Bronze.NewFileWriter(schema))
	if err != nil {
		return ReadResult{}, err
	}
	m.Range = r.Index
	m.ReadAt = j.now()
	if err := putJSON(ctx, j.Staging, manifestKey(snap.LSN, r.Index), m); err != nil {
		return ReadResult{}, err
	}
	return ReadResult{Range: r.Index, Rows: m.Rows, Files: len(m.Files), Bytes: m.Bytes}, nil
}

// readRange streams one ReadTable into bronze files.
func (j *Job) readRange(ctx context.Context, read source.TableRead, schema *arrow.Schema, stamp bronze.SnapshotStamp, w FileWriter) (manifest, error) {
	rows, err := j.Source.ReadTable(ctx, read)
	if err != nil {
		w.Abort(ctx)
		return manifest{}, fmt.Errorf("read %s.%s: %w", read.Schema, read.Name, err)
	}
	defer rows.Close()
	var m manifest
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.Abort(ctx)
			return manifest{}, fmt.Errorf("read %s.%s: %w", read.Schema, read.Name, err)
		}
		out, err := bronze.SnapshotRecord(schema, rec, stamp)
		rec.Release()
		if err != nil {
			w.Abort(ctx)
			return manifest{}, err
		}
		err = w.Write(ctx, out)
		m.Rows += out.NumRows()
		out.Release()
		if err != nil {
			w.Abort(ctx)
			return manifest{}, fmt.Errorf("write snapshot files: %w", err)
		}
	}
	files, err := w.Close(ctx)
	if err != nil {
		return manifest{}, fmt.Errorf("write snapshot files: %w", err)
	}
	m.Files = files
	for _, f := range files {
		m.Bytes += f.Size
	}
	if m.Files == nil {
		m.Files = []DataFile{}
	}
	return m, nil
}

// targetSchema is the schema snapshot rows are written in: bronze's current schema with
// the capture instance's columns it lacks appended (a column is matched ignoring case), or
// the bronze schema of the columns when bronze does not exist yet.
func (j *Job) targetSchema(ctx context.Context, cols []source.Column) (*arrow.Schema, error) {
	want, err := bronze.Schema(cols)
	if err != nil {
		return nil, err
	}
	have, err := j.Bronze.Schema(ctx)
	if err != nil {
		return nil, fmt.Errorf("read bronze schema: %w", err)
	}
	if have == nil {
		return want, nil
	}
	return mergeSchemas(have, want), nil
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
