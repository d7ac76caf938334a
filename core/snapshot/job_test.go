package snapshot

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

type rig struct {
	src   *fakeSource
	br    *fakeBronze
	facts *fakeFacts
	job   *Job
}

func newRig(t *testing.T, n int) *rig {
	t.Helper()
	st, err := localstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{src: newFakeSource(n), br: newFakeBronze(), facts: newFakeFacts()}
	r.job = &Job{AppID: "orders-v1", Target: "mem://bronze", CaptureInstance: "dbo_t", NumPartitions: 4,
		Source: r.src, Bronze: r.br, Staging: st, Facts: r.facts}
	return r
}

func TestUniformBounds(t *testing.T) {
	cases := []struct {
		mn, mx int64
		n      int
		want   []int64
	}{
		{1, 100, 4, []int64{26, 51, 76}},
		{0, 2, 4, []int64{1, 2}},
		{5, 5, 4, nil},
		{-10, 9, 2, []int64{0}},
		{-1 << 63, 1<<63 - 1, 2, []int64{0}},
	}
	for _, c := range cases {
		if got := uniformBounds(c.mn, c.mx, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("uniformBounds(%d, %d, %d) = %v, want %v", c.mn, c.mx, c.n, got, c.want)
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	cols := []source.Column{{Name: "a", DataType: "bigint"}, {Name: "b", DataType: "uniqueidentifier"}, {Name: "c", DataType: "varbinary"}, {Name: "d", DataType: "bit"}}
	k := source.Key{int64(1 << 40), "6F9619FF-8B86-D011-B42D-00C04FC964FF", []byte{1, 0xab}, true}
	enc, err := encodeKey(k)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeKey(enc, cols)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, k) {
		t.Fatalf("round trip: %#v, want %#v", got, k)
	}
	if _, err := decodeKey([]any{"x"}, cols[:1]); err == nil {
		t.Fatal("a string decoded as bigint")
	}
}

func TestStampUsesStartLSNBeforeCapture(t *testing.T) {
	src := newFakeSource(1)
	ci := src.instances[0]
	ci.StartLSN = lsn.MustParse("0x00000030000000100001")
	l, err := StampLSN(context.Background(), src, ci)
	if err != nil {
		t.Fatal(err)
	}
	if want := ci.StartLSN.Prev(); l != want {
		t.Fatalf("stamp %s, want start_lsn-1 %s", l, want)
	}
	ci.StartLSN = lsn.MustParse("0x00000001000000100001")
	if l, _ = StampLSN(context.Background(), src, ci); l != src.maxLSN {
		t.Fatalf("stamp %s, want max_lsn %s", l, src.maxLSN)
	}
}

func TestRunTakesSnapshotOnce(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 100)
	off, err := r.job.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if off.LSN != r.src.maxLSN || lsn.FormatTime(off.CommitTS) != "2026-10-01T12:00:00.123" {
		t.Fatalf("offset %+v", off)
	}
	if r.br.rows() != 100 || r.br.commits != 1 || r.src.reads != 4 {
		t.Fatalf("rows %d commits %d reads %d", r.br.rows(), r.br.commits, r.src.reads)
	}
	rec := r.br.committed[0]
	sch := rec.Schema()
	col := func(n string) int { return sch.FieldIndices(n)[0] }
	if v := rec.Column(col(bronze.ColStartLSN)).(*array.String).Value(0); v != off.LSN.String() {
		t.Errorf("_start_lsn %s", v)
	}
	if v := rec.Column(col(bronze.ColOperation)).(*array.Int32).Value(0); v != 0 {
		t.Errorf("_operation %d", v)
	}
	for _, n := range []string{bronze.ColSeqval, bronze.ColCommandID, bronze.ColBatchID, bronze.ColChunk} {
		if rec.Column(col(n)).NullN() != int(rec.NumRows()) {
			t.Errorf("%s not NULL", n)
		}
	}
	if len(r.facts.opens) != 1 || r.facts.opens[0].LSN != off.LSN.String() {
		t.Fatalf("snapshot_open rows %+v", r.facts.opens)
	}
	b := r.facts.boots["orders-v1"]
	if b.Rows == nil || *b.Rows != 100 || b.DurationMs == nil || b.LSN != off.LSN.String() {
		t.Fatalf("bootstrap row %+v", b)
	}

	// A rerun of the whole flow reads nothing and commits nothing.
	off2, err := r.job.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if off2 != off || r.src.reads != 4 || r.br.commits != 1 || len(r.facts.opens) != 1 {
		t.Fatalf("rerun: %+v reads %d commits %d opens %d", off2, r.src.reads, r.br.commits, len(r.facts.opens))
	}
}

func TestOpenFindsSnapshotUnderAnotherCaptureInstanceCase(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 10)
	if _, err := r.job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	// The instance is recreated as DBO_T (a newer instance of the same table).
	r.src.instances = append(r.src.instances, source.CaptureInstance{Name: "DBO_T2", SourceSchema: "DBO", SourceTable: "T", StartLSN: r.src.maxLSN.Next()})
	r.job.CaptureInstance = "dbo_T2"
	res, err := r.job.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Found || r.src.reads != 4 {
		t.Fatalf("open: %+v, reads %d", res, r.src.reads)
	}
}

func TestOpenResumesFromCheckpoint(t *testing.T) {
	r := newRig(t, 10)
	off := lsn.At(lsn.MustParse("0x00000021000000100001"), time.Date(2026, 10, 1, 13, 0, 0, 0, time.UTC))
	r.job.Checkpoint = fakeCheckpoint{off: &off}
	res, err := r.job.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != Resume || res.Snapshot != off || len(r.facts.opens) != 0 {
		t.Fatalf("open %+v opens %d", res, len(r.facts.opens))
	}
}

func TestModeLock(t *testing.T) {
	r := newRig(t, 10)
	r.facts.openSnaps = []OpenSnapshot{{LSN: "0x00000001000000100001", Mode: "chunked"}}
	_, err := r.job.Open(context.Background())
	var ml *ModeLockError
	if !errors.As(err, &ml) || ml.Mode != "chunked" {
		t.Fatalf("err %v", err)
	}
	// An open full snapshot (a killed run) does not hold a full run back.
	r.facts.openSnaps = []OpenSnapshot{{LSN: "0x00000001000000100001", Mode: "full"}}
	if _, err := r.job.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestKilledRunThenFullRerun(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 20)
	open, err := r.job.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.job.Plan(ctx, open.Snapshot); err != nil {
		t.Fatal(err)
	}
	// Killed here: the snapshot is open in the facts, bronze holds nothing.
	r.src.maxLSN = r.src.maxLSN.Next()
	off, err := r.job.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if off.LSN != r.src.maxLSN || r.br.rows() != 20 || r.br.commits != 1 || len(r.facts.opens) != 2 {
		t.Fatalf("offset %+v rows %d commits %d opens %d", off, r.br.rows(), r.br.commits, len(r.facts.opens))
	}
}

func TestDeletedSnapshotRowsAreReadAgain(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 5)
	if _, err := r.job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	r.br.committed = nil // the pitfall: someone deleted the operation-0 rows
	r.src.maxLSN = r.src.maxLSN.Next()
	if _, err := r.job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if r.src.reads != 8 || r.br.commits != 2 {
		t.Fatalf("reads %d commits %d: the table must be read again", r.src.reads, r.br.commits)
	}
	if b := r.facts.boots["orders-v1"]; b.Rows == nil || *b.Rows != 5 {
		t.Fatalf("bootstrap row rewritten: %+v", b)
	}
}

func TestStandaloneWritesNoFactsRows(t *testing.T) {
	r := newRig(t, 5)
	r.job.Standalone = true
	if _, err := r.job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.facts.opens) != 0 || len(r.facts.boots) != 0 || r.br.rows() != 5 {
		t.Fatalf("opens %d boots %d rows %d", len(r.facts.opens), len(r.facts.boots), r.br.rows())
	}
	r.job.Resnapshot = true
	r.src.maxLSN = r.src.maxLSN.Next()
	off, err := r.job.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if off.LSN != r.src.maxLSN || r.br.commits != 2 {
		t.Fatalf("resnapshot %+v commits %d", off, r.br.commits)
	}
}

// Every external call of every step fails once; rerunning the failed step (as Step
// Functions' Retry does) gives one snapshot commit and one bootstrap row.
func TestFaultThenRerunOfTheStep(t *testing.T) {
	faults := []struct{ where, op string }{
		{"src", "CaptureInstances"}, {"src", "MaxLSN"}, {"src", "ReadTable"}, {"src", "Next"},
		{"bronze", "WholeSnapshots"}, {"bronze", "Write"}, {"bronze", "AppendOnce"}, {"bronze", "AppendOnce.after"},
	}
	for _, f := range faults {
		t.Run(f.op, func(t *testing.T) {
			ctx := context.Background()
			r := newRig(t, 30)
			boom := &source.TransientError{Op: f.op, Err: errors.New("boom")}
			if f.where == "src" {
				r.src.fail[f.op] = boom
			} else {
				r.br.failOnce[f.op] = boom
			}
			retry := func(step func() error) {
				t.Helper()
				if err := step(); err != nil {
					if !source.IsTransient(err) {
						t.Fatalf("%s: %v is not transient", f.op, err)
					}
					if err := step(); err != nil {
						t.Fatal(err)
					}
				}
			}
			var open OpenResult
			retry(func() (err error) { open, err = r.job.Open(ctx); return })
			var plan PlanResult
			retry(func() (err error) { plan, err = r.job.Plan(ctx, open.Snapshot); return })
			for _, rg := range plan.Ranges {
				retry(func() error { _, err := r.job.Read(ctx, open.Snapshot, rg); return err })
			}
			retry(func() error { _, err := r.job.Commit(ctx, open.Snapshot); return err })
			off, err := r.job.Close(ctx, open)
			if err != nil {
				t.Fatal(err)
			}
			if off.LSN != r.src.maxLSN || r.br.rows() != 30 || r.br.commits != 1 || len(r.facts.boots) != 1 {
				t.Fatalf("rows %d commits %d boots %d", r.br.rows(), r.br.commits, len(r.facts.boots))
			}
		})
	}
}

func TestCommitBeforeEveryRangeIsRead(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 30)
	open, _ := r.job.Open(ctx)
	plan, _ := r.job.Plan(ctx, open.Snapshot)
	if _, err := r.job.Read(ctx, open.Snapshot, plan.Ranges[0]); err != nil {
		t.Fatal(err)
	}
	_, err := r.job.Commit(ctx, open.Snapshot)
	var mr *MissingRangeError
	if !errors.As(err, &mr) || mr.Range != 1 {
		t.Fatalf("err %v", err)
	}
}

func TestPlanCutsMoreRangesThanConnectionsForBigTables(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 100)
	r.src.estimate = 100
	r.job.NumPartitions = 2
	r.job.MaxRangeRows = 10
	open, err := r.job.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := r.job.Plan(ctx, open.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if plan.NumPartitions != 2 || len(plan.Ranges) != 10 {
		t.Fatalf("plan: %d at once, %d ranges; want 2 and 10", plan.NumPartitions, len(plan.Ranges))
	}
	if err := r.job.readAll(ctx, open.Snapshot, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := r.job.Commit(ctx, open.Snapshot); err != nil {
		t.Fatal(err)
	}
	if r.br.rows() != 100 {
		t.Fatalf("rows %d", r.br.rows())
	}
}

// A resnapshot whose stamp equals the LSN of a snapshot bronze already holds (nothing was
// committed since) reads nothing: the table at that LSN is already there, and reading it
// again would only leave orphan Parquet files behind a skipped commit.
func TestResnapshotAtTheSameLSNReadsNothing(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 20)
	r.job.Standalone = true
	first, err := r.job.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reads := r.src.reads
	r.job.Resnapshot = true
	again, err := r.job.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again != first || r.src.reads != reads || r.br.commits != 1 {
		t.Fatalf("resnapshot at the same LSN: %+v (first %+v), reads %d -> %d, commits %d", again, first, reads, r.src.reads, r.br.commits)
	}
}
