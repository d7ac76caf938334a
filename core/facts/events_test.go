package facts

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// countingStore counts the opens of Parquet data files.
type countingStore struct {
	storage.Store
	parquet atomic.Int64
}

func (c *countingStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if strings.HasSuffix(key, ".parquet") {
		c.parquet.Add(1)
	}
	return c.Store.GetRange(ctx, key, off, n)
}

// ReadEvents reads only the files that may hold the stream's event rows: the snapshot
// look-ups (mode lock, bootstrap start) must not grow with the micro-batches of every
// stream sharing the facts table (invariant 8).
func TestReadEventsSkipsBatchFiles(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "facts")
	st, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := localfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: st}
	tbl := deltalog.Open(cs, ls, deltalog.Options{RetryBaseDelay: 1})
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
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs.parquet.Store(0)
	rows, err := ReadEvents(ctx, snap, "a", EventSnapshotOpen, EventBootstrap, EventResnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].AppID != "a" || rows[0].Event != EventBootstrap || rows[0].MaxLSN != S {
		t.Fatalf("events %+v", rows)
	}
	reads := cs.parquet.Load()
	cs.parquet.Store(0)
	all, err := ReadRows(ctx, snap, "a")
	if err != nil || len(all) != 13 {
		t.Fatalf("ReadRows: %d rows, %v", len(all), err)
	}
	if reads == 0 || reads*10 > cs.parquet.Load() {
		t.Errorf("ReadEvents made %d Parquet reads, ReadRows %d: the 24 batch files must be skipped", reads, cs.parquet.Load())
	}
}
