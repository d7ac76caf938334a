package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// Was a hole (main 5b73a5b, closed by the log stores' identity of the newest commit they
// know: docs/decisions/0016-own-write-identity.md § Tables started over): a
// warm process's kept table state outlived its table. Process A streams 11 batches with
// FactsEvery 5 (the facts table at version 2 with txn(<app_id>#facts) 10); the
// checkpoint, bronze and the facts table are deleted (with their DynamoDB entries) and a
// new process B streams them from scratch with FactsEvery 1, leaving the facts table
// with fewer versions than A knew (2 batches), as many (3) or more (5), and its txn at
// B's last batch. A's next invocation resumes cold (its offsets file is gone, decision
// 0017) and checks the facts table: with as many versions, A's kept snapshot looked
// current and showed A's old txn 10, and A refused the checkpoint
// (*CheckpointRewoundError) where a new process goes on. Now A reads the new table as a
// new process does, and streams the new change once.
func TestWarmHoleTableRecreated(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut, testlake.AWS} {
		for _, b := range []struct {
			name    string
			batches int
		}{{"fewer versions", 2}, {"as many versions", 3}, {"more versions", 5}} {
			t.Run(fmt.Sprintf("%s/%s", backend, b.name), func(t *testing.T) {
				e := newEnvOn(t, backend, cdcsim.Config{Seed: 91})
				a := e.deps()
				for i := 1; i <= 11; i++ { // A: batches 0..10
					e.exec(insert(i, i))
					if res, err := e.runOn(a, Options{FactsEvery: 5}); err != nil || res.Rows != 1 {
						t.Fatalf("A %d: %+v %v", i, res, err)
					}
				}
				e.startOverThenWarm(t, a, b.batches)
			})
		}
	}
}

// startOverThenWarm deletes the checkpoint, bronze and the facts table (with their
// DynamoDB entries) and has a new process B stream batches batches from scratch with
// FactsEvery 1 (the facts table then at version batches-1); then the warm process a,
// which streamed the old tables, runs on one new change. It must read the new tables as
// a new process does: no *CheckpointRewoundError, the one change streamed, and bronze
// converged with the source.
func (e *env) startOverThenWarm(t *testing.T, a Deps, batches int) {
	t.Helper()
	e.wipe(e.spec.Checkpoint)
	for _, url := range []string{e.spec.Bronze, e.spec.FactsTable} {
		e.wipe(url)
		e.lake.DeleteLogEntries(url)
	}
	for i := 1; i <= batches; i++ { // B: batch 0 holds what A streamed
		if i > 1 {
			e.exec(insert(100+i, i))
		}
		if res, err := e.run(Options{FactsEvery: 1}); err != nil || res.Batches != 1 {
			t.Fatalf("B %d: %+v %v", i, res, err)
		}
	}
	fs, err := e.lake.RawTable(e.spec.FactsTable).Snapshot(context.Background())
	if err != nil || fs.Version() != int64(batches-1) {
		t.Fatalf("precondition: the new facts table: %v %v, want version %d", fs, err, batches-1)
	}
	e.exec(insert(200, 200))
	res, err := e.runOn(a, Options{FactsEvery: 1})
	var rw *CheckpointRewoundError
	if errors.As(err, &rw) {
		t.Fatalf("warm A on the tables started over: %v; a new process goes on", err)
	}
	if err != nil || res.Rows != 1 {
		t.Fatalf("warm A on the tables started over: %+v %v; want the one new change", res, err)
	}
	e.assertConverged()
}

// The tables started over by a stream on another checkpoint, which ran further (13
// batches, FactsEvery 6: the facts table at version 2, as A knew it, with txn 12), while
// A's checkpoint stays: a new process on A's checkpoint refuses it (the tables hold
// batches at and above its next one), and so does the warm A, having read the new tables,
// not its kept state of the old ones. On main 5b73a5b the warm A refused too, but on
// bronze's batch 12: it took its kept facts snapshot (version 2, txn 10) for the new
// facts table.
func TestWarmTableRecreatedAheadRefused(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut, testlake.AWS} {
		t.Run(string(backend), func(t *testing.T) {
			e := newEnvOn(t, backend, cdcsim.Config{Seed: 92})
			a := e.deps()
			for i := 1; i <= 11; i++ { // A: batches 0..10
				e.exec(insert(i, i))
				if res, err := e.runOn(a, Options{FactsEvery: 5}); err != nil || res.Rows != 1 {
					t.Fatalf("A %d: %+v %v", i, res, err)
				}
			}
			for _, url := range []string{e.spec.Bronze, e.spec.FactsTable} {
				e.wipe(url)
				e.lake.DeleteLogEntries(url)
			}
			bs := *e.spec
			bs.Checkpoint = e.lake.URL("checkpoint-b")
			for i := 1; i <= 13; i++ { // B: batches 0..12 on its own checkpoint
				e.exec(insert(100+i, i))
				d := e.deps()
				d.Checkpoint = checkpoint.New(e.lake.Store(bs.Checkpoint), bs.AppID)
				opts := Options{FactsEvery: 6, Now: e.db.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
				if res, err := Run(context.Background(), &bs, d, opts); err != nil || res.Batches != 1 {
					t.Fatalf("B %d: %+v %v", i, res, err)
				}
			}
			fs, err := e.lake.RawTable(e.spec.FactsTable).Snapshot(context.Background())
			if v, _ := fs.TxnVersion(e.spec.AppID + "#facts"); err != nil || fs.Version() != 2 || v != 12 {
				t.Fatalf("precondition: the new facts table: version %d txn %d %v, want 2 and 12", fs.Version(), v, err)
			}
			e.exec(insert(200, 200))
			var rw *CheckpointRewoundError
			if _, err := e.run(Options{}); !errors.As(err, &rw) {
				t.Fatalf("precondition: a new process on A's checkpoint: %v, want *CheckpointRewoundError", err)
			}
			if _, err := e.runOn(a, Options{}); !errors.As(err, &rw) || rw.Table != "" || rw.FactsBatch != 12 {
				t.Errorf("warm A on its checkpoint, the tables started over ahead: %v; want *CheckpointRewoundError of the facts table's batch 12, as a new process gives", err)
			}
		})
	}
}
