package checkpoint

import (
	"context"
	"errors"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
)

func newStore(t *testing.T) storage.Store {
	s, err := localstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func off(l string, ts string) lsn.Offset {
	t, err := lsn.ParseTime(ts)
	if err != nil {
		panic(err)
	}
	return lsn.At(lsn.MustParse(l), t)
}

func TestResumeRules(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	c := New(st, "app")
	s, err := c.Resume(ctx)
	if err != nil || !s.Fresh() || s.Next != 0 {
		t.Fatalf("fresh: %+v %v", s, err)
	}
	for n := int64(0); n < 12; n++ {
		b := Batch{ID: n, Start: off("0x01", ""), End: off("0x02", "2026-09-28T14:03:12.117")}
		if err := c.WriteOffsets(ctx, b); err != nil {
			t.Fatal(err)
		}
		if n == 11 {
			break // batch 11 is read but never committed
		}
		if err := c.WriteCommit(ctx, Commit{ID: n, Rows: 1}); err != nil {
			t.Fatal(err)
		}
	}
	s, err = c.Resume(ctx)
	if err != nil || s.Next != 11 || s.Pending == nil || s.Pending.ID != 11 || s.Last == nil || s.Last.ID != 10 {
		t.Fatalf("pending: %+v %v", s, err)
	}
	if s.Pending.End.LSN != lsn.MustParse("0x02") || !s.Pending.End.HasTime() {
		t.Errorf("pending range lost: %+v", s.Pending)
	}
	// Rewriting the same pending offsets by the same writer is accepted (a lost answer).
	if err := c.WriteOffsets(ctx, *s.Pending); err != nil {
		t.Errorf("own retry refused: %v", err)
	}
	if err := c.WriteCommit(ctx, Commit{ID: 11}); err != nil {
		t.Fatal(err)
	}
	s, _ = c.Resume(ctx)
	if s.Next != 12 || s.Pending != nil || s.Last.ID != 11 {
		t.Errorf("committed: %+v", s)
	}
	// Another app_id on this checkpoint is refused.
	var am *AppIDMismatchError
	if _, err := New(st, "other").Resume(ctx); !errors.As(err, &am) {
		t.Errorf("other app: %v", err)
	}
}

func TestSecondStreamLosesConditionalPut(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	a, b := New(st, "app"), New(st, "app")
	batch := Batch{ID: 0, End: off("0x05", "")}
	if err := a.WriteOffsets(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var ce *ConcurrentStreamError
	if err := b.WriteOffsets(ctx, batch); !errors.As(err, &ce) {
		t.Fatalf("second stream: %v, want ConcurrentStreamError", err)
	}
	if err := a.WriteCommit(ctx, Commit{ID: 0}); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteCommit(ctx, Commit{ID: 0}); !errors.As(err, &ce) {
		t.Fatalf("second commit: %v", err)
	}
}

func TestWriteFailureIsNotConcurrency(t *testing.T) {
	ctx := context.Background()
	f := &storagetest.Faults{}
	c := New(storagetest.NewFaulty(newStore(t), f), "app")
	f.FailOp("PutIfAbsent", 1, nil)
	err := c.WriteOffsets(ctx, Batch{ID: 0})
	var ce *ConcurrentStreamError
	if err == nil || errors.As(err, &ce) || !errors.Is(err, storagetest.ErrInjected) {
		t.Fatalf("err = %v", err)
	}
}

func TestClean(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	c := New(st, "app")
	c.Retain = 3
	for n := int64(0); n < 10; n++ {
		_ = c.WriteOffsets(ctx, Batch{ID: n})
		_ = c.WriteCommit(ctx, Commit{ID: n})
	}
	if err := c.Clean(ctx, 9); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range st.List(ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2*4 { // batches 6..9 kept
		t.Errorf("%d files left, want 8", n)
	}
	s, _ := c.Resume(ctx)
	if s.Next != 10 {
		t.Errorf("resume after clean: %+v", s)
	}
}
