package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// assertStartRefused checks that err is a ConfigError on options.startingLsn whose message
// holds every want, and that nothing was written to the checkpoint, bronze or facts.
func assertStartRefused(t *testing.T, e *env, err error, want ...string) {
	t.Helper()
	var ce *config.ConfigError
	if !errors.As(err, &ce) || !ce.Has("options.startingLsn") {
		t.Fatalf("err = %v, want a ConfigError on options.startingLsn", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q lacks %q", err, w)
		}
	}
	st, rerr := e.checkpointRaw().Resume(context.Background())
	if rerr != nil || !st.Fresh() {
		t.Fatalf("checkpoint after the refusal: %+v %v, want nothing written", st, rerr)
	}
	if rows := e.factsRows(); len(rows) != 0 {
		t.Fatalf("facts rows after the refusal: %+v", rows)
	}
}

// A mistaken startingLsn such as 0x12 (below anything the capture instance holds) is
// refused before anything is written, by a ConfigError that says what to set, not a
// DataLossError blaming CDC cleanup (issue 12 item 9). Fixing the spec then just works.
func TestStartingLsnTypoRefusedBeforeWriting(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 31})
	e.exec(insert(1, 1))
	e.exec(insert(2, 2))
	e.spec.Options.StartingLsn = "0x12"
	_, err := e.run(Options{})
	assertStartRefused(t, e, err, "0x00000000000000000012", "below min_lsn", "earliest", "typo")
	e.spec.Options.StartingLsn = "EARLIEST"
	if res := e.mustDrain(Options{}); res.Rows != 2 {
		t.Fatalf("after fixing the spec: %+v, want both rows", res)
	}
	e.assertConverged()
}

// An explicit startingLsn that cleanup already passed is refused before anything is
// written (docs/reference/original-library.md §2.2 raised it at the first batch); with
// failOnDataLoss=false it is taken and the gap recorded.
func TestStartingLsnBelowMinLSN(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 18})
	first := e.exec(insert(1, 1))
	e.exec(insert(2, 2))
	mark := e.exec(insert(3, 3))
	if err := e.db.Cleanup("dbo_orders", mark); err != nil {
		t.Fatal(err)
	}
	e.spec.Options.StartingLsn = first.String()
	_, err := e.run(Options{})
	assertStartRefused(t, e, err, first.String(), "below min_lsn", mark.Prev().String(), "failOnDataLoss=false")
	no := false
	e.spec.Options.FailOnDataLoss = &no
	if res := e.mustDrain(Options{}); res.Rows != 1 {
		t.Fatalf("failOnDataLoss=false: %+v, want the one row cleanup left", res)
	}
	skipped := 0
	for _, r := range e.factsRows() {
		if r.Event == "data_skipped" {
			skipped++
		}
	}
	if skipped != 1 {
		t.Fatalf("%d data_skipped rows, want 1", skipped)
	}
}

// A startingLsn above max_lsn is not an LSN this database has written (another server,
// a typo): refused before anything is written.
func TestStartingLsnAboveMaxRefused(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 32})
	e.exec(insert(1, 1))
	e.spec.Options.StartingLsn = "0x7FFFFFFF000000010001"
	_, err := e.run(Options{})
	assertStartRefused(t, e, err, "0x7FFFFFFF000000010001", "above the source's max_lsn", "another server")
}

// writeStaleFirst writes offsets/0 as a first run of an older version (no Starting) or
// of a different startingLsn (Starting set) would have left it: planned, never committed.
func writeStaleFirst(t *testing.T, e *env, start lsn.LSN, starting string) {
	t.Helper()
	max, err := e.db.MaxLSN(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := checkpoint.Batch{ID: 0, Start: lsn.Offset{LSN: start}, End: lsn.Offset{LSN: max}, Starting: starting}
	if err := e.checkpointRaw().WriteOffsets(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

// A fresh checkpoint whose batch 0 was planned from a bad start and never committed (the
// offsets file an older version wrote before failing with DataLossError) no longer
// blocks the stream: once the spec is fixed, batch 0 is planned again from the new start
// (issue 12 item 9).
func TestChangedStartTakenBeforeFirstCommit(t *testing.T) {
	for _, starting := range []string{"", "0x00000000000000000012"} {
		e := newEnv(t, cdcsim.Config{Seed: 33})
		e.exec(insert(1, 1))
		e.exec(insert(2, 2))
		writeStaleFirst(t, e, lsn.MustParse("0x12"), starting)
		if starting == "" {
			// An old file without Starting is retaken only for an explicit other LSN.
			e.spec.Options.StartingLsn = "earliest"
			if _, err := e.run(Options{}); err == nil {
				t.Fatal("the stale batch 0 of an older version was retaken for a keyword start")
			}
			min, _ := e.db.MinLSN(context.Background(), "dbo_orders")
			e.spec.Options.StartingLsn = min.Prev().String()
		} else {
			e.spec.Options.StartingLsn = "earliest"
		}
		if res := e.mustDrain(Options{}); res.Rows != 2 {
			t.Fatalf("starting %q: %+v, want both rows from the new start", starting, res)
		}
		e.assertConverged()
		if !strings.Contains(e.logs.String(), "startingLsn changed before batch 0 committed") {
			t.Errorf("no log line says the start was retaken: %s", e.logs.String())
		}
	}
}

// Once batch 0 is committed, a changed startingLsn does not move it: the checkpoint's
// range stands, and a warning says a new start needs a new checkpoint and app_id.
func TestChangedStartAfterFirstCommitKept(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 34})
	e.exec(insert(1, 1))
	e.exec(insert(2, 2))
	e.spec.Options.StartingLsn = "earliest"
	if res := e.mustDrain(Options{}); res.Rows != 2 {
		t.Fatalf("first drain: %+v", res)
	}
	e.spec.Options.StartingLsn = "latest"
	e.exec(insert(3, 3))
	if res := e.mustDrain(Options{}); res.Rows != 1 {
		t.Fatalf("after the spec change: %+v, want the new row read from the checkpoint", res)
	}
	e.assertConverged()
}

// A batch 0 killed after its bronze commit and before its facts commit is in bronze: a
// startingLsn changed now does not move it (its rows are written); the rerun finishes
// it from its own range and a warning says the start stands.
func TestChangedStartAfterPartialFirstCommitKept(t *testing.T) {
	clean := &deltatest.Faults{}
	e := killedEnv(t, testlake.Local, clean)
	e.mustDrain(Options{})
	k := 0
	for i, op := range clean.Ops() {
		if strings.HasPrefix(op, "log.Write") { // batch 0's bronze commit
			k = i + 1
			break
		}
	}
	e = killedEnv(t, testlake.Local, &deltatest.Faults{KillAt: k + 1})
	if _, err := e.run(Options{}); err == nil {
		t.Fatalf("kill after call %d did not stop the run", k)
	}
	e.lake.Faults = nil
	e.spec.Options.StartingLsn = "latest"
	e.mustDrain(Options{})
	e.assertConverged()
	if !strings.Contains(e.logs.String(), "its start stands") {
		t.Errorf("no warning that the changed start was not taken: %s", e.logs.String())
	}
}
