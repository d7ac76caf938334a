package snapshot_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
)

// version is bronze's version (-1 before its first commit).
func (e *env) version() int64 {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return snap.Version()
}

// stamp is the stamp a snapshot would record now (snapshot.StampLSN of dbo_t) with its
// commit time.
func (e *env) stamp() lsn.Offset {
	e.t.Helper()
	ctx := context.Background()
	list, err := e.db.CaptureInstances(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	ci, err := source.Resolve(list, "dbo_t")
	if err != nil {
		e.t.Fatal(err)
	}
	l, err := snapshot.StampLSN(ctx, e.db, ci)
	if err != nil {
		e.t.Fatal(err)
	}
	ts, _, err := e.db.CommitTime(ctx, l)
	if err != nil {
		e.t.Fatal(err)
	}
	return lsn.At(l, ts)
}

// commit moves max_lsn on by one committed change.
func (e *env) commit(i int) {
	e.exec(func(tx *cdcsim.Txn) error { _, err := tx.Insert("t", e.kc.row(i)); return err })
}

// The stamp is max_lsn, or start_lsn − 1 of a capture instance capture has not reached.
func TestStampUsesStartLSNBeforeCapture(t *testing.T) {
	e := newEnv(t, keyCases[0], 1)
	e.commit(2) // capture reaches the instance: max_lsn is its change's commit
	ctx := context.Background()
	max := e.stamp().LSN
	ci := source.CaptureInstance{Name: "dbo_t", StartLSN: max.Next().Next()}
	l, err := snapshot.StampLSN(ctx, e.db, ci)
	if err != nil || l != ci.StartLSN.Prev() {
		t.Fatalf("stamp %s (%v), want start_lsn-1 %s", l, err, ci.StartLSN.Prev())
	}
	ci.StartLSN = lsn.MustParse("0x00000000000000000002")
	if l, _ = snapshot.StampLSN(ctx, e.db, ci); l != max {
		t.Fatalf("stamp %s, want max_lsn %s", l, max)
	}
}

// One run reads every range once into one commit of snapshot rows stamped L = max_lsn, and
// writes one snapshot_open and one bootstrap row; a rerun reads and writes nothing.
func TestRunTakesSnapshotOnce(t *testing.T) {
	e := newEnv(t, keyCases[0], 100)
	e.spec.Options.NumPartitions = 4
	e.commit(101) // a stamp that is a commit's, with its commit time
	want := e.stamp()
	off, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	if off != want || !off.HasTime() {
		t.Fatalf("offset %v, want max_lsn %v", off, want)
	}
	if reads, v := e.db.Calls("ReadTable"), e.version(); reads != 4 || v != 0 {
		t.Fatalf("reads %d, bronze version %d; want 4 reads into one commit", reads, v)
	}
	if rows := snapshotRows(t, e); len(rows) != 1 || rows[off.LSN.String()] != 101 {
		t.Fatalf("snapshot rows by LSN %v, want 101 at %s", rows, off.LSN)
	}
	checkSnapshotColumns(t, e)
	fr := e.factsRows()
	if count(fr, facts.EventSnapshotOpen) != 1 || count(fr, facts.EventBootstrap) != 1 {
		t.Fatalf("facts rows %+v", fr)
	}
	for _, r := range fr {
		if r.Event == facts.EventBootstrap && (r.Rows == nil || *r.Rows != 101 || r.DurationMs == nil || r.MaxLSN != off.LSN.String()) {
			t.Fatalf("bootstrap row %+v", r)
		}
	}
	again, err := e.run()
	if err != nil || again != off {
		t.Fatalf("rerun: %v %v, want %v", again, err, off)
	}
	if reads, v := e.db.Calls("ReadTable"), e.version(); reads != 4 || v != 0 || len(e.factsRows()) != 2 {
		t.Fatalf("rerun: reads %d, version %d, facts rows %d", reads, v, len(e.factsRows()))
	}
}

// checkSnapshotColumns checks every bronze row is a snapshot row: _operation 0,
// _start_lsn = _snapshot, and the change-only columns NULL.
func checkSnapshotColumns(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: []string{bronze.ColOperation, bronze.ColStartLSN, bronze.ColSnapshot,
		bronze.ColSeqval, bronze.ColCommandID, bronze.ColBatchID, bronze.ColChunk}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		op, start, sn := rec.Column(0).(*array.Int32), rec.Column(1).(*array.String), rec.Column(2).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			if op.Value(i) != 0 || start.Value(i) != sn.Value(i) {
				t.Fatalf("row %d: _operation %d, _start_lsn %s, _snapshot %s", i, op.Value(i), start.Value(i), sn.Value(i))
			}
		}
		for c := 3; c < 7; c++ {
			if rec.Column(c).NullN() != int(rec.NumRows()) {
				t.Errorf("%s is not NULL on snapshot rows", rec.Schema().Field(c).Name)
			}
		}
		rec.Release()
	}
}

// A checkpoint with offsets resumes: Open reads nothing and writes no facts row.
func TestOpenResumesFromCheckpoint(t *testing.T) {
	e := newEnv(t, keyCases[0], 10)
	ctx := context.Background()
	cp := checkpoint.New(e.lake.RawStore(e.spec.Checkpoint), e.spec.AppID)
	start := lsn.At(lsn.MustParse("0x00000001000000100001"), time.Date(2026, 10, 1, 13, 0, 0, 0, time.UTC))
	if err := cp.WriteOffsets(ctx, checkpoint.Batch{ID: 0, Start: start, End: e.stamp()}); err != nil {
		t.Fatal(err)
	}
	res, err := snapshot.Open(ctx, e.deps())
	if err != nil || res.Status != snapshot.Resume || res.Snapshot != start {
		t.Fatalf("open with a pending batch: %+v %v, want resume at its start %v", res, err, start)
	}
	if err := cp.WriteCommit(ctx, checkpoint.Commit{ID: 0}); err != nil {
		t.Fatal(err)
	}
	res, err = snapshot.Open(ctx, e.deps())
	if err != nil || res.Status != snapshot.Resume || res.Snapshot != e.stamp() {
		t.Fatalf("open with a committed batch: %+v %v, want resume at its end", res, err)
	}
	if e.db.Calls("ReadTable") != 0 || len(e.factsRows()) != 0 {
		t.Fatal("a resuming open read the table or wrote facts rows")
	}
	// Standalone has no checkpoint to resume from: it opens a snapshot.
	e.opts.Standalone = true
	if res, err := snapshot.Open(ctx, e.deps()); err != nil || res.Status != snapshot.Opened {
		t.Fatalf("standalone open: %+v %v", res, err)
	}
}

// The pitfall of deleted snapshot rows: a bronze without them reads the table again; the
// bootstrap row, written once, keeps the first snapshot's count.
func TestDeletedSnapshotRowsAreReadAgain(t *testing.T) {
	e := newEnv(t, keyCases[0], 5)
	if _, err := e.run(); err != nil {
		t.Fatal(err)
	}
	e.spec.Bronze = e.lake.URL("bronze-emptied") // someone deleted the operation-0 rows
	e.commit(6)
	reads := e.db.Calls("ReadTable")
	off, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	if e.db.Calls("ReadTable") == reads || snapshotRows(t, e)[off.LSN.String()] != 6 {
		t.Fatalf("the table was not read again: reads %d -> %d, rows %v", reads, e.db.Calls("ReadTable"), snapshotRows(t, e))
	}
	for _, r := range e.factsRows() {
		if r.Event == facts.EventBootstrap && (r.Rows == nil || *r.Rows != 5) {
			t.Fatalf("bootstrap row rewritten: %+v", r)
		}
	}
}

// A standalone snapshot writes no facts rows; with resnapshot it takes a new one at the
// new max_lsn.
func TestStandaloneWritesNoFactsRows(t *testing.T) {
	e := newEnv(t, keyCases[0], 5)
	e.opts.Standalone = true
	if _, err := e.run(); err != nil {
		t.Fatal(err)
	}
	if len(e.factsRows()) != 0 || e.version() != 0 {
		t.Fatalf("facts rows %d, bronze version %d", len(e.factsRows()), e.version())
	}
	e.opts.Resnapshot = true
	e.commit(6)
	off, err := e.run()
	if err != nil || off != e.stamp() || e.version() != 1 {
		t.Fatalf("resnapshot %v %v (max_lsn %v), bronze version %d", off, err, e.stamp(), e.version())
	}
}

// A resnapshot whose stamp equals the LSN of a snapshot bronze already holds (nothing was
// committed since) reads nothing: the table at that LSN is already there, and reading it
// again would only leave orphan Parquet files behind a skipped commit.
func TestResnapshotAtTheSameLSNReadsNothing(t *testing.T) {
	e := newEnv(t, keyCases[0], 20)
	e.opts.Standalone = true
	first, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	reads := e.db.Calls("ReadTable")
	e.opts.Resnapshot = true
	again, err := e.run()
	if err != nil || again != first || e.db.Calls("ReadTable") != reads || e.version() != 0 {
		t.Fatalf("resnapshot at the same LSN: %v %v (first %v), reads %d -> %d, version %d", again, err, first, reads, e.db.Calls("ReadTable"), e.version())
	}
}

// Commit before every range is read names the first missing range.
func TestCommitBeforeEveryRangeIsRead(t *testing.T) {
	e := newEnv(t, keyCases[0], 30)
	ctx := context.Background()
	open, err := snapshot.Open(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := snapshot.Plan(ctx, e.deps(), open.Snapshot)
	if err != nil || len(plan.Ranges) != 3 {
		t.Fatalf("plan %+v %v", plan, err)
	}
	if _, err := snapshot.Read(ctx, e.deps(), open.Snapshot, plan.Ranges[0]); err != nil {
		t.Fatal(err)
	}
	_, err = snapshot.Commit(ctx, e.deps(), open.Snapshot)
	var mr *snapshot.MissingRangeError
	if !errors.As(err, &mr) || mr.Range != 1 || mr.Snapshot != open.Snapshot.LSN {
		t.Fatalf("commit: %v, want *MissingRangeError for range 1", err)
	}
	if e.version() != -1 {
		t.Fatal("a refused commit wrote bronze")
	}
}

// However big the table, a plan holds at most MaxRanges ranges (each grows instead), and
// they still tile it: every row is read once.
func TestPlanCapsRangeCount(t *testing.T) {
	e := newEnv(t, keyCases[0], 100)
	ctx := context.Background()
	e.spec.Options.NumPartitions = 2
	e.opts.MaxRangeRows = 1
	e.opts.MaxRanges = 7
	open, err := snapshot.Open(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := snapshot.Plan(ctx, e.deps(), open.Snapshot)
	if err != nil || len(plan.Ranges) != 7 {
		t.Fatalf("plan: %d ranges, %v; want the cap, 7", len(plan.Ranges), err)
	}
	if err := snapshot.ReadAll(ctx, e.deps(), open.Snapshot, plan); err != nil {
		t.Fatal(err)
	}
	if res, err := snapshot.Commit(ctx, e.deps(), open.Snapshot); err != nil || res.Rows == nil || *res.Rows != 100 {
		t.Fatalf("commit %+v %v", res, err)
	}
}

// A table whose row estimate puts more than MaxRangeRows in a range is cut into more
// ranges than connections; every range is read, into one commit.
func TestPlanCutsMoreRangesThanConnectionsForBigTables(t *testing.T) {
	e := newEnv(t, keyCases[0], 100)
	ctx := context.Background()
	e.spec.Options.NumPartitions = 2
	e.opts.MaxRangeRows = 10
	open, err := snapshot.Open(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := snapshot.Plan(ctx, e.deps(), open.Snapshot)
	if err != nil || plan.NumPartitions != 2 || len(plan.Ranges) != 10 {
		t.Fatalf("plan: %+v %v; want 2 at once and 10 ranges", plan, err)
	}
	if err := snapshot.ReadAll(ctx, e.deps(), open.Snapshot, plan); err != nil {
		t.Fatal(err)
	}
	res, err := snapshot.Commit(ctx, e.deps(), open.Snapshot)
	if err != nil || res.Rows == nil || *res.Rows != 100 || snapshotRows(t, e)[open.Snapshot.LSN.String()] != 100 {
		t.Fatalf("commit %+v %v, rows %v", res, err, snapshotRows(t, e))
	}
}

// A read event whose range index is outside the plan is an EventError naming the plan's
// ranges (it was a PlanNotFoundError, "run the plan step first", though the plan exists),
// and reads and writes nothing (issue 12 item 7).
func TestReadOfARangeOutsideThePlanIsAnEventError(t *testing.T) {
	e := newEnv(t, keyCases[0], 30)
	ctx := context.Background()
	open, err := snapshot.Open(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Plan(ctx, e.deps(), open.Snapshot); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{-1, 3, 1 << 40} {
		_, err := snapshot.Read(ctx, e.deps(), open.Snapshot, snapshot.Range{Index: i})
		var ee *snapshot.EventError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), "ranges 0..2") {
			t.Fatalf("read of range %d: %v, want an EventError naming ranges 0..2", i, err)
		}
	}
}

// One in-process Run reads no staging file back from the store: each step finds what an
// earlier step of the same Run wrote in memory (runStaging). Every file is still written,
// once, so the machine's steps run alone, and a Run after a failed one, read them.
func TestRunReadsItsStagingFromMemory(t *testing.T) {
	e := newEnv(t, keyCases[0], 100)
	e.spec.Options.NumPartitions = 4
	f := &deltatest.Faults{}
	e.lake.Faults = f
	if _, err := e.run(); err != nil {
		t.Fatal(err)
	}
	puts := map[string]int{}
	for _, op := range f.Ops() {
		verb, key, _ := strings.Cut(op, " ")
		if !strings.HasPrefix(key, "snapshots/") {
			continue
		}
		switch verb {
		case "store.Put":
			puts[key]++
		case "store.Get", "store.GetRange":
			t.Errorf("the run read %s back from the store", key)
		}
	}
	if len(puts) != 6 { // open.json, plan.json, 4 range manifests
		t.Errorf("staging files written: %v, want open, plan and 4 manifests", puts)
	}
	for k, n := range puts {
		if n != 1 {
			t.Errorf("%s written %d times", k, n)
		}
	}
	if reads := e.db.Calls("ReadTable"); reads != 4 {
		t.Fatalf("reads %d, want 4", reads)
	}
}

// A bootstrap hands the stream its start once its snapshot and bootstrap row are committed
// (checkpoint.Start, docs/stream.md "Where a fresh checkpoint starts"); a standalone
// snapshot hands none. A re-snapshot removes the older start before anything else, so a
// crash before it hands over its own leaves none (the stream then reads the facts table),
// and once committed hands over its own.
func TestBootstrapHandsOverItsStart(t *testing.T) {
	ctx := context.Background()
	start := func(e *env) *lsn.LSN {
		t.Helper()
		st, err := checkpoint.New(e.lake.RawStore(e.spec.Checkpoint), e.spec.AppID).Resume(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Start == nil {
			return nil
		}
		return &st.Start.Snapshot.LSN
	}
	alone := newEnv(t, keyCases[0], 5)
	alone.opts.Standalone = true
	if _, err := alone.run(); err != nil {
		t.Fatal(err)
	}
	if l := start(alone); l != nil {
		t.Errorf("a standalone snapshot handed the stream a start at %s", l)
	}

	e := newEnv(t, keyCases[0], 5)
	first, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	if l := start(e); l == nil || *l != first.LSN {
		t.Fatalf("start after the bootstrap: %v, want %s", l, first.LSN)
	}
	e.opts.Resnapshot = true
	e.commit(6)
	if _, err := snapshot.Open(ctx, e.deps()); err != nil {
		t.Fatal(err)
	}
	if l := start(e); l != nil {
		t.Fatalf("start after a re-snapshot's open: %s, want none", l)
	}
	again, err := e.run()
	if err != nil || again.LSN == first.LSN {
		t.Fatalf("resnapshot: %v %v", again, err)
	}
	if l := start(e); l == nil || *l != again.LSN {
		t.Fatalf("start after the re-snapshot: %v, want %s", l, again.LSN)
	}
}
