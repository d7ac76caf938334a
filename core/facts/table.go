package facts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// Append commits rows to the facts table t as one Delta commit keyed by
// txn(txnAppID, version) (the package doc lists the keys), through ingest: a replay whose
// txn is already recorded writes nothing, not even a data file, and reports Replayed ("a
// replay writes both or neither", docs/reference/original-library.md §5.1). The table is
// created on first use with Schema(); a stream that loses that race to another one sharing
// the table appends to the winner's table.
func Append(ctx context.Context, t *deltalog.Table, txnAppID string, version int64, rows []Row, wopts parquetio.WriterOptions) (ingest.Result, error) {
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return ingest.Result{}, fmt.Errorf("read facts table: %w", err)
	}
	return AppendOn(ctx, snap, txnAppID, version, rows, wopts)
}

// AppendOn is Append on the facts table state snap the caller has just read (its
// Snapshot's table), so the table is not read twice.
func AppendOn(ctx context.Context, snap *deltalog.Snapshot, txnAppID string, version int64, rows []Row, wopts parquetio.WriterOptions) (ingest.Result, error) {
	t := snap.Table()
	if res, ok := ingest.Replayed(snap, txnAppID, version); ok {
		return res, nil
	}
	rec := Record(memory.DefaultAllocator, rows)
	defer rec.Release()
	w := ingest.NewWriter(t.Store(), schema, wopts)
	if err := w.Write(ctx, rec); err != nil {
		w.Abort(ctx)
		return ingest.Result{}, fmt.Errorf("write facts file: %w", err)
	}
	files, err := w.Close(ctx)
	if err != nil {
		return ingest.Result{}, fmt.Errorf("write facts file: %w", err)
	}
	// Spark's WRITE in Append mode, values bare as Spark writes them.
	res, err := ingest.Append(ctx, t, snap, ingest.Commit{AppID: txnAppID, Version: version, Schema: schema, Files: files,
		Operation: "WRITE", OperationParameters: map[string]string{"mode": "Append", "partitionBy": "[]"}})
	if err != nil {
		return res, fmt.Errorf("commit facts: %w", err)
	}
	return res, nil
}

// ReadRows reads every row of the facts table at snap whose app_id is one of appIDs (all
// rows when none is given), through the snapshot's scan (one app_id: files whose
// statistics exclude it are skipped). A table not created yet has no rows.
func ReadRows(ctx context.Context, snap *deltalog.Snapshot, appIDs ...string) ([]Row, error) {
	var filter deltalog.Filter
	if len(appIDs) == 1 {
		filter = deltalog.Eq(ColAppID, appIDs[0])
	}
	rows, err := scan(ctx, snap, filter)
	if err != nil || len(appIDs) < 2 {
		return rows, err
	}
	return slices.DeleteFunc(rows, func(r Row) bool { return !slices.Contains(appIDs, r.AppID) }), nil
}

// ReadRowsWhere reads the rows of the facts table at snap that filter keeps (files whose
// statistics exclude it are skipped; the rows are filtered exactly too). A table not
// created yet has no rows.
func ReadRowsWhere(ctx context.Context, snap *deltalog.Snapshot, filter deltalog.Filter) ([]Row, error) {
	return scan(ctx, snap, filter)
}

// scan reads the rows of the facts table at snap that filter keeps (nil: all).
func scan(ctx context.Context, snap *deltalog.Snapshot, filter deltalog.Filter) ([]Row, error) {
	if snap.Version() < 0 {
		return nil, nil
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("scan facts: %w", err)
	}
	defer it.Close()
	var out []Row
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("scan facts: %w", err)
		}
		rows, err := FromRecord(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
}

// ReadEvents reads appID's event rows of the given kinds (snapshot_open, bootstrap, ...)
// at snap. Unlike ReadRows it also skips the files whose statistics exclude the event (a
// file of micro-batch rows only, whose event column is all NULL), and keeps no
// micro-batch row, so its cost follows the stream's events, not its batches nor the
// streams sharing the table.
func ReadEvents(ctx context.Context, snap *deltalog.Snapshot, appID string, kinds ...string) ([]Row, error) {
	var out []Row
	for _, kind := range kinds {
		rows, err := scan(ctx, snap, deltalog.And(deltalog.Eq(ColAppID, appID), deltalog.Eq(ColEvent, kind)))
		if err != nil {
			return nil, fmt.Errorf("read %s rows: %w", kind, err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// SnapshotEvents reads appID's snapshot rows (snapshot_open, bootstrap, resnapshot) from
// the facts table t, what OpenSnapshots and LatestSnapshotLSN look at (none when t does
// not exist yet).
func SnapshotEvents(ctx context.Context, t *deltalog.Table, appID string) ([]Row, error) {
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("read facts table: %w", err)
	}
	return SnapshotEventsIn(ctx, snap, appID)
}

// SnapshotEventsIn is SnapshotEvents read from a facts table snapshot the caller holds.
func SnapshotEventsIn(ctx context.Context, snap *deltalog.Snapshot, appID string) ([]Row, error) {
	return ReadEvents(ctx, snap, appID, EventSnapshotOpen, EventBootstrap, EventResnapshot)
}

// CompletedSnapshots lists the LSNs ("0x…") of the complete snapshots of bronze table
// target in the facts table at snap: the max_lsn of its bootstrap and resnapshot rows, of
// every app_id and generation (docs/bronze.md "The current table"). A chunked snapshot is
// complete only once that row exists, and an empty table's snapshot is found only by it.
// None when the table does not exist yet.
func CompletedSnapshots(ctx context.Context, snap *deltalog.Snapshot, target string) ([]string, error) {
	var out []string
	for _, ev := range []string{EventBootstrap, EventResnapshot} {
		rows, err := scan(ctx, snap, deltalog.And(deltalog.Eq(ColEvent, ev), deltalog.Eq(ColTarget, target)))
		if err != nil {
			return nil, fmt.Errorf("read %s rows: %w", ev, err)
		}
		for _, r := range rows {
			if r.MaxLSN != "" {
				out = append(out, r.MaxLSN)
			}
		}
	}
	return out, nil
}
