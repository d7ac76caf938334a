package stream

// The review of the warm resume (branch review, fb840bc: core/stream/warm_review_test.go).
// Two of its holes were main's too: TestWarmHoleFactsAheadNotChecked and
// TestWarmHoleCheckpointResetSameBatchNumber; its two tests of the resume by HEAD
// (TestWarmHoleCleanPartlyFailedDuplicates, TestWarmHoleFalseRewoundAfterLostOffsetsAnswer)
// are ported to the resume by HEAD as it now is (docs/decisions/0017-warm-resume-by-head.md:
// the file known by its ETag, the put that must create the next offsets file, the facts
// and bronze checks, a cold resume whenever one fails); the others are coverage.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// storeFiles reads every object under the store at url (a copy of a checkpoint).
func (e *env) storeFiles(url string) map[string][]byte {
	e.t.Helper()
	st, ctx := e.lake.RawStore(url), context.Background()
	out := map[string][]byte{}
	for info, err := range st.List(ctx, "", "") {
		if err != nil {
			e.t.Fatal(err)
		}
		b, err := st.GetRange(ctx, info.Key, 0, -1)
		if err != nil {
			e.t.Fatal(err)
		}
		out[info.Key] = b
	}
	return out
}

// wipe deletes every object under the store at url.
func (e *env) wipe(url string) {
	e.t.Helper()
	st, ctx := e.lake.RawStore(url), context.Background()
	var keys []string
	for info, err := range st.List(ctx, "", "") {
		if err != nil {
			e.t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	for _, k := range keys {
		if err := st.Delete(ctx, k); err != nil {
			e.t.Fatal(err)
		}
	}
}

// restore replaces everything under the store at url by files, written again with the
// same content (on S3 each object then has the same ETag as the one copied).
func (e *env) restore(url string, files map[string][]byte) {
	e.t.Helper()
	e.wipe(url)
	st := e.lake.RawStore(url)
	for k, b := range files {
		if err := st.Put(context.Background(), k, strings.NewReader(string(b)), int64(len(b))); err != nil {
			e.t.Fatal(err)
		}
	}
}

// rewindCheckpoint puts the checkpoint behind the tables: "restored from a copy" writes
// copied back in place of everything (e.restore); otherwise batches 3..5's offsets and
// commit files are deleted (another process's newest batches stripped).
func (e *env) rewindCheckpoint(how string, copied map[string][]byte) {
	e.t.Helper()
	if how == "restored from a copy" {
		e.restore(e.spec.Checkpoint, copied)
		return
	}
	st := e.lake.RawStore(e.spec.Checkpoint)
	for n := 3; n <= 5; n++ {
		for _, k := range []string{fmt.Sprintf("offsets/%d.json", n), fmt.Sprintf("commits/%d.json", n)} {
			if err := st.Delete(context.Background(), k); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

// Was a hole (main 5481003, closed by decision 0016's facts check): a warm process
// skipped checkNotRewound's facts-table check when the listing's newest batch was its own
// last one. Process A commits batches 0..2; B, a
// cold process, commits batches 3..5, which append nothing to bronze but commit their facts
// rows (txn(<app_id>#facts) = 5); then the checkpoint loses B's batches: restored from a
// copy taken after A's batch 2 (every file written again, byte for byte: on S3 the same
// ETags), or B's files deleted (A's files untouched). A cold process refuses the
// checkpoint (*CheckpointRewoundError, facts). The warm A found offsets/2, its own, and
// went on: its batches 3..5 reuse batch ids whose facts rows are in the table, so their
// facts commits are skipped by txn and the facts table keeps B's rows (0 rows, other
// ranges) for batches that hold rows in bronze. Nothing in the checkpoint tells this
// from A's own state (in the second case it is A's own state): only the facts table
// does, so a warm resume reads it as a cold one does.
func TestWarmHoleFactsAheadNotChecked(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut} {
		for _, how := range []string{"restored from a copy", "the other's batches deleted"} {
			t.Run(string(backend)+"/"+how, func(t *testing.T) {
				e := newEnvOn(t, backend, cdcsim.Config{Seed: 72})
				a := e.deps()
				for i := 1; i <= 3; i++ { // A: batches 0..2
					e.exec(insert(i, i))
					if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
						t.Fatalf("A %d: %+v %v", i, res, err)
					}
				}
				copied := e.storeFiles(e.spec.Checkpoint)
				for n := 3; n <= 5; n++ { // B: batches 3..5, empty, facts rows committed each
					e.db.Advance(1)
					e.db.Idle()
					if res, err := e.run(Options{FactsEvery: 1}); err != nil || res.Batches != 1 || res.Rows != 0 {
						t.Fatalf("B batch %d: %+v %v", n, res, err)
					}
				}
				e.rewindCheckpoint(how, copied)
				e.exec(insert(4, 4))
				var rw *CheckpointRewoundError
				if _, err := e.run(Options{}); !errors.As(err, &rw) { // a cold process writes nothing here
					t.Fatalf("precondition: a cold process on the rewound checkpoint: %v, want *CheckpointRewoundError", err)
				}
				res, err := e.runOn(a, Options{})
				if !errors.As(err, &rw) {
					var b3 []string
					for _, r := range e.factsRows() {
						if r.Event == "" && *r.BatchID == 3 {
							b3 = append(b3, fmt.Sprintf("rows=%d end=%s", *r.Rows, r.EndLSN))
						}
					}
					_, lg := e.bronzeState()
					t.Errorf("warm A on a checkpoint behind the facts table: %+v %v; want *CheckpointRewoundError as a cold process "+
						"gives. Facts rows of batch 3: %v; bronze holds %d change rows", res, err, b3, lg.ChangeRows())
				}
			})
		}
	}
}

// Was a hole (main 5481003, closed by decision 0016's ETag identity): the checkpoint,
// bronze and the facts table are deleted to start
// over with the same app_id, while a warm process (A, last batch 2) lives on. A new
// process streams from earliest again and reaches batch 2 with other ranges. A's listing
// showed offsets/2, the number of its own last batch, and A took its memory for the
// checkpoint: it streamed from its own batch 2's end, and the changes of the new stream's
// batches 1 and 2 were appended again. The warm process must know offsets/2 is the file
// it wrote, not only its number.
func TestWarmHoleCheckpointResetSameBatchNumber(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut} {
		t.Run(string(backend), func(t *testing.T) {
			e := newEnvOn(t, backend, cdcsim.Config{Seed: 73})
			a := e.deps()
			for i := 1; i <= 3; i++ { // A: batches 0..2, one insert each
				e.exec(insert(i, i))
				if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
					t.Fatalf("A %d: %+v %v", i, res, err)
				}
			}
			for _, url := range []string{e.spec.Checkpoint, e.spec.Bronze, e.spec.FactsTable} {
				e.wipe(url)
			}
			// B: batch 0 holds inserts 1..3, batches 1 and 2 one insert each.
			if res, err := e.run(Options{}); err != nil || res.Rows != 3 {
				t.Fatalf("B batch 0: %+v %v", res, err)
			}
			for i := 4; i <= 5; i++ {
				e.exec(insert(i, i))
				if res, err := e.run(Options{}); err != nil || res.Rows != 1 {
					t.Fatalf("B %d: %+v %v", i, res, err)
				}
			}
			e.exec(insert(6, 6))
			res, err := e.runOn(a, Options{})
			if err != nil || res.Rows != 1 {
				t.Errorf("warm A after the reset: %+v %v; want the one new change", res, err)
			}
			e.assertConverged()
		})
	}
}

// Another process runs more than Retain batches between two warm invocations, so that its
// clean-ups delete the warm process's last offsets file: its HEAD finds none, and the
// warm process resumes cold, after the other's batches. Then another process runs two batches,
// the second left pending (killed after its offsets put).
func TestWarmProcessAfterManyBatchesOfAnother(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 75})
	a := e.deps()
	for i := 1; i <= 3; i++ {
		e.exec(insert(i, i))
		if _, err := e.runOn(a, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 4; i <= 25; i++ { // B: batches 3..24, Retain 5
		e.exec(insert(i, i))
		b := e.deps()
		b.Checkpoint.Retain = 5
		if res, err := e.runOn(b, Options{FactsEvery: 5}); err != nil || res.Rows != 1 {
			t.Fatalf("B %d: %+v %v", i, res, err)
		}
	}
	if _, err := os.Stat(filepath.Join(e.spec.Checkpoint, "offsets/2.json")); err == nil {
		t.Fatal("precondition: offsets/2.json not cleaned up")
	}
	e.exec(insert(26, 26))
	if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 || !res.CaughtUp {
		t.Fatalf("warm A after 22 batches of B: %+v %v", res, err)
	}
	e.assertConverged()
	e.exec(insert(27, 27))
	if res, err := e.run(Options{}); err != nil || res.Rows != 1 {
		t.Fatalf("B: %+v %v", res, err)
	}
	e.exec(insert(28, 28))
	e.lake.WrapStore = func(s storage.Store) storage.Store { return dieAfterOffsets{s} }
	if _, err := e.run(Options{}); !errors.Is(err, errDied) {
		t.Fatalf("B killed after its offsets: %v", err)
	}
	e.lake.WrapStore = nil
	if res, err := e.runOn(a, Options{}); err != nil || !res.CaughtUp {
		t.Fatalf("warm A after B's pending batch: %+v %v", res, err)
	}
	e.assertConverged()
}

// transientPlan fails the at-th call (counted from arm) of the stores it wraps once: before
// it takes effect, or after (its answer lost). The process lives on: a Lambda invocation
// that returned an error, its container reused.
type transientPlan struct {
	mu    sync.Mutex
	n, at int
	after bool
	ops   []string
}

func (p *transientPlan) arm(at int, after bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.at, p.after, p.ops = 0, at, after, nil
}

func (p *transientPlan) hit(op string, call func() error) error {
	p.mu.Lock()
	p.n++
	p.ops = append(p.ops, op)
	fail, after := p.at > 0 && p.n == p.at, p.after
	p.mu.Unlock()
	if !fail {
		return call()
	}
	if after {
		_ = call()
	}
	return fmt.Errorf("%s: transient failure", op)
}

type transient struct {
	storage.Store
	p *transientPlan
}

func (s transient) Head(ctx context.Context, key string) (oi storage.ObjectInfo, err error) {
	err = s.p.hit("Head "+key, func() error { oi, err = s.Store.Head(ctx, key); return err })
	return oi, err
}

func (s transient) GetRange(ctx context.Context, key string, off, n int64) (b []byte, err error) {
	err = s.p.hit("GetRange "+key, func() error { b, err = s.Store.GetRange(ctx, key, off, n); return err })
	return b, err
}

func (s transient) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return s.p.hit("Put "+key, func() error { return s.Store.Put(ctx, key, r, size) })
}

func (s transient) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	_, err := s.PutIfAbsentTag(ctx, key, data)
	return err
}

// PutIfAbsentTag passes the store's ETag on, so the checkpoint's warm resume is exercised.
func (s transient) PutIfAbsentTag(ctx context.Context, key string, data []byte) (tag string, err error) {
	err = s.p.hit("PutIfAbsent "+key, func() error { tag, err = storage.PutIfAbsentTag(ctx, s.Store, key, data); return err })
	if err != nil {
		return "", err
	}
	return tag, nil
}

func (s transient) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	return func(yield func(storage.ObjectInfo, error) bool) {
		if err := s.p.hit("List "+prefix, func() error { return nil }); err != nil {
			yield(storage.ObjectInfo{}, err)
			return
		}
		for oi, err := range s.Store.List(ctx, prefix, startAfter) {
			if !yield(oi, err) {
				return
			}
		}
	}
}

func (s transient) Delete(ctx context.Context, key string) error {
	return s.p.hit("Delete "+key, func() error { return s.Store.Delete(ctx, key) })
}

// A warm process's store call (checkpoint, bronze's and the facts table's objects and Delta
// logs; on S3 with conditional puts, on local disk, and on S3 with the DynamoDB log store,
// its DynamoDB calls not failed) fails once, before it takes effect or
// after (its answer lost), at every such call of a warm invocation; the process lives on
// and runs again warm (its invocation of two batches, the first of which commits the facts
// rows waiting), then a cold process drains: bronze holds each change once, one
// facts row a batch.
func TestWarmProcessTransientFailureAtEveryStoreCall(t *testing.T) {
	for _, c := range []struct {
		backend testlake.Backend
		seed    uint64
	}{{testlake.S3CondPut, 76}, {testlake.Local, 83}, {testlake.AWS, 83}} {
		t.Run(string(c.backend), func(t *testing.T) { transientAtEveryWarmCall(t, c.backend, c.seed) })
	}
}

func transientAtEveryWarmCall(t *testing.T, backend testlake.Backend, seed uint64) {
	setup := func() (*env, Deps, *transientPlan) {
		e := newEnvOn(t, backend, cdcsim.Config{Seed: seed})
		p := &transientPlan{}
		e.lake.WrapStore = func(s storage.Store) storage.Store { return transient{s, p} }
		one := 1
		e.spec.Options.MaxCommitsPerBatch = &one
		a := e.deps()
		e.lake.WrapStore = nil
		for i := 1; i <= 10; i++ { // batches 0..9: the next flushes the facts rows waiting
			e.exec(insert(i, i))
			if _, err := e.runOn(a, Options{}); err != nil {
				t.Fatal(err)
			}
		}
		e.exec(insert(11, 11))
		e.exec(insert(12, 12))
		return e, a, p
	}
	e, a, p := setup()
	p.arm(0, false)
	if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 2 || res.Batches != 2 {
		t.Fatalf("clean warm invocation: %+v %v", res, err)
	}
	ops := append([]string(nil), p.ops...)
	t.Logf("a warm invocation makes %d store calls: %q", len(ops), ops)
	for _, after := range []bool{false, true} {
		for k := 1; k <= len(ops); k++ {
			if after && !testlake.Mutates(ops[k-1]) {
				continue
			}
			e, a, p := setup()
			p.arm(k, after)
			failedThenWarmAgain(t, e, a, func() { p.arm(0, false) }, fmt.Sprintf("failure at call %d (after=%v, %s)", k, after, ops[k-1]))
		}
	}
}

// failedThenWarmAgain is the rest of a failure-at-every-call test of a warm process a
// whose failure is armed: a's invocation (failing), disarm, a's invocation again, one
// more change and invocation, then a cold process's drain; bronze must hold each change
// once (assertConverged) and both later invocations succeed. what names the failure.
func failedThenWarmAgain(t *testing.T, e *env, a Deps, disarm func(), what string) {
	t.Helper()
	_, err1 := e.runOn(a, Options{})
	disarm()
	res2, err2 := e.runOn(a, Options{})
	e.exec(insert(13, 13))
	res3, err3 := e.runOn(a, Options{})
	e.mustDrain(Options{})
	e.assertConverged()
	if err2 != nil || err3 != nil || t.Failed() {
		t.Fatalf("%s: first %v; warm again %+v %v; and again %+v %v", what, err1, res2, err2, res3, err3)
	}
}

// Another process finds a data loss with snapshot "chunked", opens generation 1 and
// streams in it, between two invocations of a warm process of generation 0: the warm
// process's put of its next offsets file finds B's (the fence of the resume by HEAD,
// decision 0017), it resumes cold, finds generation 1, and streams in it.
func TestWarmProcessAfterAnotherProcessesChunkedGeneration(t *testing.T) {
	e, _ := chunkedResnapshotEnv(t, testlake.Local, 77, -1, 8)
	a := e.deps()
	for i := 20; i <= 22; i++ {
		e.exec(insert(i, i))
		if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
			t.Fatalf("A %d: %+v %v", i, res, err)
		}
	}
	e.purgeGap()
	e.exec(insert(7, 7))
	if res, err := e.run(Options{}); err != nil || res.Generation != 1 || !res.CaughtUp { // B
		t.Fatalf("B after the purge: %+v %v; want generation 1", res, err)
	}
	s1 := e.liveGeneration().Snapshot.LSN
	for i := 8; i <= 9; i++ {
		e.exec(insert(i, i))
		if res, err := e.runOn(a, Options{}); err != nil || res.Generation != 1 || res.Rows != 1 {
			t.Fatalf("warm A after B's generation (%d): %+v %v; want generation 1, 1 row", i, res, err)
		}
	}
	e.backfillDone()
	e.assertChunkedRecovered(1, s1)
}

// Other processes stream an ADD COLUMN and a capture-instance switch (the new column added
// to bronze) between two invocations of a warm process, which parsed bronze's schema
// before: it resumes after their batches, reads the newer instance and commits its rows
// with the new column.
func TestWarmProcessAfterAnotherProcessesSwitch(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 78})
	a := e.deps()
	for i := 1; i <= 2; i++ {
		e.exec(insert(i, i))
		if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
			t.Fatalf("A %d: %+v %v", i, res, err)
		}
	}
	e.addColumnAndSwitch(t) // other processes drain up to the switch; row 7 waits
	if res, err := e.runOn(a, Options{}); err != nil || !res.CaughtUp || res.Rows == 0 {
		t.Fatalf("warm A after the switch: %+v %v", res, err)
	}
	e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 8, "amount": 8, "region": "r8"})
		return err
	})
	if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
		t.Fatalf("warm A after its switch batch: %+v %v", res, err)
	}
	// Without snapshot_on_switch rows 5 and 6 keep region NULL in bronze: compare changes.
	st, lg := e.bronzeState()
	if got, want := lg.ChangeRows(), e.sourceChangeRows(); lg.Duplicates != 0 || got != want {
		t.Errorf("bronze: %d change rows (%d duplicates), the source %d", got, lg.Duplicates, want)
	}
	if d := rebuild.Diff(e.sourceState(), st, 10); len(d) != 2 {
		t.Errorf("rebuilt state: want only rows 5 and 6's region to differ (NULL), got:\n%s", joinLines(d))
	}
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(snap.Metadata().SchemaString, `"region"`) {
		t.Errorf("bronze schema lacks region: %s", snap.Metadata().SchemaString)
	}
}

// failDeleteOf is a store whose clean-up cannot delete one key: a Delete of it fails (a
// transient error), or, with keys, the store deletes many keys in one request (S3's
// DeleteObjects, storage.KeysDeleter) and reports that key failed while it deleted the
// others of the request, higher batches included.
type failDeleteOf struct {
	storage.Store
	key string
}

var errDeleteFailed = errors.New("delete failed (transient)")

func (s failDeleteOf) Delete(ctx context.Context, key string) error {
	if key == s.key {
		return errDeleteFailed
	}
	return s.Store.Delete(ctx, key)
}

type failDeleteKeysOf struct{ failDeleteOf }

func (s failDeleteKeysOf) DeleteKeys(ctx context.Context, keys []string) error {
	failed := false
	for _, k := range keys {
		if k == s.key {
			failed = true
			continue
		}
		if err := s.Store.Delete(ctx, k); err != nil {
			return err
		}
	}
	if failed {
		return fmt.Errorf("%s: %w", s.key, errDeleteFailed)
	}
	return nil
}

// Was a HOLE of the resume by HEAD on branch warm (38211c3): a clean-up that failed
// part-way left offsets/<k> while offsets/<k+1> was gone; a warm process whose last batch
// was k found offsets/<k> (HEAD), won the put of offsets/<k+1> and streamed from its own
// batch k's end, although another process had committed batches up to 20 meanwhile (idle
// ones: bronze could not tell), and the next process appended the same changes again.
// Clean now deletes by batch number, oldest first, stopping at the first failure, so with
// one Delete a request offsets/<k+1> outlives offsets/<k> and the put finds it; but one
// DeleteObjects request can still fail on offsets/<k> and delete offsets/<k+1..>. Then
// the facts table answers: a clean-up deletes only batches older than Retain, and the
// facts rows of every batch older than FactsEvery <= Retain are committed
// (*FactsEveryError otherwise), so the facts table holds batch k+1 and the warm process
// resumes cold, after batch 20, as a cold process does.
func TestWarmHoleCleanPartlyFailedDuplicates(t *testing.T) {
	for _, keys := range []bool{false, true} {
		t.Run(map[bool]string{false: "Delete", true: "DeleteObjects"}[keys], func(t *testing.T) {
			e := newEnv(t, cdcsim.Config{Seed: 71})
			a := e.deps()
			for i := 1; i <= 10; i++ { // A: batches 0..9
				e.exec(insert(i, i))
				if res, err := e.runOn(a, Options{}); err != nil || res.Batches != 1 || res.Rows != 1 {
					t.Fatalf("A %d: %+v %v", i, res, err)
				}
			}
			// B: batches 10..20, idle entries only; Retain 5, and its clean-up at batch 20
			// (batches 5..14) fails: with one Delete a key at offsets/5.json, the first;
			// with DeleteObjects at offsets/9.json (A's last), the others deleted.
			e.lake.WrapStore = func(s storage.Store) storage.Store {
				if keys {
					return failDeleteKeysOf{failDeleteOf{s, "offsets/9.json"}}
				}
				return failDeleteOf{s, "offsets/5.json"}
			}
			for n := 10; n <= 20; n++ {
				e.db.Advance(1)
				e.db.Idle()
				b := e.deps()
				b.Checkpoint.Retain = 5
				if res, err := e.runOn(b, Options{FactsEvery: 5}); err != nil || res.Batches != 1 || res.Rows != 0 {
					t.Fatalf("B batch %d: %+v %v", n, res, err)
				}
			}
			e.lake.WrapStore = nil
			for k, want := range map[string]bool{"offsets/9.json": true, "offsets/10.json": !keys, "offsets/20.json": true, "commits/20.json": true} {
				_, err := os.Stat(filepath.Join(e.spec.Checkpoint, k))
				if (err == nil) != want {
					t.Fatalf("precondition: %s exists=%v, want %v", k, err == nil, want)
				}
			}
			e.exec(insert(11, 11))
			if res, err := e.runOn(a, Options{}); err != nil || res.Batches != 1 || res.Rows != 1 || !res.CaughtUp {
				t.Fatalf("warm A: %+v %v; want one batch of one row after B's", res, err)
			}
			if _, err := os.Stat(filepath.Join(e.spec.Checkpoint, "offsets/21.json")); err != nil {
				t.Errorf("warm A did not resume after B's batch 20: %v", err)
			}
			e.exec(insert(12, 12))
			e.mustDrain(Options{}) // a cold process (the next Lambda container)
			e.assertConverged()
		})
	}
}

// lostOffsetsAnswer is a store whose offsets puts take effect but answer with an error
// while armed (a request whose response was lost). It passes the ETag on
// (storage.TagPutter), so a Checkpoint on it resumes warm.
type lostOffsetsAnswer struct {
	storage.Store
	armed *atomic.Bool
}

func (s lostOffsetsAnswer) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	_, err := s.PutIfAbsentTag(ctx, key, data)
	return err
}

func (s lostOffsetsAnswer) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	tag, err := storage.PutIfAbsentTag(ctx, s.Store, key, data)
	if err == nil && s.armed.Load() && strings.HasPrefix(key, "offsets/") {
		return "", errors.New("offsets put: connection reset (the put took effect)")
	}
	return tag, err
}

// Was a HOLE (a false refusal, no data harm) of the resume by HEAD on branch warm: a warm
// process's offsets put of batch 3 takes effect but its answer is lost, so the invocation
// fails and the process does not remember the file. Another process re-runs that pending
// batch to its commit. With no new change since, the warm process planned the same batch
// 3 again, its put found its own file (taken as its own retry), and the fresh batch's
// check found batch 3 in bronze: *CheckpointRewoundError on a checkpoint that is not
// rewound. Now the warm process checks bronze before its put, and its put must create the
// file (its own earlier one is no fence: checkpoint.Checkpoint.WriteNextOffsets): either
// sends it to a cold resume, which finds batch 3 committed. Both orders are covered: the
// other process's batch 3 appended a row (bronze tells), or nothing (the put tells).
func TestWarmHoleFalseRewoundAfterLostOffsetsAnswer(t *testing.T) {
	for _, idle := range []bool{false, true} {
		t.Run(map[bool]string{false: "rows", true: "idle"}[idle], func(t *testing.T) {
			e := newEnv(t, cdcsim.Config{Seed: 74})
			var armed atomic.Bool
			e.lake.WrapStore = func(s storage.Store) storage.Store { return lostOffsetsAnswer{s, &armed} }
			a := e.deps()
			e.lake.WrapStore = nil
			for i := 1; i <= 3; i++ { // A: batches 0..2
				e.exec(insert(i, i))
				if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
					t.Fatalf("A %d: %+v %v", i, res, err)
				}
			}
			if idle {
				e.db.Advance(1)
				e.db.Idle()
			} else {
				e.exec(insert(4, 4))
			}
			armed.Store(true)
			if _, err := e.runOn(a, Options{}); err == nil {
				t.Fatal("A with the offsets answer lost: no error")
			}
			armed.Store(false)
			if res, err := e.run(Options{}); err != nil || res.Batches != 1 { // B re-runs batch 3
				t.Fatalf("B: %+v %v", res, err)
			}
			if _, err := os.Stat(filepath.Join(e.spec.Checkpoint, "commits/3.json")); err != nil {
				t.Fatalf("precondition: B did not commit batch 3: %v", err)
			}
			if res, err := e.runOn(a, Options{}); err != nil || !res.CaughtUp || res.Batches != 0 {
				t.Errorf("warm A after B committed its pending batch: %+v %v; want caught up, no batch, no error", res, err)
			}
			e.assertConverged()
		})
	}
}
