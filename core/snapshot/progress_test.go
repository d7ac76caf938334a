package snapshot_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
)

// Progress is told of every range as it is read and when it is staged: rows and bytes only
// grow within a range, each range ends once with its totals, and the totals add up to the
// table; ReadAll adds the plan's row estimate (issue 12 item 12: the CLI prints rows, MB,
// MB/s and an ETA from it).
func TestProgressReportsEveryRange(t *testing.T) {
	e := newEnv(t, keyCases[0], 300)
	e.spec.Options.NumPartitions = 3
	var mu sync.Mutex
	last := map[int]snapshot.ReadProgress{}
	done := map[int]snapshot.ReadProgress{}
	e.opts.Progress = func(p snapshot.ReadProgress) {
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := last[p.Range]; ok && (p.Rows < prev.Rows || p.Bytes < prev.Bytes) {
			t.Errorf("range %d went back: %+v after %+v", p.Range, p, prev)
		}
		if _, ok := done[p.Range]; ok {
			t.Errorf("range %d reported after it was done: %+v", p.Range, p)
		}
		last[p.Range] = p
		if p.Done {
			done[p.Range] = p
		}
	}
	if _, err := snapshot.Run(context.Background(), e.deps()); err != nil {
		t.Fatal(err)
	}
	var rows int64
	for i := range 3 {
		p, ok := done[i]
		if !ok || p.Ranges != 3 || p.Bytes <= 0 || p.EstimatedRows != 300 {
			t.Errorf("range %d: done %v, %+v; want 3 ranges, bytes, the estimate 300", i, ok, p)
		}
		rows += p.Rows
	}
	if len(done) != 3 || rows != 300 {
		t.Errorf("%d ranges done with %d rows, want 3 with 300", len(done), rows)
	}
}
