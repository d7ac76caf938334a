package snapshot

import (
	"context"
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// ExportResult is what Export wrote.
type ExportResult struct {
	Snapshot lsn.Offset `json:"snapshot"`
	Rows     int64      `json:"rows"`
	// Files are the data files written, as add actions (paths relative to the target).
	Files []deltalog.Add `json:"files"`
}

// Export writes the table's current rows into Parquet files in dst, in the stream's
// (bronze) schema, stamped as snapshot rows at L: the stamp recorded before the read
// (StampLSN), or given when not zero, else the spec's snapshotLsn (an LSN recorded before
// the read started, docs/snapshots.md "Export"). A given stamp above what StampLSN
// records now is a *StampAheadError. It touches no Delta table, no facts and no staging
// state (d.Bronze, d.Facts and d.Staging are not used): every call reads the table again
// with a new stamp. dst must hold no object: otherwise *TargetNotEmptyError, before
// anything is read (a second export beside the first would double the rows). Ranges are
// read one after the other.
func Export(ctx context.Context, d Deps, dst storage.Store, given lsn.LSN) (ExportResult, error) {
	if err := checkEmptyTarget(ctx, dst); err != nil {
		return ExportResult{}, err
	}
	ci, _, err := instances(ctx, d.Source, d.Spec.Source.CaptureInstance)
	if err != nil {
		return ExportResult{}, err
	}
	l := given
	if l.IsZero() {
		l = d.givenStamp()
	}
	if l.IsZero() {
		if l, err = StampLSN(ctx, d.Source, ci); err != nil {
			return ExportResult{}, err
		}
	} else if err := checkGivenStamp(ctx, d.Source, ci, l); err != nil {
		return ExportResult{}, err
	}
	off, err := stampOffset(ctx, d.Source, l)
	if err != nil {
		return ExportResult{}, err
	}
	_, cols, keys, err := d.columns(ctx, ci.Name)
	if err != nil {
		return ExportResult{}, err
	}
	schema, err := bronze.Schema(cols)
	if err != nil {
		return ExportResult{}, err
	}
	ranges, _, err := d.planRanges(ctx, ci, keys, max(d.Spec.Options.NumPartitions, 1), false)
	if err != nil {
		return ExportResult{}, err
	}
	stamp := bronze.SnapshotStamp{CaptureInstance: ci.Name, LSN: l, CommitTS: off.CommitTime(), Snapshot: l}
	var all ingest.Files
	for _, r := range ranges {
		read, err := rangeRead(d, ci, cols, keys, r)
		if err != nil {
			return ExportResult{}, err
		}
		files, _, err := readRange(ctx, d, read, schema, stamp, dst, nil)
		if err != nil {
			return ExportResult{}, fmt.Errorf("export range %d: %w", r.Index, err)
		}
		all.Add(files)
	}
	if all.Adds == nil {
		all.Adds = []deltalog.Add{}
	}
	return ExportResult{Snapshot: off, Rows: all.Rows, Files: all.Adds}, nil
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
