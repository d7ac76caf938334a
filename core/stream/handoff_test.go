package stream

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
)

// bootstrapDeps are the connections of the bootstrap machine's steps: the facts table, and
// the checkpoint prefix as staging.
func (e *env) bootstrapDeps() snapshot.Deps {
	return snapshot.Deps{Spec: e.spec, Source: e.db, Bronze: e.lake.RawTable(e.spec.Bronze), Facts: e.lake.RawTable(e.spec.FactsTable),
		Staging: e.lake.RawStore(e.spec.Checkpoint), Options: snapshot.Options{Now: e.db.Now}}
}

// bootstrapped is an env with bootstrap=true whose bootstrap committed rows 1 and 2, then
// row 3 inserted; it returns the snapshot's offset.
func bootstrapped(t *testing.T, seed uint64) (*env, lsn.Offset) {
	e := newEnv(t, cdcsim.Config{Seed: seed})
	e.spec.Bootstrap, e.spec.Options.StartingLsn = true, ""
	e.exec(insert(1, 1))
	e.exec(insert(2, 2))
	off, err := snapshot.Run(t.Context(), e.bootstrapDeps())
	if err != nil {
		t.Fatal(err)
	}
	e.exec(insert(3, 3))
	return e, off
}

// A bootstrap hands the stream its start in the checkpoint (offsets/start-<L>.json): the
// stream's first invocation, in a new process, starts after the snapshot without reading
// the facts table (whose first rows wait with the others, docs/decisions/0013), and the
// stream converges exactly as when it looks for the snapshot in the facts table, which a
// checkpoint written before start files existed still makes it do.
func TestBootstrapHandsTheStreamItsStart(t *testing.T) {
	for _, handed := range []bool{true, false} {
		name := "handed"
		if !handed {
			name = "older checkpoint without the start file"
		}
		t.Run(name, func(t *testing.T) {
			e, off := bootstrapped(t, 51)
			st, err := e.checkpointRaw().Resume(t.Context())
			if err != nil || st.Start == nil || st.Start.Snapshot.LSN != off.LSN || !st.Fresh() {
				t.Fatalf("checkpoint after the bootstrap: %+v %v; want fresh with the start at %s", st, err, off.LSN)
			}
			if !handed {
				if err := e.lake.RawStore(e.spec.Checkpoint).Delete(t.Context(), checkpoint.StartKey(off.LSN)); err != nil {
					t.Fatal(err)
				}
			}
			// The facts table, with its own fault counter: every request it gets is named.
			f := &deltatest.Faults{}
			d := e.deps()
			was := e.lake.Faults
			e.lake.Faults = f
			d.Facts = e.lake.Table(e.spec.FactsTable)
			e.lake.Faults = was
			res, err := Run(t.Context(), e.spec, d, Options{Now: e.db.Now, MaxBatches: 1})
			if err != nil || res.Batches != 1 || res.Rows != 1 {
				t.Fatalf("first invocation: %+v %v; want one batch with row 3", res, err)
			}
			if ops := f.Ops(); handed && len(ops) != 0 {
				t.Errorf("the first batch after a handed start read the facts table: %q", ops)
			} else if !handed && len(ops) == 0 {
				t.Error("without the start file the stream did not look for its snapshot in the facts table")
			}
			e.exec(insert(4, 4))
			e.mustDrain(Options{})
			bst, lg := e.bronzeState()
			if lg.ByOp[0] != 2 || lg.ByOp[2] != 2 || len(bst.Rows) != 4 {
				t.Errorf("bronze %+v rows %v", lg, bst.Rows)
			}
			if lg.Duplicates != 0 {
				t.Errorf("bronze has %d duplicate changes", lg.Duplicates)
			}
			if d := rebuild.Diff(e.sourceState(), bst, 10); len(d) > 0 {
				t.Errorf("rebuilt state differs from the table:\n%s", joinLines(d))
			}
		})
	}
}

// A checkpoint rewound to its state right after the bootstrap (a restored copy: the start
// file, no batch) while bronze holds the stream's batches is refused before anything is
// written, as the facts table refuses one without a start file.
func TestHandedStartRefusesARewoundCheckpoint(t *testing.T) {
	e, _ := bootstrapped(t, 52)
	e.mustDrain(Options{})
	ck := e.lake.RawStore(e.spec.Checkpoint)
	var keys []string
	for info, err := range ck.List(t.Context(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := batchKey(info.Key); ok {
			keys = append(keys, info.Key)
		}
	}
	for _, k := range keys {
		if err := ck.Delete(t.Context(), k); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := e.checkpointRaw().Resume(t.Context()); err != nil || !st.Fresh() || st.Start == nil {
		t.Fatalf("rewound checkpoint: %+v %v; want fresh with its start", st, err)
	}
	e.exec(insert(4, 4))
	_, err := e.run(Options{})
	var rw *CheckpointRewoundError
	if !errors.As(err, &rw) || rw.Table != "bronze" || rw.FactsBatch != 0 {
		t.Fatalf("err = %v, want *CheckpointRewoundError of bronze's batch 0", err)
	}
	if st, _ := e.checkpointRaw().Resume(t.Context()); !st.Fresh() {
		t.Errorf("the refused run wrote to the checkpoint: %+v", st)
	}
}

// batchKey reports whether key is a batch's offsets or commit file.
func batchKey(key string) (string, bool) {
	for _, dir := range []string{checkpoint.OffsetsDir, checkpoint.CommitsDir} {
		if len(key) > len(dir) && key[:len(dir)] == dir && key[len(dir)] >= '0' && key[len(dir)] <= '9' {
			return key, true
		}
	}
	return "", false
}

// A checkpoint rewound by fewer batches than wait for their facts commit (restored from a
// copy a few batches old) is refused: the facts table's txn lags by up to FactsEvery
// batches (docs/decisions/0013), bronze's does not.
func TestRewoundWithinWaitingFactsRefused(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 53})
	for i := 1; i <= 5; i++ {
		e.exec(insert(i, i))
		if res, err := e.run(Options{MaxBatches: 1}); err != nil || res.Batches != 1 {
			t.Fatalf("batch of row %d: %+v %v", i, res, err)
		}
	}
	if rows, through := e.tableFactsRows(); through != 0 || len(rows) != 1 {
		t.Fatalf("facts table: %d rows through batch %d, want batch 0's row only", len(rows), through)
	}
	ck := e.lake.RawStore(e.spec.Checkpoint)
	for n := 3; n <= 4; n++ {
		for _, dir := range []string{checkpoint.OffsetsDir, checkpoint.CommitsDir} {
			if err := ck.Delete(t.Context(), fmt.Sprintf("%s%d.json", dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.exec(insert(6, 6))
	_, err := e.run(Options{})
	var rw *CheckpointRewoundError
	if !errors.As(err, &rw) || rw.Table != "bronze" || rw.Next != 3 || rw.FactsBatch != 4 {
		t.Fatalf("err = %v, want *CheckpointRewoundError: next batch 3, bronze holds batch 4", err)
	}
}
