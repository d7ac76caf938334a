package stream

// Review 3 of the warm resume by HEAD (docs/decisions/0017-warm-resume-by-head.md).
// The tests that found holes are named for what they check and say what was fixed.

import (
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
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
