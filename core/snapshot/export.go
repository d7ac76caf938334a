package snapshot

import (
	"context"
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// ExportResult is what Export wrote.
type ExportResult struct {
	Snapshot lsn.Offset `json:"snapshot"`
	Rows     int64      `json:"rows"`
	Files    []DataFile `json:"files"`
}

// Export writes the table's current rows into Parquet files in dst, in the stream's
// (bronze) schema, stamped as snapshot rows at L: the stamp recorded before the read
// (StampLSN), or given when not zero, else the job's SnapshotLSN (seed: the snapshotLsn
// option, an LSN recorded before the read started). A given stamp above what StampLSN
// records now is a *StampAheadError. It touches no Delta table, no facts and no staging
// state: every call reads the table again with a new stamp (seed "A snapshot without the
// stream": write it once and take the LSN it returns). dst must hold no object: otherwise
// *TargetNotEmptyError, before anything is read (a second export beside the first would
// double the rows). Ranges are read one after the other.
func (j *Job) Export(ctx context.Context, dst storage.Store, given lsn.LSN, opts parquetio.WriterOptions) (ExportResult, error) {
	if err := checkEmptyTarget(ctx, dst); err != nil {
		return ExportResult{}, err
	}
	ci, _, err := j.instance(ctx)
	if err != nil {
		return ExportResult{}, err
	}
	l := given
	if l.IsZero() {
		l = j.SnapshotLSN
	}
	if l.IsZero() {
		if l, err = StampLSN(ctx, j.Source, ci); err != nil {
			return ExportResult{}, err
		}
	} else if err := checkGivenStamp(ctx, j.Source, ci, l); err != nil {
		return ExportResult{}, err
	}
	off, err := stampOffset(ctx, j.Source, l)
	if err != nil {
		return ExportResult{}, err
	}
	_, cols, keys, err := j.columns(ctx, ci.Name)
	if err != nil {
		return ExportResult{}, err
	}
	schema, err := bronze.Schema(cols)
	if err != nil {
		return ExportResult{}, err
	}
	ranges, err := planRanges(ctx, j.Source, j.table(ci), keys, max(j.NumPartitions, 1))
	if err != nil {
		return ExportResult{}, err
	}
	stamp := bronze.SnapshotStamp{CaptureInstance: ci.Name, LSN: l, CommitTS: off.CommitTime(), Snapshot: l}
	res := ExportResult{Snapshot: off, Files: []DataFile{}}
	for _, r := range ranges {
		read := source.TableRead{Table: j.table(ci), Columns: cols, ReadOptions: j.ReadOptions}
		if r.Lo != nil || r.Hi != nil {
			if read.Range.Lo, err = decodeKey(r.Lo, keys); err != nil {
				return ExportResult{}, err
			}
			if read.Range.Hi, err = decodeKey(r.Hi, keys); err != nil {
				return ExportResult{}, err
			}
			read.Keys = keys
		}
		m, err := j.readRange(ctx, read, schema, stamp, &parquetWriter{w: parquetio.NewWriter(dst, schema, opts)})
		if err != nil {
			return ExportResult{}, fmt.Errorf("export range %d: %w", r.Index, err)
		}
		res.Rows += m.Rows
		res.Files = append(res.Files, m.Files...)
	}
	return res, nil
}

// checkEmptyTarget returns *TargetNotEmptyError when dst holds any object (one List page).
func checkEmptyTarget(ctx context.Context, dst storage.Store) error {
	for obj, err := range dst.List(ctx, "", "") {
		if err != nil {
			return fmt.Errorf("list export target: %w", err)
		}
		return &TargetNotEmptyError{URL: dst.URL(), Key: obj.Key}
	}
	return nil
}
