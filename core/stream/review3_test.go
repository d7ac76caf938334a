package stream

// Review 3 of the warm resume by HEAD (docs/decisions/0017-warm-resume-by-head.md).
// The one that found a hole is named for what it checks and says what was fixed; the
// others are coverage that held.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// Was a hole (fixed: waitingFacts reads from the checkpoint's Retain): 0017 lets
// FactsEvery go up to the checkpoint's Retain (was clamped to DefaultRetain), but waitingFacts still reads the waiting rows only from the commit files
// of the last DefaultRetain batches (facts.go: from := last + 1 - checkpoint.DefaultRetain).
// With Retain = FactsEvery = DefaultRetain+10 a facts commit after DefaultRetain+10 idle
// batches drops the facts rows of the oldest waiting batches: they are in their commit
// files (Retain keeps them) but never read. Consequence: facts rows lost (bookkeeping:
// the facts table's batch rows; bronze is not touched).
func TestReview3FactsEveryAboveDefaultRetainKeepsRows(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 91})
	d := e.deps()
	retain := checkpoint.DefaultRetain + 10
	d.Checkpoint.Retain = retain
	opts := Options{FactsEvery: retain, FactsMaxDelay: 1000 * time.Hour}
	e.exec(insert(1, 1))
	if res, err := e.runOn(d, opts); err != nil || res.Rows != 1 {
		t.Fatalf("batch 0: %+v %v", res, err)
	}
	// Batch 0 (a stream from startingLsn) commits its facts row at once; batches
	// 1..retain wait and batch retain commits them all.
	for n := 1; n <= retain; n++ {
		e.db.Advance(1)
		e.db.Idle()
		if res, err := e.runOn(d, opts); err != nil || res.Batches != 1 {
			t.Fatalf("batch %d: %+v %v", n, res, err)
		}
	}
	if got, want := e.factsBatchRows(), retain+1; got != want {
		t.Errorf("facts table holds %d batch rows after batches 0..%d with FactsEvery = Retain = %d; want %d "+
			"(the waiting rows of the batches before last+1-DefaultRetain were not read)", got, retain, retain, want)
	}
}

// review3Exists reports whether key exists in the checkpoint (any backend).
func (e *env) review3Exists(key string) bool {
	e.t.Helper()
	_, err := e.lake.RawStore(e.spec.Checkpoint).Head(context.Background(), key)
	if errors.Is(err, storage.ErrNotFound) {
		return false
	} else if err != nil {
		e.t.Fatal(err)
	}
	return true
}

// Held: the argument's step 3 at its tightest. FactsEvery == Retain == 7; A commits
// batches 0..11 and sleeps warm; B (cold, idle batches) runs 12..20, so that its clean-up
// at 20 deletes every batch below 13 = 20-7, offsets/12 (A's n+1) included: B is exactly
// Retain+2 ahead, the least distance at which a clean-up removes the fence. The clean-up
// fails on offsets/11 (A's own file): with one Delete a key that stops it before 12; with
// DeleteObjects offsets/12 is gone and offsets/11 stays, so (a) HEAD and (d) the put would
// both succeed; (b) must catch it (B's facts commit at 17 = 10+7). Also on the DynamoDB
// log store. A resumes after B's batch 20 and bronze holds each change once.
func TestReview3WarmAtRetainPlusTwoFactsEveryEqualsRetain(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.AWS} {
		for _, keys := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/keys=%v", backend, keys), func(t *testing.T) {
				e := newEnvOn(t, backend, cdcsim.Config{Seed: 92})
				a := e.deps()
				for i := 1; i <= 12; i++ { // A: batches 0..11
					e.exec(insert(i, i))
					if res, err := e.runOn(a, Options{}); err != nil || res.Batches != 1 || res.Rows != 1 {
						t.Fatalf("A %d: %+v %v", i, res, err)
					}
				}
				e.lake.WrapStore = func(s storage.Store) storage.Store {
					if keys {
						return failDeleteKeysOf{failDeleteOf{s, "offsets/11.json"}}
					}
					return failDeleteOf{s, "offsets/11.json"}
				}
				for n := 12; n <= 20; n++ {
					e.db.Advance(1)
					e.db.Idle()
					b := e.deps()
					b.Checkpoint.Retain = 7
					if res, err := e.runOn(b, Options{FactsEvery: 7, FactsMaxDelay: 1000 * time.Hour}); err != nil || res.Batches != 1 || res.Rows != 0 {
						t.Fatalf("B batch %d: %+v %v", n, res, err)
					}
				}
				e.lake.WrapStore = nil
				for k, want := range map[string]bool{"offsets/11.json": true, "offsets/12.json": !keys, "offsets/13.json": true, "commits/20.json": true} {
					if got := e.review3Exists(k); got != want {
						t.Fatalf("precondition: %s exists=%v, want %v", k, got, want)
					}
				}
				e.exec(insert(13, 13))
				if res, err := e.runOn(a, Options{}); err != nil || res.Batches != 1 || res.Rows != 1 || !res.CaughtUp {
					t.Fatalf("warm A: %+v %v; want one batch of one row after B's", res, err)
				}
				if !e.review3Exists("offsets/21.json") {
					t.Errorf("warm A did not resume after B's batch 20")
				}
				e.exec(insert(14, 14))
				e.mustDrain(Options{})
				e.assertConverged()
			})
		}
	}
}

// Held: another process opens a chunked generation while a warm process sleeps, and its
// batches in the new generation append nothing (the loss batch of generation 0 appended
// nothing either: a chunked open reads nothing). The warm process A, whose memory says
// generation 0 with no attempt open, HEADs its own offsets file of generation 0, finds
// the facts table and bronze below its next batch there, and loses only the put of
// generation 0's next offsets file (the other's loss batch): it restarts cold, lists the
// generations and streams generation 1, each change once.
func TestReview3WarmAfterOthersChunkedGenerationIdle(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.AWS} {
		t.Run(string(backend), func(t *testing.T) {
			e, _ := chunkedResnapshotEnv(t, backend, 93, -1, 8)
			a := e.deps()
			e.exec(insert(40, 40))
			if res, err := e.runOn(a, Options{}); err != nil || res.Generation != 0 || res.Rows != 1 {
				t.Fatalf("A in generation 0: %+v %v", res, err)
			}
			e.purgeGap()
			if res, err := e.run(Options{}); err != nil || res.Generation != 1 || !res.CaughtUp { // B
				t.Fatalf("B after the purge: %+v %v; want generation 1", res, err)
			}
			s1 := e.liveGeneration().Snapshot.LSN
			e.db.Advance(1)
			e.db.Idle()
			if res, err := e.run(Options{}); err != nil || res.Generation != 1 || res.Rows != 0 { // B, idle
				t.Fatalf("B idle in generation 1: %+v %v", res, err)
			}
			e.exec(insert(41, 41))
			if res, err := e.runOn(a, Options{}); err != nil || res.Generation != 1 || res.Rows != 1 {
				t.Fatalf("warm A after B's generation: %+v %v; want generation 1, one row", res, err)
			}
			e.exec(insert(42, 42))
			if res, err := e.runOn(a, Options{}); err != nil || res.Generation != 1 || res.Rows != 1 {
				t.Fatalf("warm A in generation 1: %+v %v", res, err)
			}
			e.backfillDone()
			e.mustDrain(Options{})
			e.assertChunkedRecovered(1, s1)
		})
	}
}

// review3HeadFails is a store whose Head fails while armed (an answer lost); it passes the
// ETag of its conditional puts on, so a Checkpoint on it resumes warm.
type review3HeadFails struct {
	storage.Store
	armed *atomic.Bool
}

var errReview3Head = errors.New("head: connection reset")

func (s review3HeadFails) Head(ctx context.Context, key string) (storage.ObjectInfo, error) {
	if s.armed.Load() {
		return storage.ObjectInfo{}, errReview3Head
	}
	return s.Store.Head(ctx, key)
}

func (s review3HeadFails) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	return storage.PutIfAbsentTag(ctx, s.Store, key, data)
}

// Held: a warm invocation whose HEAD of its own offsets file gets no answer fails with
// that error (no typed refusal), having written nothing; meanwhile another process
// commits a batch with a row; the warm process's next invocation resumes after it, and
// bronze holds each change once.
func TestReview3WarmHeadAnswerLost(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut} {
		t.Run(string(backend), func(t *testing.T) {
			e := newEnvOn(t, backend, cdcsim.Config{Seed: 94})
			var armed atomic.Bool
			e.lake.WrapStore = func(s storage.Store) storage.Store { return review3HeadFails{s, &armed} }
			a := e.deps()
			e.lake.WrapStore = nil
			for i := 1; i <= 3; i++ {
				e.exec(insert(i, i))
				if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
					t.Fatalf("A %d: %+v %v", i, res, err)
				}
			}
			e.exec(insert(4, 4))
			armed.Store(true)
			res, err := e.runOn(a, Options{})
			armed.Store(false)
			if !errors.Is(err, errReview3Head) || res.Batches != 0 {
				t.Fatalf("warm A with its HEAD unanswered: %+v %v; want the HEAD's error, no batch", res, err)
			}
			if e.review3Exists("offsets/3.json") {
				t.Fatal("offsets/3 written by an invocation whose HEAD failed")
			}
			if res, err := e.run(Options{}); err != nil || res.Rows != 1 { // B
				t.Fatalf("B: %+v %v", res, err)
			}
			e.exec(insert(5, 5))
			if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
				t.Fatalf("A after B: %+v %v; want the one new change", res, err)
			}
			e.assertConverged()
		})
	}
}
