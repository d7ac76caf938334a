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
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// BronzeSnapshots are the snapshots of one source table that bronze holds.
type BronzeSnapshots struct {
	// Whole are the whole snapshots (full snapshots and seeds: operation-0 rows without a
	// _chunk, or an empty table's snapshot commit), each with the newest _commit_ts of its
	// rows (nil when it has none), in no particular order.
	Whole []WholeSnapshot
	// Chunked are the S of the chunked snapshots whose waves bronze holds (operation-0
	// rows with a _chunk), in no particular order.
	Chunked []lsn.LSN
}

// WholeSnapshot is one whole snapshot in bronze: its LSN and the newest _commit_ts of its
// rows (nil for an empty table's, which has no rows).
type WholeSnapshot struct {
	LSN      lsn.LSN
	CommitTS *time.Time
}

// InBronze lists the snapshots bronze holds of the table of captureInstance, under any of
// the table's capture instances (names ignoring case), as Find looks for them; a seed
// checks them before it appends (docs/seed.md).
func InBronze(ctx context.Context, src source.Source, bronzeT *deltalog.Table, captureInstance string) (BronzeSnapshots, error) {
	_, names, err := instances(ctx, src, captureInstance)
	if err != nil {
		return BronzeSnapshots{}, err
	}
	whole, chunked, err := bronzeSnapshots(ctx, bronzeT, names)
	if err != nil {
		return BronzeSnapshots{}, fmt.Errorf("look for snapshots in bronze: %w", err)
	}
	return BronzeSnapshots{Whole: whole, Chunked: chunked}, nil
}

// wholeSnapshots lists the whole snapshots in bronze: the distinct
// coalesce(_snapshot, _start_lsn) of rows with _operation = 0 and _chunk NULL whose
// lower(_capture_instance) is one of instances (lower-cased names), each with the largest
// _commit_ts of its rows (docs/reference/original-library.md §9.1), found by a scan of the
// operation-0 rows (files whose statistics exclude _operation = 0 are skipped); plus the
// snapshots of empty tables, which only their commit's txn (EmptyTxnAppID) records. Any
// order; none when bronze does not exist yet.
func wholeSnapshots(ctx context.Context, bronzeT *deltalog.Table, instances []string) ([]WholeSnapshot, error) {
	whole, _, err := bronzeSnapshots(ctx, bronzeT, instances)
	return whole, err
}

// bronzeSnapshots is wholeSnapshots, plus the S of every chunked snapshot (rows with a
// _chunk) under the instances.
func bronzeSnapshots(ctx context.Context, bronzeT *deltalog.Table, instances []string) ([]WholeSnapshot, []lsn.LSN, error) {
	snap, err := bronzeT.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	if snap.Version() < 0 {
		return nil, nil, nil
	}
	found := map[lsn.LSN]*WholeSnapshot{}
	for _, t := range snap.Txns() {
		if l, ok := emptySnapshotLSN(t.AppID); ok {
			found[l] = &WholeSnapshot{LSN: l}
		}
	}
	schema, err := snap.ArrowSchema()
	if err != nil {
		return nil, nil, err
	}
	cols := []string{bronze.ColCaptureInstance, bronze.ColStartLSN, bronze.ColCommitTS}
	for _, opt := range []string{bronze.ColSnapshot, bronze.ColChunk} {
		if len(schema.FieldIndices(opt)) > 0 {
			cols = append(cols, opt)
		}
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: cols, Filter: deltalog.Eq(bronze.ColOperation, int32(0))})
	if err != nil {
		return nil, nil, err
	}
	defer it.Close()
	want := map[string]bool{}
	chunked := map[lsn.LSN]bool{}
	for _, n := range instances {
		want[strings.ToLower(n)] = true
	}
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		err = collectSnapshots(rec, want, found, chunked)
		rec.Release()
		if err != nil {
			return nil, nil, err
		}
	}
	out := make([]WholeSnapshot, 0, len(found))
	for _, f := range found {
		out = append(out, *f)
	}
	var chunks []lsn.LSN
	for s := range chunked {
		chunks = append(chunks, s)
	}
	return out, chunks, nil
}

func collectSnapshots(rec arrow.RecordBatch, want map[string]bool, found map[lsn.LSN]*WholeSnapshot, chunked map[lsn.LSN]bool) error {
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
		if ci.IsNull(i) || !want[strings.ToLower(ci.Value(i))] {
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
		if chunk != nil && chunk.IsValid(i) {
			chunked[s] = true
			continue
		}
		f := found[s]
		if f == nil {
			f = &WholeSnapshot{LSN: s}
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
