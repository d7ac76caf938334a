package facts

import (
	"context"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// parquetReads counts the reads of Parquet data files among a fault plan's calls.
func parquetReads(f *deltatest.Faults) int {
	n := 0
	for _, op := range f.Ops() {
		// Data files only (checkpoints are log files): a small file is one GET, so the
		// count is of files read.
		if strings.HasPrefix(op, "store.GetRange ") && strings.HasSuffix(op, ".parquet") && !strings.Contains(op, "_delta_log/") {
			n++
		}
	}
	return n
}

// ReadEvents reads only the files that may hold the stream's event rows: the snapshot
// look-ups (mode lock, bootstrap start) must not grow with the micro-batches of every
// stream sharing the facts table (invariant 8).
func TestReadEventsSkipsBatchFiles(t *testing.T) {
	ctx := context.Background()
	lake := testlake.New(t, testlake.Local)
	tbl := lake.Table(lake.URL("facts"))
	const S = "0x00000000000000000010"
	for b := int64(0); b < 12; b++ {
		for _, app := range []string{"a", "b"} {
			if _, err := Append(ctx, tbl, TxnFacts(app), b, []Row{{AppID: app, BatchID: Int64(b), Rows: Int64(1)}}, parquetio.WriterOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, app := range []string{"a", "b"} {
		ev := Row{AppID: app, Event: EventBootstrap, Rows: Int64(5), MinLSN: S, MaxLSN: S, EndLSN: S}
		if _, err := Append(ctx, tbl, TxnEvents(app), 0, []Row{ev}, parquetio.WriterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	count := &deltatest.Faults{}
	lake.Faults = count
	snap, err := lake.Table(lake.URL("facts")).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ReadEvents(ctx, snap, "a", EventSnapshotOpen, EventBootstrap, EventResnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].AppID != "a" || rows[0].Event != EventBootstrap || rows[0].MaxLSN != S {
		t.Fatalf("events %+v", rows)
	}
	reads := parquetReads(count)
	all, err := ReadRows(ctx, snap, "a")
	if err != nil || len(all) != 13 {
		t.Fatalf("ReadRows: %d rows, %v", len(all), err)
	}
	if rows := parquetReads(count) - reads; reads != 1 || rows != 13 {
		t.Errorf("ReadEvents read %d data files, ReadRows %d: the 12 batch files of a must be skipped (want 1 and 13)", reads, rows)
	}
}
