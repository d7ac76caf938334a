package storagetest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
)

func newLocal(t *testing.T) storage.Store {
	s, err := localstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFaultyFailsTheKthCall(t *testing.T) {
	f := storagetest.NewFaulty(newLocal(t), nil)
	ctx := t.Context()
	f.Faults.FailAt(2, nil)
	if err := f.PutIfAbsent(ctx, "a", []byte("1")); err != nil {
		t.Fatalf("call 1: %v", err)
	}
	if err := f.PutIfAbsent(ctx, "b", []byte("2")); !errors.Is(err, storagetest.ErrInjected) {
		t.Fatalf("call 2: err = %v, want ErrInjected", err)
	}
	if _, err := f.Head(ctx, "b"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the failed call reached the store: %v", err)
	}
	if got := strings.Join(f.Faults.Ops(), ","); got != "PutIfAbsent,PutIfAbsent,Head" {
		t.Fatalf("ops = %s", got)
	}
}

func TestFaultyFailFromKeepsFailing(t *testing.T) {
	f := storagetest.NewFaulty(newLocal(t), nil)
	boom := errors.New("boom")
	f.Faults.FailFrom(1, boom)
	for i := range 3 {
		if _, err := f.Head(t.Context(), "x"); !errors.Is(err, boom) {
			t.Fatalf("call %d: err = %v, want boom", i+1, err)
		}
	}
	for _, err := range f.List(t.Context(), "", "") {
		if !errors.Is(err, boom) {
			t.Fatalf("list: err = %v, want boom", err)
		}
	}
	f.Faults.Disarm()
	if _, err := f.Head(t.Context(), "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("after Disarm: %v", err)
	}
}

func TestFaultyFailOp(t *testing.T) {
	f := storagetest.NewFaulty(newLocal(t), nil)
	f.Faults.FailOp("Delete", 2, nil)
	ctx := t.Context()
	for i, want := range []bool{false, false, true, false} {
		f.Head(ctx, "x")
		err := f.Delete(ctx, "x")
		if got := errors.Is(err, storagetest.ErrInjected); got != want || (!want && err != nil) {
			t.Fatalf("delete %d: err = %v, want injected %v", i, err, want)
		}
		if i == 0 {
			f.Faults.FailOp("Delete", 2, nil)
		}
	}
}

func TestCounting(t *testing.T) {
	c := storagetest.NewCounting(newLocal(t), nil)
	ctx := t.Context()
	c.PutIfAbsent(ctx, "a", []byte("1"))
	c.CopyIfAbsent(ctx, "a", "b")
	c.Head(ctx, "b")
	c.Head(ctx, "c")
	if c.Counter.Total() != 4 || c.Counter.Count("Head") != 2 || c.Counter.Count("CopyIfAbsent") != 1 {
		t.Fatalf("counts = %v", c.Counter.Counts())
	}
	c.Counter.Reset()
	if c.Counter.Total() != 0 {
		t.Fatal("Reset did not clear")
	}
}

func TestKillAtAfterRunsTheCall(t *testing.T) {
	for _, after := range []bool{false, true} {
		f := storagetest.NewFaulty(newLocal(t), nil)
		ctx := t.Context()
		f.Faults.KillAt(2, after, nil)
		if err := f.PutIfAbsent(ctx, "a", []byte("1")); err != nil {
			t.Fatal(err)
		}
		if err := f.PutIfAbsent(ctx, "b", []byte("2")); !errors.Is(err, storagetest.ErrInjected) {
			t.Fatalf("killing call: %v", err)
		}
		if _, err := f.Head(ctx, "a"); !errors.Is(err, storagetest.ErrInjected) {
			t.Fatalf("call after the kill: %v", err)
		}
		f.Faults.Disarm()
		_, err := f.Head(ctx, "b")
		if landed := err == nil; landed != after {
			t.Fatalf("after=%v: the killing call landed = %v", after, landed)
		}
	}
}
