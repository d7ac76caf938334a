package facts

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// Appends are keyed by txn: a replay writes nothing. Many streams share one table and
// append at once (blind appends retry on lost races).
func TestAppendIdempotentAndShared(t *testing.T) {
	ctx := context.Background()
	lake := testlake.New(t, testlake.Local)
	url := lake.URL("facts")
	var wg sync.WaitGroup
	for a := 0; a < 4; a++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tbl := lake.Table(url)
			app := fmt.Sprint("app", a)
			for b := int64(0); b < 3; b++ {
				for try := 0; try < 2; try++ { // the second is a replay
					res, err := Append(ctx, tbl, TxnFacts(app), b, []Row{{AppID: app, BatchID: Int64(b), Rows: Int64(b), Target: "t"}}, parquetio.WriterOptions{})
					if err != nil {
						t.Errorf("%s batch %d: %v", app, b, err)
						return
					}
					if res.Replayed != (try == 1) {
						t.Errorf("%s batch %d try %d: replayed=%v", app, b, try, res.Replayed)
					}
				}
			}
		}()
	}
	wg.Wait()
	snap, err := lake.Table(url).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := ReadRows(ctx, snap)
	if err != nil || len(all) != 12 {
		t.Fatalf("%d rows, %v", len(all), err)
	}
	rows, _ := ReadRows(ctx, snap, "app2")
	last, ok := LastBatch(rows, "app2")
	if len(rows) != 3 || !ok || *last.BatchID != 2 {
		t.Errorf("app2 rows %d, last %+v", len(rows), last)
	}
}
