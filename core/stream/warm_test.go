package stream

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

var errDied = errors.New("the process died after its offsets put")

// dieAfterOffsets is a store whose process dies right after a checkpoint offsets put took
// effect.
type dieAfterOffsets struct{ storage.Store }

func (s dieAfterOffsets) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	err := s.Store.PutIfAbsent(ctx, key, data)
	if err == nil && strings.HasPrefix(key, "offsets/") {
		return errDied
	}
	return err
}

// runOn runs one invocation on a process's kept connections d (a warm process).
func (e *env) runOn(d Deps, opts Options) (Result, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = e.db.Now
	}
	return Run(context.Background(), e.spec, d, opts)
}

// Process A streams on kept connections; process B (cold) runs batches between two of A's
// invocations. A's next invocation must not take its memory for the checkpoint: its
// listing shows B's batches, and it goes on after them, each change in bronze once. Then B
// leaves a batch pending (died after its offsets put): A re-runs that batch with B's range.
// (A warm A finds B's offsets file at its put, the fence, and resumes cold.)
func TestWarmProcessAfterAnotherProcess(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut} {
		t.Run(string(backend), func(t *testing.T) {
			e := newEnvOn(t, backend, cdcsim.Config{Seed: 62})
			a := e.deps()
			e.exec(insert(1, 1))
			if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
				t.Fatalf("A: %+v %v", res, err)
			}
			e.exec(insert(2, 2))
			e.exec(insert(3, 3))
			if res, err := e.run(Options{MaxBatches: 1}); err != nil || res.Rows == 0 { // B
				t.Fatalf("B: %+v %v", res, err)
			}
			e.exec(insert(4, 4))
			res, err := e.runOn(a, Options{})
			if err != nil || !res.CaughtUp {
				t.Fatalf("A after B: %+v %v", res, err)
			}
			// B again, killed right after its offsets put: batch pending.
			e.exec(insert(5, 5))
			e.lake.WrapStore = func(s storage.Store) storage.Store { return dieAfterOffsets{s} }
			if _, err := e.run(Options{}); !errors.Is(err, errDied) {
				t.Fatalf("B killed after its offsets: %v", err)
			}
			e.lake.WrapStore = nil
			e.exec(insert(6, 6))
			if res, err := e.runOn(a, Options{}); err != nil || !res.CaughtUp {
				t.Fatalf("A after B's pending batch: %+v %v", res, err)
			}
			e.assertConverged()
		})
	}
}

// A checkpoint rewound under a warm process (its newest batches deleted; deleted whole; or
// restored from an older copy) is refused as a cold process refuses it, not written over
// from the process's memory.
func TestWarmProcessRefusesARewoundCheckpoint(t *testing.T) {
	for _, how := range []string{"newest batch deleted", "deleted whole", "restored from a copy"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t, cdcsim.Config{Seed: 63})
			a := e.deps()
			copyDir := filepath.Join(t.TempDir(), "copy")
			for i := 1; i <= 3; i++ {
				e.exec(insert(i, i))
				if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
					t.Fatalf("A %d: %+v %v", i, res, err)
				}
				if i == 1 {
					if err := os.CopyFS(copyDir, os.DirFS(e.spec.Checkpoint)); err != nil {
						t.Fatal(err)
					}
				}
			}
			switch how {
			case "newest batch deleted":
				for _, k := range []string{"offsets/2.json", "commits/2.json"} {
					if err := os.Remove(filepath.Join(e.spec.Checkpoint, k)); err != nil {
						t.Fatal(err)
					}
				}
			case "deleted whole":
				if err := os.RemoveAll(e.spec.Checkpoint); err != nil {
					t.Fatal(err)
				}
			case "restored from a copy":
				if err := os.RemoveAll(e.spec.Checkpoint); err != nil {
					t.Fatal(err)
				}
				if err := os.CopyFS(e.spec.Checkpoint, os.DirFS(copyDir)); err != nil {
					t.Fatal(err)
				}
			}
			e.exec(insert(4, 4))
			_, err := e.runOn(a, Options{})
			var rw *CheckpointRewoundError
			if !errors.As(err, &rw) {
				t.Fatalf("warm A on a rewound checkpoint: %v, want *CheckpointRewoundError", err)
			}
		})
	}
}

// A warm process of generation 0 that committed batches itself still finds the attempt
// another process opened and the generation the recover steps committed.
func TestWarmProcessSeesAnotherProcessesResnapshot(t *testing.T) {
	e := newEnvOn(t, testlake.Local, cdcsim.Config{Seed: 65})
	e.spec.OnDataLoss = config.OnDataLossResnapshot
	a := e.deps()
	for i := 1; i <= 5; i++ {
		e.exec(insert(i, i))
		if _, err := e.runOn(a, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	e.purgeGap()
	e.exec(insert(7, 7))
	if res, err := e.run(Options{}); err != nil || res.Outcome != OutcomeResnapshotRequired { // B
		t.Fatalf("B after the purge: %+v, %v", res, err)
	}
	res, err := e.runOn(a, Options{})
	if err != nil || res.Outcome != OutcomeResnapshotRequired || res.Batches != 0 || res.Recovery == nil || res.Recovery.Attempt != 1 {
		t.Fatalf("warm A while B's attempt is open: %+v, %v; want resnapshot_required, attempt 1, no batch", res, err)
	}
	if _, err := Recover(t.Context(), e.recoverDeps()); err != nil {
		t.Fatalf("recover: %v", err)
	}
	e.exec(insert(12, 12))
	if res, err = e.runOn(a, Options{}); err != nil || res.Generation != 1 || res.Rows != 1 {
		t.Fatalf("warm A after the recovery: %+v, %v; want generation 1, 1 row", res, err)
	}
	e.exec(insert(13, 13))
	if res, err = e.runOn(a, Options{}); err != nil || res.Generation != 1 || res.Rows != 1 {
		t.Fatalf("warm A in generation 1: %+v, %v", res, err)
	}
	e.assertRecovered(1)
}

// A warm invocation lists neither offsets/ nor generations/: one HEAD of its last batch's
// offsets file, then the next batch's offsets put, the fence
// (checkpoint.Checkpoint.ResumeWarm, warmGenerations, warmFence), on local disk and on S3
// with conditional puts.
func TestWarmInvocationListsNoCheckpoint(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.S3CondPut} {
		t.Run(string(backend), func(t *testing.T) {
			e := newEnvOn(t, backend, cdcsim.Config{Seed: 61})
			f := &deltatest.Faults{}
			e.lake.Faults = f
			a := e.deps()
			for i := 1; i <= 3; i++ {
				e.exec(insert(i, i))
				if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
					t.Fatalf("invocation %d: %+v %v", i, res, err)
				}
			}
			before := len(f.Ops())
			e.exec(insert(4, 4))
			if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 || !res.CaughtUp {
				t.Fatalf("warm invocation: %+v %v", res, err)
			}
			var ck []string
			for _, op := range f.Ops()[before:] {
				if strings.Contains(op, "offsets/") || strings.Contains(op, "commits/") || strings.Contains(op, "generations/") {
					ck = append(ck, op)
				}
			}
			want := []string{"store.Head offsets/2.json", "store.PutIfAbsent offsets/3.json", "store.PutIfAbsent commits/3.json"}
			if strings.Join(ck, "|") != strings.Join(want, "|") {
				t.Errorf("checkpoint requests of a warm invocation:\n got %q\nwant %q", ck, want)
			}
			e.assertConverged()
		})
	}
}

// Through the DynamoDB log store a warm invocation reads the facts table and bronze in one
// DynamoDB request (a BatchGetItem of each table's newest entry known and the next:
// docs/decisions/0019-dynamo-warm-check-one-request.md), not a Query each, whether it
// runs a batch (then its commit's PutItem and UpdateItem) or finds nothing to do.
func TestWarmInvocationOneDynamoDBRead(t *testing.T) {
	e := newEnvOn(t, testlake.AWS, cdcsim.Config{Seed: 62})
	f := &deltatest.Faults{}
	e.lake.Faults = f
	a := e.deps()
	for i := 1; i <= 3; i++ {
		e.exec(insert(i, i))
		if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 {
			t.Fatalf("invocation %d: %+v %v", i, res, err)
		}
	}
	ddbOps := func(from int) []string {
		var ops []string
		for _, op := range f.Ops()[from:] {
			if strings.HasPrefix(op, "ddb.") || strings.HasPrefix(op, "log.Latest") {
				ops = append(ops, op)
			}
		}
		return ops
	}
	before := len(f.Ops())
	e.exec(insert(4, 4))
	if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 1 || !res.CaughtUp {
		t.Fatalf("warm invocation: %+v %v", res, err)
	}
	want := []string{"log.LatestWith", "ddb.BatchGetItem", "ddb.PutItem", "ddb.UpdateItem"}
	if got := ddbOps(before); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("DynamoDB requests of a warm invocation with a batch:\n got %q\nwant %q", got, want)
	}
	before = len(f.Ops())
	if res, err := e.runOn(a, Options{}); err != nil || res.Rows != 0 || !res.CaughtUp {
		t.Fatalf("idle warm invocation: %+v %v", res, err)
	}
	want = []string{"log.LatestWith", "ddb.BatchGetItem"}
	if got := ddbOps(before); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("DynamoDB requests of an idle warm invocation:\n got %q\nwant %q", got, want)
	}
	e.assertConverged()
}

// FactsEvery above the checkpoint's Retain is refused before any I/O: facts rows waiting
// in commit files a clean-up deletes would be lost, and a warm process relies on the
// facts table holding every batch a clean-up deleted (docs/decisions/0017).
func TestFactsEveryAboveRetainRefused(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 66})
	d := e.deps()
	d.Checkpoint.Retain = 5
	e.exec(insert(1, 1))
	var fe *FactsEveryError
	if _, err := e.runOn(d, Options{FactsEvery: 6}); !errors.As(err, &fe) || fe.FactsEvery != 6 || fe.Retain != 5 {
		t.Fatalf("FactsEvery 6, Retain 5: %v, want *FactsEveryError{6, 5}", err)
	}
	if _, err := os.Stat(filepath.Join(e.spec.Checkpoint, "offsets")); err == nil {
		t.Error("offsets/ written by a refused run")
	}
	if res, err := e.runOn(d, Options{FactsEvery: 5}); err != nil || res.Rows != 1 {
		t.Fatalf("FactsEvery 5, Retain 5: %+v %v", res, err)
	}
	// FactsEvery left unset under a Retain below DefaultFactsEvery takes the Retain: the
	// caller chose no value for the error to name. Batches 1..5 wait and the fifth
	// commits them, so no batch's rows wait past what the checkpoint keeps.
	for i := 2; i <= 6; i++ {
		e.exec(insert(i, i))
		if res, err := e.runOn(d, Options{FactsMaxDelay: 1000 * time.Hour}); err != nil || res.Rows != 1 {
			t.Fatalf("FactsEvery unset, Retain 5, batch %d: %+v %v", i-1, res, err)
		}
	}
	if got := e.factsBatchRows(); got != 6 {
		t.Errorf("facts table holds %d batch rows after batches 0..5 with FactsEvery unset and Retain 5, want 6", got)
	}
	if _, err := e.runOn(e.deps(), Options{FactsEvery: checkpoint.DefaultRetain + 1}); !errors.As(err, &fe) || fe.Retain != checkpoint.DefaultRetain {
		t.Errorf("FactsEvery above the default Retain: %v, want *FactsEveryError", err)
	}
}
