package stream

// Review2 (branch review2): attacks on the exactly-once changes of branch holes (decision
// 0016): the warm Checkpoint's ETag identity, the facts check of a remembered state, and
// the clean-up order. Two found a hole (TestReview2WarmCommitsMemoryAfterReset and
// ...AfterStrip: the Checkpoint's memory of commit files outlived the state it belonged
// to), closed since by Checkpoint.Resume forgetting all it remembers when the listing does
// not show its own newest file; the others are coverage that held.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// A checkpoint behind bronze but not behind the facts table: another process's batches
// 3..5 appended to bronze while their facts rows waited in its commit files (FactsEvery
// 10), and the checkpoint then lost them (restored from a copy taken after A's batch 2, or
// their files deleted). The facts check of A's remembered state passes (txn(#facts) is
// A's batch 0); A's next batch is fresh and bronze holds its id: *CheckpointRewoundError,
// as a cold process gives, and bronze keeps each change once.
func TestReview2WarmBronzeAheadFactsDeferred(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut, testlake.AWS} {
		for _, how := range []string{"restored from a copy", "the other's batches deleted"} {
			t.Run(string(backend)+"/"+how, func(t *testing.T) {
				e := newEnvOn(t, backend, cdcsim.Config{Seed: 81})
				a := e.deps()
				for i := 1; i <= 3; i++ {
					e.exec(insert(i, i))
					if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
						t.Fatalf("A %d: %+v %v", i, res, err)
					}
				}
				copied := e.storeFiles(e.spec.Checkpoint)
				for i := 4; i <= 6; i++ { // B: batches 3..5, one insert each, facts rows waiting
					e.exec(insert(i, i))
					if res, err := e.run(Options{FactsEvery: 10, FactsMaxDelay: 1000 * time.Hour}); err != nil || res.Batches != 1 || res.Rows != 1 {
						t.Fatalf("B %d: %+v %v", i, res, err)
					}
				}
				if got := e.factsBatchRows(); got >= 4 {
					t.Fatalf("precondition: B's facts rows should wait in its commit files; the facts table has %d batch rows", got)
				}
				e.rewindCheckpoint(how, copied)
				e.exec(insert(7, 7))
				var rw *CheckpointRewoundError
				if _, err := e.run(Options{}); !errors.As(err, &rw) {
					t.Fatalf("precondition: a cold process: %v, want *CheckpointRewoundError", err)
				}
				if res, err := e.runOn(a, Options{}); !errors.As(err, &rw) {
					t.Errorf("warm A on a checkpoint behind bronze: %+v %v; want *CheckpointRewoundError", res, err)
				}
				if _, lg := e.bronzeState(); lg.Duplicates != 0 || lg.ChangeRows() != 6 {
					t.Errorf("bronze: %d change rows, %d duplicates; want the 6 changes of batches 0..5 once", lg.ChangeRows(), lg.Duplicates)
				}
			})
		}
	}
}

// factsBatchRows counts the facts table's batch rows (no event; not those waiting).
func (e *env) factsBatchRows() int {
	n := 0
	rows, _ := e.tableFactsRows()
	for _, r := range rows {
		if r.Event == "" {
			n++
		}
	}
	return n
}

// review2RaceStore runs hook once, just before the first conditional put of key: another process
// acting between a warm process's Resume and its offsets put.
type review2RaceStore struct {
	storage.Store
	key  string
	once *sync.Once
	hook func()
}

func (s review2RaceStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	_, err := s.PutIfAbsentTag(ctx, key, data)
	return err
}

func (s review2RaceStore) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	if strings.HasSuffix(key, s.key) {
		s.once.Do(s.hook)
	}
	return storage.PutIfAbsentTag(ctx, s.Store, key, data)
}

// A warm process resumes from memory (its offsets/2 is the newest file), and another
// process runs batch 3 to its end (offsets, bronze, facts, commit) before the warm
// process's offsets/3 put: that put finds B's file, the fence of the resume by HEAD
// (decision 0017), and the invocation starts again cold, finds B's batch holding change 4
// and has nothing to stream; its next invocation streams change 5. Bronze holds each
// change once. (Before the resume by HEAD the put's *checkpoint.ConcurrentStreamError
// ended the invocation.)
func TestReview2WarmRacesAnotherProcessOnTheNextBatch(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut, testlake.AWS} {
		t.Run(string(backend), func(t *testing.T) {
			e := newEnvOn(t, backend, cdcsim.Config{Seed: 82})
			var once sync.Once
			e.lake.WrapStore = func(s storage.Store) storage.Store {
				return review2RaceStore{Store: s, key: "offsets/3.json", once: &once, hook: func() {
					if res, err := e.run(Options{}); err != nil || res.Rows != 1 {
						t.Errorf("B during A's batch 3: %+v %v", res, err)
					}
				}}
			}
			a := e.deps()
			e.lake.WrapStore = nil
			for i := 1; i <= 3; i++ {
				e.exec(insert(i, i))
				if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
					t.Fatalf("A %d: %+v %v", i, res, err)
				}
			}
			e.exec(insert(4, 4))
			if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 0 || res.Batches != 0 {
				t.Fatalf("warm A racing B on batch 3: %+v %v; want a cold restart with nothing left to stream (B's batch 3 holds change 4)", res, err)
			}
			e.exec(insert(5, 5))
			if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
				t.Fatalf("warm A after the race: %+v %v; want the one new change", res, err)
			}
			e.assertConverged()
		})
	}
}

// Was a hole (review2; closed by Checkpoint.Resume forgetting its memory when the listing
// does not show its own newest file): decision 0016 made the warm Checkpoint tell its own offsets file from
// another's by the ETag, but its memory of commit files (Checkpoint.Commits answers from
// c.commits by batch number alone) still trusts a number. Setting of
// TestWarmHoleCheckpointResetSameBatchNumber (checkpoint, bronze and facts deleted to
// start over, a warm process A alive), with facts rows deferred (FactsEvery 3): A's
// batches 1 and 2 left their facts rows waiting in its commit files; after the reset B
// streams batches 0..2 (its 1 and 2 waiting too). A's next invocation sees B's offsets/2
// (another ETag), reads the checkpoint and goes on at batch 3, whose facts commit gathers
// the rows waiting in commits/1 and commits/2: from A's memory, A's own pre-reset rows,
// not B's files. The facts table then describes batches 1 and 2 with A's old ranges
// (end_lsn, rows) and B's rows for them are lost: bookkeeping, bronze is right.
func TestReview2WarmCommitsMemoryAfterReset(t *testing.T) {
	// Not on AWS: deleting bronze's and the facts table's objects leaves their DynamoDB
	// log entries, so the reset is not possible there as in TestWarmHoleCheckpointResetSameBatchNumber.
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut} {
		t.Run(string(backend), func(t *testing.T) {
			e := newEnvOn(t, backend, cdcsim.Config{Seed: 84})
			opts := Options{FactsEvery: 3, FactsMaxDelay: 1000 * time.Hour}
			a := e.deps()
			for i := 1; i <= 3; i++ { // A: batches 0..2, rows of 1 and 2 waiting
				e.exec(insert(i, i))
				if res, err := e.runOn(a, opts); err != nil || res.Rows != 1 {
					t.Fatalf("A %d: %+v %v", i, res, err)
				}
			}
			for _, url := range []string{e.spec.Checkpoint, e.spec.Bronze, e.spec.FactsTable} {
				e.wipe(url)
			}
			if res, err := e.run(opts); err != nil || res.Rows != 3 { // B batch 0: inserts 1..3
				t.Fatalf("B batch 0: %+v %v", res, err)
			}
			for i := 4; i <= 5; i++ { // B batches 1, 2: rows waiting
				e.exec(insert(i, i))
				if res, err := e.run(opts); err != nil || res.Rows != 1 {
					t.Fatalf("B %d: %+v %v", i, res, err)
				}
			}
			want := map[int64]string{}
			for n, b := range e.storeFiles(e.spec.Checkpoint) {
				if !strings.HasPrefix(n, "offsets/") {
					continue
				}
				var ob checkpoint.Batch
				if err := json.Unmarshal(b, &ob); err != nil {
					t.Fatal(err)
				}
				want[ob.ID] = ob.End.LSN.String()
			}
			e.exec(insert(6, 6))
			if res, err := e.runOn(a, opts); err != nil || res.Rows != 1 {
				t.Fatalf("warm A after the reset: %+v %v", res, err)
			}
			rows, through := e.tableFactsRows()
			if through < 3 {
				t.Fatalf("precondition: batch 3 committed the waiting facts rows (through %d)", through)
			}
			for _, r := range rows {
				if r.Event != "" || *r.BatchID > 2 {
					continue
				}
				if r.EndLSN != want[*r.BatchID] {
					t.Errorf("facts row of batch %d: end_lsn %s, the checkpoint's batch ends at %s (a row of the process's "+
						"batch before the reset, from its memory)", *r.BatchID, r.EndLSN, want[*r.BatchID])
				}
			}
			e.assertConverged()
		})
	}
}

// lostAnswerStore makes the first conditional put of a key ending in key take effect and
// then answer storage.ErrExists: the SDK's retry of a put whose first answer was lost.
type lostAnswerStore struct {
	storage.Store
	key  string
	once *sync.Once
}

func (s lostAnswerStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	_, err := s.PutIfAbsentTag(ctx, key, data)
	return err
}

func (s lostAnswerStore) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	tag, err := storage.PutIfAbsentTag(ctx, s.Store, key, data)
	if err == nil && strings.HasSuffix(key, s.key) {
		lost := false
		s.once.Do(func() { lost = true })
		if lost {
			return "", fmt.Errorf("retried put: %w", storage.ErrExists)
		}
	}
	return tag, err
}

// A warm process's offsets put (or commit put) took effect but its answer was lost and
// the retry found the file (ErrExists): the Checkpoint reads it back, knows its own
// content, and goes on without the ETag; its next Resume reads the files (not Remembered,
// the right batch; remembered after a lost commit answer, the offsets' ETag known), and
// after its next batch it remembers again. Bronze holds each change
// once.
func TestReview2WarmLostPutAnswer(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut, testlake.AWS} {
		for _, key := range []string{"offsets/3.json", "commits/3.json"} {
			t.Run(string(backend)+"/"+key, func(t *testing.T) {
				e := newEnvOn(t, backend, cdcsim.Config{Seed: 85})
				var once sync.Once
				e.lake.WrapStore = func(s storage.Store) storage.Store { return lostAnswerStore{s, key, &once} }
				a := e.deps()
				e.lake.WrapStore = nil
				for i := 1; i <= 4; i++ { // batches 0..3, the put of batch 3's file answering ErrExists
					e.exec(insert(i, i))
					if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
						t.Fatalf("A %d: %+v %v", i, res, err)
					}
				}
				st, err := a.Checkpoint.Resume(t.Context())
				// A lost commit answer leaves the offsets file's ETag known: remembered.
				wantRemembered := strings.HasPrefix(key, "commits/")
				if err != nil || st.Remembered != wantRemembered || st.Last == nil || st.Last.ID != 3 || st.LastCommit == nil || st.Next != 4 {
					t.Fatalf("resume after the lost answer: %+v %v; want batch 3 committed (remembered %v)", st, err, wantRemembered)
				}
				e.exec(insert(5, 5))
				if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
					t.Fatalf("A 5: %+v %v", res, err)
				}
				if st, err := a.Checkpoint.Resume(t.Context()); err != nil || !st.Remembered || st.Next != 5 {
					t.Errorf("resume after the next batch: %+v %v; want batch 4 remembered", st, err)
				}
				e.exec(insert(6, 6))
				if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
					t.Fatalf("A 6: %+v %v", res, err)
				}
				e.assertConverged()
			})
		}
	}
}

// A warm process's external call (every store, log store, DynamoDB and source call,
// through deltatest.Faults) fails at every call of a warm invocation, before it takes
// effect or after (its answer lost); the process lives on (the handler returned an error,
// the sandbox kept) and runs again warm twice, then a cold process drains: bronze holds
// each change once, one facts row a batch.
func TestReview2WarmFaultAtEveryCallThroughDynamoDB(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.AWS, testlake.S3CondPut} {
		t.Run(string(backend), func(t *testing.T) {
			setup := func() (*env, Deps, *deltatest.Faults) {
				e := newEnvOn(t, backend, cdcsim.Config{Seed: 86})
				f := &deltatest.Faults{}
				e.lake.Faults = f
				one := 1
				e.spec.Options.MaxCommitsPerBatch = &one
				a := e.deps()
				e.lake.Faults = nil
				for i := 1; i <= 10; i++ {
					e.exec(insert(i, i))
					if _, err := e.runOn(a, Options{}); err != nil {
						t.Fatal(err)
					}
				}
				e.exec(insert(11, 11))
				e.exec(insert(12, 12))
				return e, a, f
			}
			e, a, f := setup()
			*f = deltatest.Faults{}
			if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 2 || res.Batches != 2 {
				t.Fatalf("clean warm invocation: %+v %v", res, err)
			}
			ops := f.Ops()
			t.Logf("a warm invocation makes %d calls", len(ops))
			for _, after := range []bool{false, true} {
				for k := 1; k <= len(ops); k++ {
					e, a, f := setup()
					*f = deltatest.Faults{KillAt: k, After: after}
					failedThenWarmAgain(t, e, a, func() { *f = deltatest.Faults{} }, fmt.Sprintf("failure at call %d (after=%v, %s)", k, after, ops[k-1]))
				}
			}
		})
	}
}

// Was a hole (review2, closed as above): the commit-file memory of TestReview2WarmCommitsMemoryAfterReset
// without deleting any table: A's batches 1 and 2 append nothing and their facts rows
// wait in commits/1 and commits/2; their files are deleted from the checkpoint (the
// newest batches stripped, which no table holds, so no process refuses it); B streams
// batches 1 and 2 again, each appending a row. A's next batch commits the waiting facts
// rows from its memory: its own empty batch 1's row (rows 0) for B's batch 1, whose row
// is in bronze.
func TestReview2WarmCommitsMemoryAfterStrip(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut, testlake.AWS} {
		for _, warm := range []bool{true, false} {
			name := string(backend) + "/warm"
			if !warm {
				name = string(backend) + "/cold (control)"
			}
			t.Run(name, func(t *testing.T) { review2CommitsMemoryAfterStrip(t, backend, warm) })
		}
	}
}

func review2CommitsMemoryAfterStrip(t *testing.T, backend testlake.Backend, warm bool) {
	e := newEnvOn(t, backend, cdcsim.Config{Seed: 87})
	opts := Options{FactsEvery: 3, FactsMaxDelay: 1000 * time.Hour}
	a := e.deps()
	e.exec(insert(1, 1))
	if res, err := e.runOn(a, opts); err != nil || res.Rows != 1 {
		t.Fatalf("A batch 0: %+v %v", res, err)
	}
	for n := 1; n <= 2; n++ { // A: batches 1 and 2 empty, their rows waiting
		e.db.Advance(1)
		e.db.Idle()
		if res, err := e.runOn(a, opts); err != nil || res.Batches != 1 || res.Rows != 0 {
			t.Fatalf("A batch %d: %+v %v", n, res, err)
		}
	}
	st := e.lake.RawStore(e.spec.Checkpoint)
	for n := 1; n <= 2; n++ {
		for _, k := range []string{fmt.Sprintf("offsets/%d.json", n), fmt.Sprintf("commits/%d.json", n)} {
			if err := st.Delete(context.Background(), k); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 2; i <= 3; i++ { // B: batches 1 and 2 again, a row each
		e.exec(insert(i, i))
		if res, err := e.run(opts); err != nil || res.Rows != 1 {
			t.Fatalf("B %d: %+v %v", i, res, err)
		}
	}
	e.exec(insert(4, 4))
	if !warm {
		a = e.deps() // control: a new process commits B's rows
	}
	if res, err := e.runOn(a, opts); err != nil || res.Rows != 1 {
		t.Fatalf("A: %+v %v", res, err)
	}
	rows, through := e.tableFactsRows()
	if through < 3 {
		t.Fatalf("precondition: batch 3 committed the waiting facts rows (through %d)", through)
	}
	for _, r := range rows {
		if r.Event == "" && *r.BatchID >= 1 && *r.BatchID <= 2 && (r.Rows == nil || *r.Rows != 1) {
			got := "nil"
			if r.Rows != nil {
				got = fmt.Sprint(*r.Rows)
			}
			t.Errorf("facts row of batch %d: rows %s, end_lsn %s; bronze holds its 1 row (the warm process's own stripped batch's row)", *r.BatchID, got, r.EndLSN)
		}
	}
	e.assertConverged()
}
