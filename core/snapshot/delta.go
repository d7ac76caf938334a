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
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// DeltaBronze is Bronze on a deltalog table.
type DeltaBronze struct {
	Table  *deltalog.Table
	Writer parquetio.WriterOptions
}

var _ Bronze = (*DeltaBronze)(nil)

// Schema implements Bronze.
func (b *DeltaBronze) Schema(ctx context.Context) (*arrow.Schema, error) {
	snap, err := b.Table.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if snap.Version() < 0 {
		return nil, nil
	}
	return snap.ArrowSchema()
}

// WholeSnapshots implements Bronze with a scan of the operation-0 rows (files whose
// statistics exclude _operation = 0 are skipped), plus the snapshots of empty tables,
// which only their commit's txn (EmptyTxnAppID) records.
func (b *DeltaBronze) WholeSnapshots(ctx context.Context, instances []string) ([]FoundSnapshot, error) {
	snap, err := b.Table.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if snap.Version() < 0 {
		return nil, nil
	}
	found := map[lsn.LSN]*FoundSnapshot{}
	for _, t := range snap.Txns() {
		if l, ok := emptySnapshotLSN(t.AppID); ok {
			found[l] = &FoundSnapshot{LSN: l}
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
	out := make([]FoundSnapshot, 0, len(found))
	for _, f := range found {
		out = append(out, *f)
	}
	return out, nil
}

func collectSnapshots(rec arrow.RecordBatch, want map[string]bool, found map[lsn.LSN]*FoundSnapshot) error {
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
			f = &FoundSnapshot{LSN: s}
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

// NewFileWriter implements Bronze.
func (b *DeltaBronze) NewFileWriter(schema *arrow.Schema) FileWriter {
	return &parquetWriter{w: parquetio.NewWriter(b.Table.Store(), schema, b.Writer)}
}

// AppendOnce implements Bronze.
func (b *DeltaBronze) AppendOnce(ctx context.Context, a Append) (int64, bool, error) {
	snap, err := b.Table.Snapshot(ctx)
	if err != nil {
		return 0, false, err
	}
	if v, ok := snap.TxnVersion(a.AppID); ok && v >= a.Version {
		return snap.Version(), true, nil
	}
	tx := b.Table.Begin(snap)
	if err := tx.SetSchema(a.Schema); err != nil {
		return 0, false, err
	}
	for _, f := range a.Files {
		tx.Add(deltalog.AddFromParquet(parquetio.File{Path: f.Path, Size: f.Size, ModTime: f.ModTime, NumRecords: f.NumRecords, Stats: f.Stats}))
	}
	tx.SetAppTxn(a.AppID, a.Version)
	tx.SetUserMetadata(a.UserMetadata)
	tx.SetOperation(a.Operation, a.OperationParameters)
	res, err := tx.Commit(ctx)
	if err != nil {
		return 0, false, err
	}
	return res.Version, res.Skipped, nil
}

type parquetWriter struct{ w *parquetio.Writer }

func (p *parquetWriter) Write(ctx context.Context, rec arrow.RecordBatch) error {
	return p.w.Write(ctx, rec)
}

func (p *parquetWriter) Close(ctx context.Context) ([]DataFile, error) {
	files, err := p.w.Close(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]DataFile, len(files))
	for i, f := range files {
		out[i] = DataFile{Path: f.Path, Size: f.Size, ModTime: f.ModTime, NumRecords: f.NumRecords, Stats: f.Stats}
	}
	return out, nil
}

func (p *parquetWriter) Abort(ctx context.Context) { _ = p.w.Abort(ctx) }

// FactsTable is Facts on the facts Delta table (core/facts).
type FactsTable struct {
	Table  *deltalog.Table
	Writer parquetio.WriterOptions
	// Now stamps written_at; time.Now when nil.
	Now func() time.Time
}

var _ Facts = (*FactsTable)(nil)

// OpenSnapshots implements Facts (facts.OpenSnapshots over appID's rows).
func (f *FactsTable) OpenSnapshots(ctx context.Context, appID string) ([]OpenSnapshot, error) {
	snap, err := f.Table.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := facts.ReadEvents(ctx, snap, appID, facts.EventSnapshotOpen, facts.EventBootstrap, facts.EventResnapshot)
	if err != nil {
		return nil, err
	}
	var out []OpenSnapshot
	for _, o := range facts.OpenSnapshots(rows, appID, lsn.Zero) {
		out = append(out, OpenSnapshot{LSN: o.S.String(), Mode: o.Mode, Generation: o.Detail.Generation})
	}
	return out, nil
}

// SnapshotOpened implements Facts. A full snapshot's open row has no key of its own in
// the original (one per run); here it is keyed txn(<app_id>#open.<L>, 0), which is still
// one per run (each run stamps its own L) and keeps a retried Open from writing two.
func (f *FactsTable) SnapshotOpened(ctx context.Context, ev FactsEvent) error {
	r := f.row(ev, facts.EventSnapshotOpen)
	r.Rows = facts.Int64(0) // §9.1: rows is always filled, 0 on events other than snapshots and chunks
	_, err := facts.Append(ctx, f.Table, ev.AppID+"#open."+ev.LSN, 0, []facts.Row{r}, f.Writer)
	return err
}

// Bootstrapped implements Facts: txn(<app_id>#events, 0), written once.
func (f *FactsTable) Bootstrapped(ctx context.Context, ev FactsEvent) error {
	r := f.row(ev, facts.EventBootstrap)
	_, err := facts.Append(ctx, f.Table, facts.TxnEvents(ev.AppID), 0, []facts.Row{r}, f.Writer)
	return err
}

func (f *FactsTable) row(ev FactsEvent, kind string) facts.Row {
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	return facts.Row{
		AppID: ev.AppID, Rows: ev.Rows, Event: kind, Target: ev.Target,
		MinLSN: ev.LSN, MaxLSN: ev.LSN, EndLSN: ev.LSN,
		MinCommitTS: ev.CommitTS, MaxCommitTS: ev.CommitTS, EndCommitTS: ev.CommitTS,
		StartedAt: ev.StartedAt, DurationMs: ev.DurationMs, Detail: ev.Detail,
		WrittenAt: now().UTC(),
	}
}
