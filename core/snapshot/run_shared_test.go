package snapshot_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// A Run commits on the state of bronze and the facts table its earlier steps read or
// committed, without reading them again. When another process commits the same snapshot
// and its bootstrap row in between (a retried machine, a second Run), the Run's commits
// lose the race at the versions it took and are found to be the same txns: the snapshot is
// in bronze once, the bootstrap row in the facts table once, and the Run returns the
// snapshot. On the emulators the lost race is the DynamoDB log store's conditional PutItem.
func TestRunCommitsOnStaleStateExactlyOnce(t *testing.T) {
	for _, backend := range testlake.Backends {
		t.Run(string(backend), func(t *testing.T) {
			e := newEnvOn(t, backend, keyCases[0], 100)
			e.commit(101)
			want := e.stamp()
			var mu sync.Mutex
			done := 0
			var otherErr error
			e.opts.Progress = func(p snapshot.ReadProgress) {
				if !p.Done {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if done++; done == p.Ranges {
					// Every range staged: another process commits the snapshot first.
					_, otherErr = snapshot.Commit(context.Background(), e.deps(), want)
				}
			}
			off, err := e.run()
			if err != nil || otherErr != nil {
				t.Fatalf("run: %v; the other process's commit: %v", err, otherErr)
			}
			if off != want {
				t.Fatalf("offset %v, want %v", off, want)
			}
			if v := e.version(); v != 0 {
				t.Fatalf("bronze version %d, want 0: the snapshot committed once", v)
			}
			if rows := snapshotRows(t, e); len(rows) != 1 || rows[want.LSN.String()] != 101 {
				t.Fatalf("snapshot rows by LSN %v, want 101 at %s", rows, want.LSN)
			}
			fr := e.factsRows()
			if count(fr, facts.EventSnapshotOpen) != 1 || count(fr, facts.EventBootstrap) != 1 {
				t.Fatalf("facts rows %+v, want one snapshot_open and one bootstrap", fr)
			}
		})
	}
}
