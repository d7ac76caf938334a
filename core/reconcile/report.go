package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
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
// commit keyed txn(reconcile#<appID>, n), n one more than the last run's, and returns n;
// runKey ("" none) goes into the commit's userMetadata ("run_key"), where ReportedRun
// finds it. A run killed before its commit leaves only orphan files (VACUUM removes them);
// it never leaves half a report.
func WriteReport(ctx context.Context, t *deltalog.Table, appID, runKey string, at time.Time, res Result) (int64, error) {
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("reconcile: read the report table: %w", err)
	}
	if runKey != "" {
		if run, _, ok := reportedIn(snap, appID, runKey); ok {
			return run, nil
		}
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
	m := map[string]any{"kind": "reconcile", "run_id": runID, "counts": res.Counts}
	if runKey != "" {
		m["run_key"] = runKey
	}
	meta, _ := json.Marshal(m)
	_, err = ingest.Append(ctx, t, snap, ingest.Commit{AppID: reportTxn + appID, Version: run, Schema: ReportSchema,
		Files: files, UserMetadata: string(meta)})
	if err != nil {
		return 0, fmt.Errorf("reconcile: commit the report: %w", err)
	}
	return run, nil
}

// reportLookback is how many of the report table's newest commits ReportedRun reads for a
// run key: a retried invocation comes minutes after the one it retries.
const reportLookback = 20

// ReportedRun finds the report of runKey among the report table's newest commits: its run
// number and counts. ok is false when none holds it (or the table does not exist yet).
func ReportedRun(ctx context.Context, t *deltalog.Table, appID, runKey string) (run int64, counts map[Kind]int, ok bool, err error) {
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return 0, nil, false, fmt.Errorf("reconcile: read the report table: %w", err)
	}
	run, counts, ok = reportedIn(snap, appID, runKey)
	return run, counts, ok, nil
}

func reportedIn(snap *deltalog.Snapshot, appID, runKey string) (int64, map[Kind]int, bool) {
	for v := snap.Version(); v >= 0 && v > snap.Version()-reportLookback; v-- {
		ci, ok := snap.CommitInfo(v)
		if !ok {
			break // before the snapshot's checkpoint
		}
		var m struct {
			RunID  string       `json:"run_id"`
			RunKey string       `json:"run_key"`
			Counts map[Kind]int `json:"counts"`
		}
		if ci.UserMetadata == "" || json.Unmarshal([]byte(ci.UserMetadata), &m) != nil || m.RunKey != runKey {
			continue
		}
		prefix := appID + "#"
		if n, err := strconv.ParseInt(strings.TrimPrefix(m.RunID, prefix), 10, 64); err == nil && strings.HasPrefix(m.RunID, prefix) {
			return n, m.Counts, true
		}
	}
	return 0, nil, false
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
