package parquetio

import (
	"context"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestSmallFilesReuseTheirBuffer: a small file is encoded in a kept buffer, so a warm
// process writing one file after another does not allocate a megabyte per file, even
// across garbage collections (which empty a sync.Pool).
func TestSmallFilesReuseTheirBuffer(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	s := mustSchema(t, benchColumns)
	rec := bronzeRecord(memory.DefaultAllocator, s, 500, false)
	defer rec.Release()
	write := func() uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		w := NewWriter(st, s, WriterOptions{TempDir: t.TempDir()})
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	write()
	for i := range 3 {
		runtime.GC()
		runtime.GC()
		if n := write(); n >= spillBytes {
			t.Fatalf("file %d allocated %d bytes, its buffer's size or more", i+1, n)
		}
	}
}

// TestBufListKeepsAFew: the list keeps at most keep buffers, emptied.
func TestBufListKeepsAFew(t *testing.T) {
	l := bufList{keep: 2}
	bufs := []*[]byte{l.get(), l.get(), l.get()}
	for _, b := range bufs {
		*b = append(*b, 1, 2, 3)
		l.put(b)
	}
	if len(l.bufs) != 2 {
		t.Fatalf("kept %d buffers, want 2", len(l.bufs))
	}
	for range 2 {
		if b := l.get(); len(*b) != 0 || cap(*b) != spillBytes {
			t.Fatalf("got a buffer of %d bytes, capacity %d", len(*b), cap(*b))
		}
	}
}
