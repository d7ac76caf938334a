package facts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Append commits rows to the facts table t as one Delta commit keyed by
// txn(txnAppID, version) (the package doc lists the keys). A replay whose txn is already
// recorded writes nothing and reports Skipped: "a replay writes both or neither"
// (reference §8 step 6). The table is created on first use with Schema().
func Append(ctx context.Context, t *deltalog.Table, txnAppID string, version int64, rows []Row, wopts parquetio.WriterOptions) (deltalog.CommitResult, error) {
	for attempt := 0; ; attempt++ {
		res, created, err := appendOnce(ctx, t, txnAppID, version, rows, wopts)
		var cm *deltalog.ConcurrentModificationError
		if created && errors.As(err, &cm) && attempt < 2 {
			// Another stream created the shared table first: adopt it and append again
			// (reference §8: a CREATE that loses a race adopts the winner's table).
			continue
		}
		return res, err
	}
}

// appendOnce is one attempt of Append; created reports whether it tried to create the
// table.
func appendOnce(ctx context.Context, t *deltalog.Table, txnAppID string, version int64, rows []Row, wopts parquetio.WriterOptions) (deltalog.CommitResult, bool, error) {
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return deltalog.CommitResult{}, false, fmt.Errorf("read facts table: %w", err)
	}
	created := snap.Version() < 0
	if v, ok := snap.TxnVersion(txnAppID); ok && v >= version {
		return deltalog.CommitResult{Version: snap.Version(), Skipped: true}, created, nil
	}
	rec := Record(memory.DefaultAllocator, rows)
	defer rec.Release()
	w := parquetio.NewWriter(t.Store(), schema, wopts)
	if err := w.Write(ctx, rec); err != nil {
		_ = w.Abort(ctx)
		return deltalog.CommitResult{}, created, fmt.Errorf("write facts file: %w", err)
	}
	files, err := w.Close(ctx)
	if err != nil {
		return deltalog.CommitResult{}, created, fmt.Errorf("write facts file: %w", err)
	}
	tx := t.Begin(snap)
	if err := tx.SetSchema(schema); err != nil {
		return deltalog.CommitResult{}, created, fmt.Errorf("facts table schema: %w", err)
	}
	for _, f := range files {
		tx.Add(AddOf(f))
	}
	tx.SetAppTxn(txnAppID, version)
	// Spark's WRITE in Append mode, values bare as Spark writes them (SetOperation quotes each).
	tx.SetOperation("WRITE", map[string]string{"mode": "Append", "partitionBy": "[]"})
	res, err := tx.Commit(ctx)
	if err != nil {
		return res, created, fmt.Errorf("commit facts: %w", err)
	}
	return res, created, nil
}

// AddOf is the add action of a data file written by parquetio (dataChange true, no
// partitions). The path is escaped as a relative URI (PROTOCOL.md § Add File).
func AddOf(f parquetio.File) deltalog.Add {
	return deltalog.Add{
		Path:             (&url.URL{Path: f.Path}).EscapedPath(),
		PartitionValues:  map[string]string{},
		Size:             f.Size,
		ModificationTime: f.ModTime.UnixMilli(),
		DataChange:       true,
		Stats:            f.Stats,
	}
}

// ReadRows reads every row of the facts table at snap whose app_id is one of appIDs (all
// rows when none is given). A table not created yet has no rows.
func ReadRows(ctx context.Context, snap *deltalog.Snapshot, appIDs ...string) ([]Row, error) {
	if snap.Version() < 0 {
		return nil, nil
	}
	want := map[string]bool{}
	for _, a := range appIDs {
		want[a] = true
	}
	var out []Row
	store := snap.Table().Store()
	for _, add := range snap.Files() {
		key, err := url.PathUnescape(add.Path)
		if err != nil {
			return nil, fmt.Errorf("facts file %q: %w", add.Path, err)
		}
		err = readParquet(ctx, store, key, func(rec arrow.RecordBatch) error {
			rows, err := FromRecord(rec)
			if err != nil {
				return err
			}
			for _, r := range rows {
				if len(want) == 0 || want[r.AppID] {
					out = append(out, r)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read facts file %s: %w", key, err)
		}
	}
	return out, nil
}

// readParquet reads a Parquet file of the table and calls fn with each record batch.
func readParquet(ctx context.Context, store storage.Store, key string, fn func(arrow.RecordBatch) error) error {
	it, err := parquetio.ReadFile(ctx, store, key, nil)
	if err != nil {
		return err
	}
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

// ReadEvents reads appID's event rows of the given kinds (snapshot_open, bootstrap, ...)
// at snap. Unlike ReadRows it reads only the files whose statistics may hold such a row
// (Eq on app_id and on event: a file of micro-batch rows only, whose event column is all
// NULL, or another stream's file, is skipped), and keeps no micro-batch row, so its cost
// follows the stream's events, not its batches nor the streams sharing the table.
func ReadEvents(ctx context.Context, snap *deltalog.Snapshot, appID string, kinds ...string) ([]Row, error) {
	if snap.Version() < 0 {
		return nil, nil
	}
	var out []Row
	for _, kind := range kinds {
		it, err := snap.Scan(ctx, deltalog.ScanOptions{Filter: deltalog.And(deltalog.Eq(ColAppID, appID), deltalog.Eq(ColEvent, kind))})
		if err != nil {
			return nil, fmt.Errorf("scan facts for %s rows: %w", kind, err)
		}
		for {
			rec, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				it.Close()
				return nil, fmt.Errorf("scan facts for %s rows: %w", kind, err)
			}
			rows, err := FromRecord(rec)
			rec.Release()
			if err != nil {
				it.Close()
				return nil, err
			}
			out = append(out, rows...)
		}
		it.Close()
	}
	return out, nil
}
