package deltatest

import (
	"context"
	"errors"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

func TestFaultsKill(t *testing.T) {
	ctx := context.Background()
	for _, after := range []bool{false, true} {
		s, err := localstore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		f := &Faults{KillAt: 2, After: after}
		w := f.Store(s)
		if err := w.PutIfAbsent(ctx, "a", []byte("1")); err != nil {
			t.Fatal(err)
		}
		if err := w.PutIfAbsent(ctx, "b", []byte("2")); !errors.Is(err, ErrKilled) {
			t.Fatalf("after=%t: second call %v, want ErrKilled", after, err)
		}
		// Dead: nothing reaches the store any more, and calls are not counted.
		if err := w.PutIfAbsent(ctx, "c", []byte("3")); !errors.Is(err, ErrKilled) {
			t.Fatalf("after=%t: third call %v", after, err)
		}
		_, errB := s.Head(ctx, "b")
		if landed := errB == nil; landed != after {
			t.Fatalf("after=%t: killing call landed=%t", after, landed)
		}
		if _, err := s.Head(ctx, "c"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("after=%t: call after the kill reached the store: %v", after, err)
		}
		if !f.Killed() || f.Calls() != 2 || len(f.Ops()) != 2 {
			t.Fatalf("after=%t: killed %t calls %d ops %v", after, f.Killed(), f.Calls(), f.Ops())
		}
	}
}
