package snapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// ExportMarker is the name of the completion marker Export writes last in the target,
// after every data file (docs/snapshots.md "Export"): a target without it holds a partial
// export (interrupted, or still running) that no reader may use. The name is Hadoop's
// job-success marker, which Spark and Hive already skip when they read a folder.
const ExportMarker = "_SUCCESS"

// ExportStartedMarker is the file Export writes in the target before its first data file
// (an ExportStarted): with it and without ExportMarker, the target holds a partial export
// that a reader can tell from a folder of Parquet files some other tool wrote without a
// marker (the seed refuses it as a copy; docs/decisions/0028-export-started-marker.md).
// It stays after the export finishes. Spark and Hive skip it as they skip _SUCCESS.
const ExportStartedMarker = "_EXPORTING"

// ExportStarted is the content of the ExportStartedMarker file.
type ExportStarted struct {
	// Format is "mssqlcdc-export"; Version 1.
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Snapshot is the stamp of the rows the export writes.
	Snapshot lsn.Offset `json:"snapshot"`
	// StartedAt is when the export started writing, UTC.
	StartedAt time.Time `json:"started_at"`
}

// ExportManifest is the content of the ExportMarker file: what the export holds. A reader
// checks that the marker exists and reads the files it lists (paths relative to the
// target), nothing else.
type ExportManifest struct {
	// Format is "mssqlcdc-export"; Version 1.
	Format  string `json:"format"`
	Version int    `json:"version"`
	// CaptureInstance is the instance whose columns were exported (the bronze schema).
	CaptureInstance string `json:"capture_instance"`
	// Snapshot is the stamp every row carries (_start_lsn, _commit_ts).
	Snapshot lsn.Offset `json:"snapshot"`
	// Rows is the sum of the files' rows.
	Rows  int64        `json:"rows"`
	Files []ExportFile `json:"files"`
	// WrittenAt is when the marker was written, UTC.
	WrittenAt time.Time `json:"written_at"`
}

// ExportFile is one data file of an export: its path relative to the target, its size in
// bytes and its row count.
type ExportFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	Rows int64  `json:"rows"`
}

// ExportManifestFormat is ExportManifest.Format.
const ExportManifestFormat = "mssqlcdc-export"

// Export writes the table's current rows into Parquet files in dst, in the stream's
// (bronze) schema, stamped as snapshot rows at L: the stamp recorded before the read
// (StampLSN), or given when not zero, else the spec's snapshotLsn (an LSN recorded before
// the read started, docs/snapshots.md "Export"). A given stamp above what StampLSN
// records now is a *StampAheadError. It touches no Delta table, no facts and no staging
// state (d.Bronze, d.Facts and d.Staging are not used): every call reads the table again
// with a new stamp. dst must hold no object: otherwise *TargetNotEmptyError, before
// anything is read (a second export beside the first would double the rows). Ranges are
// read one after the other, each reported to d.Options.Progress. The ExportMarker file,
// listing the files, is written last: an export killed before it leaves a target without
// the marker, which a reader must not use and a rerun refuses (delete it first).
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
	ranges, size, err := d.planRanges(ctx, ci, keys, max(d.Spec.Options.NumPartitions, 1), false)
	if err != nil {
		return ExportResult{}, err
	}
	est := size.Rows
	if est == 0 && d.Options.Progress != nil {
		// Only for the ETA the progress shows: a plan on one integer key needs no estimate.
		if s, err := d.Source.SizeEstimate(ctx, d.table(ci)); err == nil {
			est = s.Rows
		}
	}
	stamp := bronze.SnapshotStamp{CaptureInstance: ci.Name, LSN: l, CommitTS: off.CommitTime(), Snapshot: l}
	// Before the first data file: a target holding files without ExportMarker is then
	// known for a partial export of ours.
	if err := putJSON(ctx, dst, ExportStartedMarker, ExportStarted{Format: ExportManifestFormat, Version: 1, Snapshot: off, StartedAt: d.now().UTC()}); err != nil {
		return ExportResult{}, err
	}
	var all ingest.Files
	for _, r := range ranges {
		read, err := rangeRead(d, ci, cols, keys, r, off)
		if err != nil {
			return ExportResult{}, err
		}
		var progress func(rows, bytes int64)
		if p := d.Options.Progress; p != nil {
			progress = func(rows, bytes int64) {
				p(ReadProgress{Range: r.Index, Ranges: len(ranges), Rows: rows, Bytes: bytes, EstimatedRows: est})
			}
		}
		files, nBytes, err := readRange(ctx, d, read, schema, stamp, dst, progress)
		if err != nil {
			return ExportResult{}, fmt.Errorf("export range %d: %w", r.Index, err)
		}
		if p := d.Options.Progress; p != nil {
			p(ReadProgress{Range: r.Index, Ranges: len(ranges), Rows: files.Rows, Bytes: nBytes, Done: true, EstimatedRows: est})
		}
		all.Add(files)
	}
	if all.Adds == nil {
		all.Adds = []deltalog.Add{}
	}
	m := ExportManifest{Format: ExportManifestFormat, Version: 1, CaptureInstance: ci.Name, Snapshot: off, Rows: all.Rows,
		Files: make([]ExportFile, len(all.Adds)), WrittenAt: d.now().UTC()}
	for i := range all.Adds {
		a := &all.Adds[i]
		n, ok := a.NumRecords()
		if !ok {
			return ExportResult{}, fmt.Errorf("export: file %s has no row count", a.Path)
		}
		m.Files[i] = ExportFile{Path: a.Path, Size: a.Size, Rows: n}
	}
	if err := putJSON(ctx, dst, ExportMarker, m); err != nil {
		return ExportResult{}, err
	}
	return ExportResult{Snapshot: off, Rows: all.Rows, Files: all.Adds}, nil
}

// checkEmptyTarget returns *TargetNotEmptyError when dst holds any object (one List
// page), saying whether the marker of a finished export is there.
func checkEmptyTarget(ctx context.Context, dst storage.Store) error {
	for obj, err := range dst.List(ctx, "", "") {
		if err != nil {
			return fmt.Errorf("list export target: %w", err)
		}
		_, herr := dst.Head(ctx, ExportMarker)
		switch {
		case herr == nil:
			return &TargetNotEmptyError{URL: dst.URL(), Key: obj.Key, Finished: true}
		case !errors.Is(herr, storage.ErrNotFound):
			return fmt.Errorf("read export target: %w", herr)
		}
		return &TargetNotEmptyError{URL: dst.URL(), Key: obj.Key}
	}
	return nil
}
