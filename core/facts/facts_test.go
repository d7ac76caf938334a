package facts

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

func ts(s string) *time.Time {
	t, err := time.Parse("2006-01-02T15:04:05.999999", s)
	if err != nil {
		panic(err)
	}
	return &t
}

func TestSchemaColumnsInCreationOrder(t *testing.T) {
	want := []string{"app_id", "batch_id", "rows", "min_lsn", "max_lsn", "min_commit_ts", "max_commit_ts",
		"deletes", "inserts", "updates", "started_at", "duration_ms", "source_rtt_ms", "read_seconds", "read_mb",
		"network_wait_ms", "retention_watermark_ts", "retention_headroom_hours", "event", "lost_from_ts", "lost_to_ts",
		"source_max_commit_ts", "capture_lag_seconds", "ingestion_lag_seconds", "end_lsn", "end_commit_ts", "detail",
		"target", "written_at"}
	var got []string
	for _, f := range Schema().Fields() {
		got = append(got, f.Name)
		if ts, ok := f.Type.(*arrow.TimestampType); ok && ts.TimeZone != "" {
			t.Errorf("%s has zone %q, want timestamp_ntz", f.Name, ts.TimeZone)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("columns\n got %v\nwant %v", got, want)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r := Row{AppID: "a", BatchID: Int64(7), Rows: Int64(3), MinLSN: "0x01", MaxLSN: "0x02",
		MinCommitTS: ts("2026-10-01T12:00:00.123"), MaxCommitTS: ts("2026-10-01T12:00:01.000"),
		Deletes: 1, Inserts: 1, Updates: 1, StartedAt: ts("2026-10-01T12:01:00.000"), DurationMs: Int64(40),
		ReadSeconds: Float64(0.5), ReadMB: Float64(1.25), Target: "s3://b/t", WrittenAt: *ts("2026-10-01T12:01:01.000"),
		EndLSN: "0x03", EndCommitTS: ts("2026-10-01T12:00:02.000")}
	r.ApplyHealth(Health{Watermark: ts("2026-09-28T12:00:02.000"), SourceMax: ts("2026-10-01T12:00:12.000"), Clock: *ts("2026-10-01T12:00:13.500")})
	ev := DataSkippedRow("a", 7, "s3://b/t", lsn.MustParse("0x10"), lsn.MustParse("0x20"), ts("2026-09-01T00:00:00.000"), ts("2026-09-02T00:00:00.000"), true, "")
	rec := Record(memory.DefaultAllocator, []Row{r, ev})
	defer rec.Release()
	got, err := FromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[0], r) {
		t.Errorf("row\n got %+v\nwant %+v", got[0], r)
	}
	if !reflect.DeepEqual(got[1], ev) {
		t.Errorf("event\n got %+v\nwant %+v", got[1], ev)
	}
	if *r.RetentionHeadroomHours != 72 || *r.IngestionLagSeconds != 10 || *r.CaptureLagSeconds != 1.5 {
		t.Errorf("derived: headroom %v ingestion %v capture %v", *r.RetentionHeadroomHours, *r.IngestionLagSeconds, *r.CaptureLagSeconds)
	}
}

func TestFormulas(t *testing.T) {
	// docs/reference/original-library.md §6.4: headroom rounds to 2 dp, lags to 3 dp;
	// position falls back to max_commit_ts.
	r := Row{MaxCommitTS: ts("2026-10-01T10:00:00.000")}
	r.ApplyHealth(Health{Watermark: ts("2026-10-01T00:00:00.000"), SourceMax: ts("2026-10-01T10:00:00.1234"), Clock: *ts("2026-10-01T09:59:59.000")})
	if *r.RetentionHeadroomHours != 10 || *r.IngestionLagSeconds != 0.123 || *r.CaptureLagSeconds != -1.123 {
		t.Errorf("got %v %v %v", *r.RetentionHeadroomHours, *r.IngestionLagSeconds, *r.CaptureLagSeconds)
	}
	if HeadroomHours(nil, ts("2026-10-01T00:00:00.000")) != nil || IngestionLagSeconds(nil, nil) != nil {
		t.Error("NULL inputs must give NULL")
	}
	if v := *HeadroomHours(ts("2026-10-01T00:20:00.000"), ts("2026-10-01T00:00:00.000")); v != 0.33 {
		t.Errorf("20 min = %v h, want 0.33", v)
	}
}

func TestBatchStats(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: bronze.ColStartLSN, Type: arrow.BinaryTypes.String},
		{Name: bronze.ColOperation, Type: arrow.PrimitiveTypes.Int32},
		{Name: bronze.ColCommitTS, Type: bronze.CommitTSType},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	lsns := []string{"0x0000000000000000000B", "0x0000000000000000000A", "0x0000000000000000000B", "0x0000000000000000000C", "0x0000000000000000000C"}
	ops := []int32{2, 3, 4, 1, 2}
	for i := range lsns {
		b.Field(0).(*array.StringBuilder).Append(lsns[i])
		b.Field(1).(*array.Int32Builder).Append(ops[i])
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(ts("2026-10-01T12:00:00.000").Add(time.Duration(i) * time.Second).UnixMicro()))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var s BatchStats
	if err := s.Add(rec); err != nil {
		t.Fatal(err)
	}
	if s.Rows != 5 || s.MinLSN != lsns[1] || s.MaxLSN != lsns[3] || s.Deletes != 1 || s.Inserts != 2 || s.Updates != 1 {
		t.Errorf("stats = %+v", s)
	}
	if !s.MinCommitTS.Equal(*ts("2026-10-01T12:00:00.000")) || !s.MaxCommitTS.Equal(*ts("2026-10-01T12:00:04.000")) {
		t.Errorf("times %v %v", s.MinCommitTS, s.MaxCommitTS)
	}
	var md map[string]any
	if err := json.Unmarshal([]byte(s.UserMetadata("app", 3)), &md); err != nil {
		t.Fatal(err)
	}
	if md["rows"] != 5.0 || md["batch_id"] != 3.0 || md["app_id"] != "app" || md["min_commit_ts"] != "2026-10-01T12:00:00.000" || md["updates"] != 1.0 {
		t.Errorf("userMetadata = %v", md)
	}
}

func open(app, s, mode string) Row {
	d, _ := json.Marshal(OpenDetail{Mode: mode, Kind: "bootstrap"})
	return Row{AppID: app, Event: EventSnapshotOpen, MinLSN: s, MaxLSN: s, Detail: string(d)}
}

func TestOpenSnapshots(t *testing.T) {
	S1, S2, S3 := "0x00000000000000000010", "0x00000000000000000020", "0x00000000000000000030"
	rows := []Row{
		open("a", S1, "full"),
		{AppID: "a", Event: EventBootstrap, MaxLSN: S1},
		open("a", S2, "chunked"),
		open("a", S3, "chunked"), // supersedes S2
		open("b", S1, "full"),
		open("c", S1, ""), // missing mode reads as chunked
	}
	got := OpenSnapshots(rows, "a", lsn.Zero)
	if len(got) != 1 || got[0].S.String() != S3 || got[0].Mode != "chunked" {
		t.Fatalf("a: %+v", got)
	}
	if got := OpenSnapshots(rows, "b", lsn.Zero); len(got) != 1 || got[0].Mode != "full" {
		t.Errorf("b: %+v", got)
	}
	if got := OpenSnapshots(rows, "b", lsn.MustParse(S2)); len(got) != 0 {
		t.Errorf("b after cleanup passed S: %+v", got)
	}
	if got := OpenSnapshots(rows, "c", lsn.Zero); len(got) != 1 || got[0].Mode != "chunked" {
		t.Errorf("c: %+v", got)
	}
	rows = append(rows, Row{AppID: "a", Event: EventBootstrap, MaxLSN: S3})
	if got := OpenSnapshots(rows, "a", lsn.Zero); len(got) != 0 {
		t.Errorf("a closed: %+v", got)
	}
}

func TestLastBatch(t *testing.T) {
	rows := []Row{
		{AppID: "a", BatchID: Int64(1)}, {AppID: "a", BatchID: Int64(3)},
		{AppID: "a", BatchID: Int64(4), Event: EventSchemaChange}, {AppID: "b", BatchID: Int64(9)},
	}
	r, ok := LastBatch(rows, "a")
	if !ok || *r.BatchID != 3 {
		t.Errorf("LastBatch = %+v %v", r, ok)
	}
	if _, ok := LastBatch(rows, "z"); ok {
		t.Error("z has no batches")
	}
}
