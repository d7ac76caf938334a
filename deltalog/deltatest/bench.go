package deltatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// BenchmarkCommits measures uncontended appends on one new table: each iteration reads
// the latest snapshot and commits one file with txn("bench", i). open must return handles
// on an empty table with every external request routed through f (as for FaultCommits),
// so f counts them. checkpointInterval is passed as Options.CheckpointInterval (-1: no
// checkpoints, so the count is the commit protocol alone). With chain, each transaction
// begins from the previous one's NextSnapshot instead of a Snapshot read, as a stream
// writer that appends batch after batch does.
//
// Reported: commit-reqs/op, the requests Commit made (amortising the checkpoint every
// interval commits); snapshot-reqs/op, the requests of the Snapshot before it; commits/s.
func BenchmarkCommits(b *testing.B, open func(f *Faults) (storage.Store, logstore.LogStore), checkpointInterval int, chain bool) {
	ctx := context.Background()
	f := &Faults{}
	s, l := open(f)
	tbl := deltalog.Open(s, l, deltalog.Options{CheckpointInterval: checkpointInterval, RetryBaseDelay: time.Millisecond})
	// Version 0 creates the table, outside the measurement.
	if _, err := appendOnce(ctx, tbl, tbl, "bench", 0, "bench-00000000.parquet"); err != nil {
		b.Fatal(err)
	}
	var commitCalls, snapCalls int
	var snap *deltalog.Snapshot
	b.ResetTimer()
	start := time.Now()
	for i := 1; i <= b.N; i++ {
		before := f.Calls()
		if snap == nil || !chain {
			var err error
			if snap, err = tbl.Snapshot(ctx); err != nil {
				b.Fatal(err)
			}
		}
		mid := f.Calls()
		tx := tbl.Begin(snap)
		tx.Add(fakeAdd(fmt.Sprintf("bench-%08d.parquet", i)))
		tx.SetAppTxn("bench", int64(i))
		res, err := tx.Commit(ctx)
		if err != nil || res.Skipped {
			b.Fatalf("commit %d: %+v %v", i, res, err)
		}
		if chain {
			if snap, err = tx.NextSnapshot(ctx); err != nil {
				b.Fatal(err)
			}
		}
		snapCalls += mid - before
		commitCalls += f.Calls() - mid
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(commitCalls)/float64(b.N), "commit-reqs/op")
	b.ReportMetric(float64(snapCalls)/float64(b.N), "snapshot-reqs/op")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
}
