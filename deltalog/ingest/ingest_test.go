package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

var schema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

func ids(from, n int) arrow.RecordBatch { return idsIn(memory.DefaultAllocator, from, n) }

func idsIn(mem memory.Allocator, from, n int) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Append(int64(i))
	}
	a := b.NewArray()
	defer a.Release()
	return array.NewRecordBatch(schema, []arrow.Array{a}, int64(n))
}

// stores are a local table folder and its log store, optionally through f.
func stores(t *testing.T, dir string, f *deltatest.Faults) (storage.Store, logstore.LogStore) {
	t.Helper()
	st, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := localfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if f != nil {
		return f.Store(st), f.LogStore(ls)
	}
	return st, ls
}

func open(t *testing.T, dir string, f *deltatest.Faults) *deltalog.Table {
	st, ls := stores(t, dir, f)
	return deltalog.Open(st, ls, deltalog.Options{RetryBaseDelay: 1})
}

// write writes recs through a Writer into t's folder.
func write(t *testing.T, tbl *deltalog.Table, recs ...arrow.RecordBatch) (Files, error) {
	t.Helper()
	ctx := context.Background()
	w := NewWriter(tbl.Store(), schema, parquetio.WriterOptions{})
	for _, r := range recs {
		if err := w.Write(ctx, r); err != nil {
			w.Abort(ctx)
			return Files{}, err
		}
	}
	return w.Close(ctx)
}

// scanIDs reads every id of the table.
func scanIDs(t *testing.T, tbl *deltalog.Table) []int64 {
	t.Helper()
	ctx := context.Background()
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version() < 0 {
		return nil
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []int64
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
		rec.Release()
	}
}

func TestAppendOnceThenReplay(t *testing.T) {
	ctx := context.Background()
	tbl := open(t, t.TempDir(), nil)
	r := ids(0, 100)
	defer r.Release()
	files, err := write(t, tbl, r)
	if err != nil {
		t.Fatal(err)
	}
	if files.Rows != 100 || len(files.Adds) != 1 || files.Bytes != files.Adds[0].Size || files.Adds[0].Stats == "" {
		t.Fatalf("files %+v", files)
	}
	c := Commit{AppID: "app", Version: 3, Schema: schema, Files: files, UserMetadata: `{"batch":3}`,
		Operation: "STREAMING UPDATE", OperationParameters: map[string]string{"epochId": "3"}}
	res, err := Append(ctx, tbl, nil, c)
	if err != nil || res.Version != 0 || res.Replayed {
		t.Fatalf("append: %+v %v", res, err)
	}
	snap, err := res.Snapshot(ctx)
	if err != nil || snap.Version() != 0 {
		t.Fatalf("snapshot after: %v %v", snap, err)
	}
	ci, ok := snap.CommitInfo(0)
	if !ok || ci.UserMetadata != `{"batch":3}` || ci.Operation != "STREAMING UPDATE" {
		t.Fatalf("commitInfo %+v", ci)
	}
	// The same txn again, with other files (a rerun that wrote its own): nothing written.
	again, err := write(t, tbl, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{3, 2} {
		c.Version, c.Files = v, again
		res, err = Append(ctx, tbl, nil, c)
		if err != nil || !res.Replayed || res.Version != 0 {
			t.Fatalf("replay of version %d: %+v %v", v, res, err)
		}
	}
	if got := scanIDs(t, tbl); len(got) != 100 {
		t.Fatalf("%d rows after the replays, want 100", len(got))
	}
	// A commit of the txn alone (no rows) records it.
	res, err = Append(ctx, tbl, nil, Commit{AppID: "empty", Version: 0, Schema: schema})
	if err != nil || res.Replayed || res.Version != 1 {
		t.Fatalf("txn-only commit: %+v %v", res, err)
	}
	if snap, _ := tbl.Snapshot(ctx); len(snap.Files()) != 1 {
		t.Fatalf("files %d", len(snap.Files()))
	}
}

// A writer whose table state predates the table's creation (it meant to create it) and
// loses that race appends to the winner's table instead of failing.
func TestAppendAdoptsATableCreatedMeanwhile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	late := open(t, dir, nil)
	stale, err := late.Snapshot(ctx)
	if err != nil || stale.Version() != -1 {
		t.Fatal(stale, err)
	}
	winner := open(t, dir, nil)
	r := ids(0, 5)
	defer r.Release()
	f1, _ := write(t, winner, r)
	if _, err := Append(ctx, winner, nil, Commit{AppID: "a", Version: 0, Schema: schema, Files: f1}); err != nil {
		t.Fatal(err)
	}
	r2 := ids(5, 5)
	defer r2.Release()
	f2, _ := write(t, late, r2)
	res, err := Append(ctx, late, stale, Commit{AppID: "b", Version: 0, Schema: schema, Files: f2})
	if err != nil || res.Replayed || res.Version != 1 {
		t.Fatalf("late creator: %+v %v", res, err)
	}
	if got := scanIDs(t, late); len(got) != 10 {
		t.Fatalf("rows %v", got)
	}
}

// A schema that adds a column evolves the table; one that retypes a column is refused.
func TestAppendEvolvesTheSchema(t *testing.T) {
	ctx := context.Background()
	tbl := open(t, t.TempDir(), nil)
	if _, err := Append(ctx, tbl, nil, Commit{AppID: "a", Version: 0, Schema: schema}); err != nil {
		t.Fatal(err)
	}
	wider := arrow.NewSchema([]arrow.Field{schema.Field(0), {Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	if _, err := Append(ctx, tbl, nil, Commit{AppID: "a", Version: 1, Schema: wider}); err != nil {
		t.Fatal(err)
	}
	snap, _ := tbl.Snapshot(ctx)
	if sc, _ := snap.ArrowSchema(); sc.NumFields() != 2 {
		t.Fatalf("schema %v", sc)
	}
	retyped := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	_, err := Append(ctx, tbl, nil, Commit{AppID: "a", Version: 2, Schema: retyped})
	var sce *deltalog.SchemaChangeError
	if !errors.As(err, &sce) {
		t.Fatalf("retyped column: %v, want *deltalog.SchemaChangeError", err)
	}
}

// Killed at every external call of a write and its append (before the call lands, or
// after with its answer lost), then run again from scratch: the table holds the rows
// exactly once.
func TestKilledAnywhereThenRerunAppendsOnce(t *testing.T) {
	ctx := context.Background()
	r := ids(0, 50)
	defer r.Release()
	step := func(tbl *deltalog.Table) error {
		files, err := write(t, tbl, r)
		if err != nil {
			return err
		}
		_, err = Append(ctx, tbl, nil, Commit{AppID: "app", Version: 0, Schema: schema, Files: files})
		return err
	}
	clean := &deltatest.Faults{}
	if err := step(open(t, t.TempDir(), clean)); err != nil {
		t.Fatal(err)
	}
	ops := clean.Ops()
	for _, after := range []bool{false, true} {
		for k := 1; k <= len(ops); k++ {
			dir := t.TempDir()
			f := &deltatest.Faults{KillAt: k, After: after}
			if err := step(open(t, dir, f)); err == nil {
				t.Fatalf("kill at %d (%s) went unnoticed", k, ops[k-1])
			}
			if err := step(open(t, dir, nil)); err != nil {
				t.Fatalf("rerun after a kill at %d (%s, after %v): %v", k, ops[k-1], after, err)
			}
			if got := scanIDs(t, open(t, dir, nil)); len(got) != 50 {
				t.Fatalf("kill at %d (%s, after %v): %d rows, want 50", k, ops[k-1], after, len(got))
			}
		}
	}
}

func TestStageAndGather(t *testing.T) {
	ctx := context.Background()
	st, _ := stores(t, t.TempDir(), nil)
	tbl := open(t, t.TempDir(), nil)
	var keys []string
	for i := 0; i < 3; i++ {
		r := ids(i*10, 10)
		files, err := write(t, tbl, r)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, fmt.Sprintf("parts/%d.json", i))
		if err := Stage(ctx, st, keys[i], files); err != nil {
			t.Fatal(err)
		}
	}
	// A step without rows stages an empty manifest.
	keys = append(keys, "parts/empty.json")
	if err := Stage(ctx, st, keys[3], Files{}); err != nil {
		t.Fatal(err)
	}
	all, err := Gather(ctx, st, keys)
	if err != nil || all.Rows != 30 || len(all.Adds) != 3 {
		t.Fatalf("gathered %+v %v", all, err)
	}
	if _, err := Append(ctx, tbl, nil, Commit{AppID: "a", Version: 0, Schema: schema, Files: all}); err != nil {
		t.Fatal(err)
	}
	if got := scanIDs(t, tbl); len(got) != 30 {
		t.Fatalf("rows %d", len(got))
	}
	_, err = Gather(ctx, st, []string{keys[0], "parts/missing.json"})
	var ns *NotStagedError
	if !errors.As(err, &ns) || ns.Index != 1 || ns.Key != "parts/missing.json" {
		t.Fatalf("missing manifest: %v", err)
	}
}

func TestParallel(t *testing.T) {
	ctx := context.Background()
	var running, peak, done atomic.Int32
	err := Parallel(ctx, 20, 3, func(ctx context.Context, i int) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		done.Add(1)
		running.Add(-1)
		return nil
	})
	if err != nil || done.Load() != 20 || peak.Load() > 3 || peak.Load() < 1 {
		t.Fatalf("err %v, done %d, peak %d", err, done.Load(), peak.Load())
	}
	// The first error is returned, and the tasks still running see their ctx cancelled.
	boom := errors.New("boom")
	var cancelled atomic.Int32
	started := make(chan struct{})
	err = Parallel(ctx, 50, 2, func(ctx context.Context, i int) error {
		if i == 0 {
			<-started
			return boom
		}
		if i == 1 {
			close(started)
			<-ctx.Done()
			cancelled.Add(1)
			return ctx.Err()
		}
		return nil
	})
	if !errors.Is(err, boom) || cancelled.Load() != 1 {
		t.Fatalf("err %v, cancelled %d", err, cancelled.Load())
	}
	if err := Parallel(ctx, 0, 4, func(context.Context, int) error { return boom }); err != nil {
		t.Fatalf("no tasks: %v", err)
	}
}

// At width 1 the tasks run in order on the caller's goroutine (a panic in one reaches the
// caller's recover, which it could not from a goroutine of its own); the first error
// stops them and is returned; a ctx cancelled from outside starts no task and is the
// error.
func TestParallelWidthOne(t *testing.T) {
	ctx := context.Background()
	var order []int
	boom := errors.New("boom")
	err := Parallel(ctx, 5, 1, func(ctx context.Context, i int) error {
		order = append(order, i)
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || !slices.Equal(order, []int{0, 1, 2, 3}) {
		t.Fatalf("err %v, ran %v", err, order)
	}
	func() {
		defer func() {
			if r := recover(); r != "task" {
				t.Errorf("recovered %v, want the task's panic on the caller's goroutine", r)
			}
		}()
		_ = Parallel(ctx, 2, 1, func(context.Context, int) error { panic("task") })
	}()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	if err := Parallel(cctx, 3, 1, func(context.Context, int) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Errorf("cancelled: err %v, a task ran %v", err, ran)
	}
	var seen []int
	cctx, cancel = context.WithCancel(ctx)
	defer cancel()
	err = Parallel(cctx, 3, 0, func(ctx context.Context, i int) error {
		seen = append(seen, i)
		cancel() // the caller's ctx ends during the first task
		return nil
	})
	if !errors.Is(err, context.Canceled) || !slices.Equal(seen, []int{0}) {
		t.Errorf("cancelled during a task: err %v, ran %v", err, seen)
	}
}

// Copy writes what conv returns (the record itself or a new one), skips nil, and returns
// the read's own error unwrapped.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	tbl := open(t, t.TempDir(), nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	recs := []arrow.RecordBatch{idsIn(mem, 0, 3), idsIn(mem, 3, 4), idsIn(mem, 7, 5)}
	i := 0
	next := func(context.Context) (arrow.RecordBatch, error) {
		if i == len(recs) {
			return nil, io.EOF
		}
		i++
		return recs[i-1], nil
	}
	w := NewWriter(tbl.Store(), schema, parquetio.WriterOptions{})
	n := 0
	err := Copy(ctx, next, w, func(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		n++
		switch n {
		case 1:
			return rec, nil
		case 2:
			return nil, nil
		}
		return rec.NewSlice(0, 2), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files, err := w.Close(ctx)
	if err != nil || files.Rows != 5 {
		t.Fatalf("files %+v %v", files, err)
	}
	mem.AssertSize(t, 0) // Copy released every record it read, each once
	sentinel := errors.New("source gone")
	err = Copy(ctx, func(context.Context) (arrow.RecordBatch, error) { return nil, sentinel }, nil, nil)
	if err != sentinel {
		t.Fatalf("read error %v, want the read's own", err)
	}
}

func TestOptionsDefaultRowGroup(t *testing.T) {
	if got := Options(parquetio.WriterOptions{}).RowGroupBytes; got != DefaultRowGroupBytes {
		t.Fatalf("row group %d, want %d", got, DefaultRowGroupBytes)
	}
	if got := Options(parquetio.WriterOptions{RowGroupBytes: 1 << 20}).RowGroupBytes; got != 1<<20 {
		t.Fatalf("row group %d, want the caller's", got)
	}
}
