package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
)

// The plans table, <bronze>_snapshot_plans (docs/design.md §4.4; docs/snapshots.md "The
// plans table"): a Delta table next to bronze holding a chunked snapshot's state that
// carries key values, which the facts table never holds (docs/design.md §4.3). Three kinds
// of rows, told apart by event:
//
//	open   one per generation (switch_open: one per chunked switch snapshot, see
//	       PlanEventSwitchOpen): S and its commit time (snapshot_commit_ts, NULL when S is a
//	       capture instance's start LSN − 1, no commit's), the key columns, the plan kind and
//	       the key's extent at the open (lo = MIN for an integer key, hi = MAX), rows = the
//	       row estimate
//	plan   one per planned chunk: chunk, [lo, hi), last, kind, keys, chunk_rows, rows (the
//	       planned count of an integer plan)
//	chunk  one per chunk read: the plan row's keys plus wave, the stamp L, high_lsn (max_lsn
//	       after the read), rows, read time and size, the wave's wall time and rounds, and
//	       [lo, hi) as read (the last chunk's end sought at its wave)
//
// Bounds are JSON lists, one value per key column (snapshot.Range's encoding), NULL when
// open. Every append is txn-keyed in the plans table as in the facts table: open
// txn(<app_id>#snapshots, generation), plan txn(<app_id>#snapplan.<S>, 0), a wave's chunks
// txn(<app_id>#snapchunks.<S>, wave).
const (
	PlanEventOpen  = "open"
	PlanEventPlan  = "plan"
	PlanEventChunk = "chunk"
	// PlanEventSwitchOpen is the open row of a chunked switch snapshot (snapshot_on_switch
	// with snapshot "chunked", docs/stream.md "Schema changes"): an open row as above, of
	// the live generation, which already has its own open; keyed txn(<app_id>#open.<S>, 0)
	// with the generation's app_id, so written once per stamp.
	PlanEventSwitchOpen = "switch_open"
)

// Plan kinds: one integer key cut by row counts per slice, any other key by keyset seeks,
// or the whole table as one chunk (no key to cut on, an empty table at the open).
const (
	PlanKindInt    = "int"
	PlanKindKeyset = "keyset"
	PlanKindWhole  = "whole"
)

// PlanRow is one row of the plans table; nil and "" are NULL.
type PlanRow struct {
	// AppID is the stream's configured app_id in every generation; Generation the
	// snapshot's (0: the bootstrap's; n >= 1: the re-snapshot whose facts rows carry
	// <app_id>.g<n>, docs/stream.md "Generations").
	AppID      string
	Snapshot   string
	Generation int32
	Event      string
	Chunk      *int32
	Lo, Hi     string // JSON list, "" for open
	Last       *bool
	Keys       string // JSON list of key column names
	Kind       string
	ChunkRows  *int64
	Rows       *int64
	Wave       *int64
	Stamp      string
	HighLSN    string
	ReadSecs   *float64
	ReadMB     *float64
	WaveSecs   *float64
	WaveRounds *int32
	PlannedAt  *time.Time
	ReadAt     *time.Time
	// SnapshotTS is S's commit time (open rows only; nil when S is no commit's, or on an
	// open row written before the column existed).
	SnapshotTS *time.Time
}

var (
	tsType      = &arrow.TimestampType{Unit: arrow.Microsecond}
	plansSchema = arrow.NewSchema([]arrow.Field{
		{Name: "app_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "snapshot", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "generation", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "event", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "chunk", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "lo", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "hi", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "last", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "keys", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "chunk_rows", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "rows", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "wave", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "stamp", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "high_lsn", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "read_seconds", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "read_mb", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "wave_seconds", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "wave_rounds", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "planned_at", Type: tsType, Nullable: true},
		{Name: "read_at", Type: tsType, Nullable: true},
		{Name: "snapshot_commit_ts", Type: tsType, Nullable: true},
	}, nil)
)

// PlansSchema is the plans table's Arrow schema (docs/snapshots.md "The plans table").
func PlansSchema() *arrow.Schema { return plansSchema }

// planRecord builds a record of PlansSchema holding rows.
func planRecord(rows []PlanRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, plansSchema)
	defer b.Release()
	str := func(i int, v string) {
		if v == "" {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.StringBuilder).Append(v)
		}
	}
	i32 := func(i int, v *int32) {
		if v == nil {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.Int32Builder).Append(*v)
		}
	}
	i64 := func(i int, v *int64) {
		if v == nil {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.Int64Builder).Append(*v)
		}
	}
	f64 := func(i int, v *float64) {
		if v == nil {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.Float64Builder).Append(*v)
		}
	}
	ts := func(i int, v *time.Time) {
		if v == nil {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.TimestampBuilder).Append(arrow.Timestamp(v.UTC().UnixMicro()))
		}
	}
	for _, r := range rows {
		str(0, r.AppID)
		str(1, r.Snapshot)
		g := r.Generation
		i32(2, &g)
		str(3, r.Event)
		i32(4, r.Chunk)
		str(5, r.Lo)
		str(6, r.Hi)
		if r.Last == nil {
			b.Field(7).AppendNull()
		} else {
			b.Field(7).(*array.BooleanBuilder).Append(*r.Last)
		}
		str(8, r.Keys)
		str(9, r.Kind)
		i64(10, r.ChunkRows)
		i64(11, r.Rows)
		i64(12, r.Wave)
		str(13, r.Stamp)
		str(14, r.HighLSN)
		f64(15, r.ReadSecs)
		f64(16, r.ReadMB)
		f64(17, r.WaveSecs)
		i32(18, r.WaveRounds)
		ts(19, r.PlannedAt)
		ts(20, r.ReadAt)
		ts(21, r.SnapshotTS)
	}
	return b.NewRecordBatch()
}

// planRowsFrom reads the rows of a plans record, columns selected by name.
func planRowsFrom(rec arrow.RecordBatch) ([]PlanRow, error) {
	n := int(rec.NumRows())
	out := make([]PlanRow, n)
	col := func(name string) arrow.Array {
		if idx := rec.Schema().FieldIndices(name); len(idx) > 0 {
			return rec.Column(idx[0])
		}
		return nil
	}
	var err error
	each := func(name string, set func(i int, a arrow.Array)) {
		a := col(name)
		if a == nil || err != nil {
			return
		}
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("plans table column %s: unexpected type %s", name, a.DataType())
			}
		}()
		for i := 0; i < n; i++ {
			if a.IsValid(i) {
				set(i, a)
			}
		}
	}
	s := func(a arrow.Array, i int) string { return a.(*array.String).Value(i) }
	p32 := func(a arrow.Array, i int) *int32 { v := a.(*array.Int32).Value(i); return &v }
	p64 := func(a arrow.Array, i int) *int64 { v := a.(*array.Int64).Value(i); return &v }
	pf := func(a arrow.Array, i int) *float64 { v := a.(*array.Float64).Value(i); return &v }
	pt := func(a arrow.Array, i int) *time.Time {
		v := time.UnixMicro(int64(a.(*array.Timestamp).Value(i))).UTC()
		return &v
	}
	each("app_id", func(i int, a arrow.Array) { out[i].AppID = s(a, i) })
	each("snapshot", func(i int, a arrow.Array) { out[i].Snapshot = s(a, i) })
	each("generation", func(i int, a arrow.Array) { out[i].Generation = *p32(a, i) })
	each("event", func(i int, a arrow.Array) { out[i].Event = s(a, i) })
	each("chunk", func(i int, a arrow.Array) { out[i].Chunk = p32(a, i) })
	each("lo", func(i int, a arrow.Array) { out[i].Lo = s(a, i) })
	each("hi", func(i int, a arrow.Array) { out[i].Hi = s(a, i) })
	each("last", func(i int, a arrow.Array) { v := a.(*array.Boolean).Value(i); out[i].Last = &v })
	each("keys", func(i int, a arrow.Array) { out[i].Keys = s(a, i) })
	each("kind", func(i int, a arrow.Array) { out[i].Kind = s(a, i) })
	each("chunk_rows", func(i int, a arrow.Array) { out[i].ChunkRows = p64(a, i) })
	each("rows", func(i int, a arrow.Array) { out[i].Rows = p64(a, i) })
	each("wave", func(i int, a arrow.Array) { out[i].Wave = p64(a, i) })
	each("stamp", func(i int, a arrow.Array) { out[i].Stamp = s(a, i) })
	each("high_lsn", func(i int, a arrow.Array) { out[i].HighLSN = s(a, i) })
	each("read_seconds", func(i int, a arrow.Array) { out[i].ReadSecs = pf(a, i) })
	each("read_mb", func(i int, a arrow.Array) { out[i].ReadMB = pf(a, i) })
	each("wave_seconds", func(i int, a arrow.Array) { out[i].WaveSecs = pf(a, i) })
	each("wave_rounds", func(i int, a arrow.Array) { out[i].WaveRounds = p32(a, i) })
	each("planned_at", func(i int, a arrow.Array) { out[i].PlannedAt = pt(a, i) })
	each("read_at", func(i int, a arrow.Array) { out[i].ReadAt = pt(a, i) })
	each("snapshot_commit_ts", func(i int, a arrow.Array) { out[i].SnapshotTS = pt(a, i) })
	return out, err
}

// appendPlanRows commits rows to the plans table t keyed txn(txnAppID, version), exactly
// once (ingest): a replay writes nothing and reports Replayed.
func appendPlanRows(ctx context.Context, d Deps, txnAppID string, version int64, rows []PlanRow) (ingest.Result, error) {
	snap, err := d.Plans.Snapshot(ctx)
	if err != nil {
		return ingest.Result{}, fmt.Errorf("read the plans table: %w", err)
	}
	if res, ok := ingest.Replayed(snap, txnAppID, version); ok {
		return res, nil
	}
	rec := planRecord(rows)
	defer rec.Release()
	w := ingest.NewWriter(d.Plans.Store(), plansSchema, d.Options.Writer)
	if err := w.Write(ctx, rec); err != nil {
		w.Abort(ctx)
		return ingest.Result{}, fmt.Errorf("write plans file: %w", err)
	}
	files, err := w.Close(ctx)
	if err != nil {
		return ingest.Result{}, fmt.Errorf("write plans file: %w", err)
	}
	res, err := ingest.Append(ctx, d.Plans, snap, ingest.Commit{AppID: txnAppID, Version: version, Schema: plansSchema, Files: files,
		Operation: "WRITE", OperationParameters: map[string]string{"mode": "Append", "partitionBy": "[]"}})
	if err != nil {
		return res, fmt.Errorf("commit the plans table: %w", err)
	}
	return res, nil
}

// PlanRows reads appID's rows of one event (PlanEventOpen, PlanEventPlan, PlanEventChunk;
// "" for all) from the plans table t, ordered by event and chunk. A table not created yet
// has none.
func PlanRows(ctx context.Context, t *deltalog.Table, appID, event string) ([]PlanRow, error) {
	var kinds []string
	if event != "" {
		kinds = []string{event}
	}
	return readPlans(ctx, t, appID, "", kinds...)
}

// readPlanRows reads appID's rows of the plans table for snapshot s ("" for every
// snapshot), events among kinds (none: all).
func readPlanRows(ctx context.Context, d Deps, appID, s string, kinds ...string) ([]PlanRow, error) {
	return readPlans(ctx, d.Plans, appID, s, kinds...)
}

func readPlans(ctx context.Context, t *deltalog.Table, appID, s string, kinds ...string) ([]PlanRow, error) {
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the plans table: %w", err)
	}
	if snap.Version() < 0 {
		return nil, nil
	}
	filter := deltalog.Eq("app_id", appID)
	if s != "" {
		filter = deltalog.And(filter, deltalog.Eq("snapshot", s))
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("scan the plans table: %w", err)
	}
	defer it.Close()
	var out []PlanRow
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("scan the plans table: %w", err)
		}
		rows, err := planRowsFrom(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if len(kinds) == 0 || slices.Contains(kinds, r.Event) {
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b PlanRow) int {
		if c := strings.Compare(a.Event, b.Event); c != 0 {
			return c
		}
		return int(deref32(a.Chunk)) - int(deref32(b.Chunk))
	})
	return out, nil
}

func deref32(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}
