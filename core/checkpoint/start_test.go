package checkpoint

import (
	"bytes"
	"context"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
)

// A start a bootstrap hands a fresh checkpoint is read from the listing of offsets/ that
// Resume makes anyway (no GET): the newest of several, none in a checkpoint without one (as
// every checkpoint written before start files existed), none once a batch exists. Start
// files are never taken for a batch (Resume, Clean), a file of another name in offsets/
// is ignored, and DropStarts removes them all.
func TestStartHandedToAFreshCheckpoint(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	cnt := &storagetest.Counter{}
	c := New(storagetest.NewCounting(st, cnt), "app")
	if s, err := c.Resume(ctx); err != nil || !s.Fresh() || s.Start != nil {
		t.Fatalf("a checkpoint without a start file: %+v %v", s, err)
	}
	l1, l2 := lsn.MustParse("0x0000002A000001F00003"), lsn.MustParse("0x0000002B000000100001")
	for _, l := range []lsn.LSN{l2, l1} {
		if err := c.WriteStart(ctx, Start{Snapshot: off(l.String(), "2026-09-28T14:03:12.117"), CaptureInstance: "dbo_orders"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Put(ctx, OffsetsDir+"start-junk.json", bytes.NewReader([]byte("{}")), 2); err != nil {
		t.Fatal(err)
	}
	cnt.Reset()
	s, err := c.Resume(ctx)
	if err != nil || !s.Fresh() || s.Start == nil || s.Start.Snapshot.LSN != l2 || s.Start.AppID != "app" {
		t.Fatalf("after two starts: %+v %v; want fresh, start at %s", s, err, l2)
	}
	if cnt.Total() != 1 {
		t.Errorf("Resume of a handed checkpoint: %v, want one listing", cnt.Counts())
	}

	// Batches: the start is ignored, and stays through Clean.
	c.Retain = 1
	for n := int64(0); n < 3; n++ {
		b := Batch{ID: n, Start: off("0x01", ""), End: off("0x02", "2026-09-28T14:03:12.117")}
		if err := c.WriteOffsets(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := c.WriteCommit(ctx, Commit{ID: n, BronzeVersion: -1, FactsVersion: -1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Clean(ctx, 2); err != nil {
		t.Fatal(err)
	}
	s, err = New(st, "app").Resume(ctx)
	if err != nil || s.Next != 3 || s.Start != nil || s.Last == nil || s.Last.ID != 2 {
		t.Fatalf("with batches: %+v %v; want batch 3 next, no start", s, err)
	}
	if _, err := st.Head(ctx, StartKey(l2)); err != nil {
		t.Errorf("start file after Clean: %v", err)
	}

	// DropStarts on a fresh checkpoint.
	st2 := newStore(t)
	c2 := New(st2, "app")
	for _, l := range []lsn.LSN{l1, l2} {
		if err := c2.WriteStart(ctx, Start{Snapshot: lsn.Offset{LSN: l}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c2.DropStarts(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err := c2.Resume(ctx); err != nil || !s.Fresh() || s.Start != nil {
		t.Fatalf("after DropStarts: %+v %v", s, err)
	}
}
