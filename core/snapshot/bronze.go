package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// foundSnapshot is a whole snapshot found in bronze: its LSN and the newest _commit_ts of
// its rows (nil for an empty table's, which has no rows).
type foundSnapshot struct {
	LSN      lsn.LSN
	CommitTS *time.Time
}

// wholeSnapshots lists the whole snapshots in bronze: the distinct
// coalesce(_snapshot, _start_lsn) of rows with _operation = 0 and _chunk NULL whose
// lower(_capture_instance) is one of instances (lower-cased names), each with the largest
// _commit_ts of its rows (docs/reference/original-library.md §9.1), found by a scan of the
// operation-0 rows (files whose statistics exclude _operation = 0 are skipped); plus the
// snapshots of empty tables, which only their commit's txn (EmptyTxnAppID) records. Any
// order; none when bronze does not exist yet.
func wholeSnapshots(ctx context.Context, bronzeT *deltalog.Table, instances []string) ([]foundSnapshot, error) {
	snap, err := bronzeT.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if snap.Version() < 0 {
		return nil, nil
	}
	found := map[lsn.LSN]*foundSnapshot{}
	for _, t := range snap.Txns() {
		if l, ok := emptySnapshotLSN(t.AppID); ok {
			found[l] = &foundSnapshot{LSN: l}
		}
	}
	schema, err := snap.ArrowSchema()
	if err != nil {
		return nil, err
	}
	cols := []string{bronze.ColCaptureInstance, bronze.ColStartLSN, bronze.ColCommitTS}
	for _, opt := range []string{bronze.ColSnapshot, bronze.ColChunk} {
		if len(schema.FieldIndices(opt)) > 0 {
			cols = append(cols, opt)
		}
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: cols, Filter: deltalog.Eq(bronze.ColOperation, int32(0))})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	want := map[string]bool{}
	for _, n := range instances {
		want[strings.ToLower(n)] = true
	}
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		err = collectSnapshots(rec, want, found)
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	out := make([]foundSnapshot, 0, len(found))
	for _, f := range found {
		out = append(out, *f)
	}
	return out, nil
}

func collectSnapshots(rec arrow.RecordBatch, want map[string]bool, found map[lsn.LSN]*foundSnapshot) error {
	col := func(name string) arrow.Array {
		if idx := rec.Schema().FieldIndices(name); len(idx) > 0 {
			return rec.Column(idx[0])
		}
		return nil
	}
	ci, ok1 := col(bronze.ColCaptureInstance).(*array.String)
	start, ok2 := col(bronze.ColStartLSN).(*array.String)
	ts, _ := col(bronze.ColCommitTS).(*array.Timestamp)
	snapCol, _ := col(bronze.ColSnapshot).(*array.String)
	chunk := col(bronze.ColChunk)
	if !ok1 || !ok2 {
		return fmt.Errorf("bronze: metadata columns of unexpected types")
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		if chunk != nil && chunk.IsValid(i) || ci.IsNull(i) || !want[strings.ToLower(ci.Value(i))] {
			continue
		}
		text := start.Value(i)
		if snapCol != nil && snapCol.IsValid(i) {
			text = snapCol.Value(i)
		}
		s, err := lsn.Parse(text)
		if err != nil {
			return fmt.Errorf("bronze: snapshot LSN %q: %w", text, err)
		}
		f := found[s]
		if f == nil {
			f = &foundSnapshot{LSN: s}
			found[s] = f
		}
		if ts != nil && ts.IsValid(i) {
			t := time.UnixMicro(int64(ts.Value(i))).UTC()
			if f.CommitTS == nil || t.After(*f.CommitTS) {
				f.CommitTS = &t
			}
		}
	}
	return nil
}
