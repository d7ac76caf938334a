package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// ReportSchema is the report table's schema (docs/reconcile.md § Report): one row per
// bucket and per differing key of a run. Keys are reported (as a JSON array of their
// values' text); no other column value ever is, only the names of the columns that differ.
var ReportSchema = arrow.NewSchema([]arrow.Field{
	{Name: "run_id", Type: arrow.BinaryTypes.String},
	{Name: "run_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "app_id", Type: arrow.BinaryTypes.String},
	{Name: "kind", Type: arrow.BinaryTypes.String},
	{Name: "scope", Type: arrow.BinaryTypes.String},
	{Name: "key_lo", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "key_hi", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "key", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "source_rows", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "target_rows", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "columns", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "target_lsn", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "max_lsn", Type: arrow.BinaryTypes.String},
	{Name: "applied_lsn", Type: arrow.BinaryTypes.String},
	{Name: "chunk", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "detail", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// reportTxn is the txn app id of the report commits: txn(reconcile#<app_id>, run).
const reportTxn = "reconcile#"

// WriteReport appends res's rows to the report table (created on the first run) in one
// commit keyed txn(reconcile#<appID>, n), n one more than the last run's, and returns n.
// A run killed before its commit leaves only orphan files (VACUUM removes them); it never
// leaves half a report.
func WriteReport(ctx context.Context, t *deltalog.Table, appID string, at time.Time, res Result) (int64, error) {
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("reconcile: read the report table: %w", err)
	}
	run := int64(1)
	if v, ok := snap.TxnVersion(reportTxn + appID); ok {
		run = v + 1
	}
	runID := fmt.Sprintf("%s#%d", appID, run)
	rec := reportRecord(runID, appID, at, res)
	defer rec.Release()
	w := ingest.NewWriter(t.Store(), ReportSchema, parquetio.WriterOptions{})
	if err := w.Write(ctx, rec); err != nil {
		w.Abort(ctx)
		return 0, fmt.Errorf("reconcile: write the report: %w", err)
	}
	files, err := w.Close(ctx)
	if err != nil {
		return 0, fmt.Errorf("reconcile: write the report: %w", err)
	}
	meta, _ := json.Marshal(map[string]any{"kind": "reconcile", "run_id": runID, "counts": res.Counts})
	_, err = ingest.Append(ctx, t, snap, ingest.Commit{AppID: reportTxn + appID, Version: run, Schema: ReportSchema,
		Files: files, UserMetadata: string(meta)})
	if err != nil {
		return 0, fmt.Errorf("reconcile: commit the report: %w", err)
	}
	return run, nil
}

func reportRecord(runID, appID string, at time.Time, res Result) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, ReportSchema)
	defer b.Release()
	str := func(i int, v string) {
		sb := b.Field(i).(*array.StringBuilder)
		if v == "" && ReportSchema.Field(i).Nullable {
			sb.AppendNull()
		} else {
			sb.Append(v)
		}
	}
	for _, r := range res.Rows {
		str(0, runID)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UTC().UnixMicro()))
		str(2, appID)
		str(3, string(r.Kind))
		str(4, r.Scope)
		str(5, r.Lo)
		str(6, r.Hi)
		key := ""
		if r.Key != nil {
			k, _ := json.Marshal(r.Key)
			key = string(k)
		}
		str(7, key)
		for i, n := range []int64{r.SourceRows, r.TargetRows} {
			if r.Scope != "key" {
				b.Field(8 + i).(*array.Int64Builder).Append(n)
			} else {
				b.Field(8 + i).AppendNull()
			}
		}
		str(10, strings.Join(r.Columns, ","))
		str(11, r.TargetLSN)
		str(12, res.MaxLSN.String())
		str(13, res.AppliedLSN.String())
		if r.Scope == "chunk" {
			b.Field(14).(*array.Int32Builder).Append(r.Chunk)
		} else {
			b.Field(14).AppendNull()
		}
		str(15, r.Detail)
	}
	return b.NewRecordBatch()
}
