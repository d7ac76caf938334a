package parquetio

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
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
	for i := range 3 {
		w := NewWriter(st, s, WriterOptions{TempDir: t.TempDir()})
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
		var used *[]byte
		if w.cur != nil {
			used = w.cur.file.mem
		}
		if _, err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.GC()
		memBufs.mu.Lock()
		kept := slices.Contains(memBufs.bufs, used)
		memBufs.mu.Unlock()
		if used == nil || !kept {
			t.Fatalf("file %d: its in-memory buffer (%p) is not kept after two collections", i+1, used)
		}
		sf := newSpillFile(t.TempDir())
		reused := sf.mem == used
		sf.close()
		if !reused {
			t.Fatalf("file %d: the next file does not reuse the kept buffer", i+1)
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

// TestSpillFailureIsReported: a file that must spill to a temporary directory that
// cannot hold it fails with the cause, and Abort leaves nothing behind; a small file
// never needs the directory.
func TestSpillFailureIsReported(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	s := mustSchema(t, benchColumns)
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		rows    int
		wantErr bool
	}{{500, false}, {50_000, true}} {
		w := NewWriter(st, s, WriterOptions{RowGroupBytes: 64 << 10, TempDir: missing})
		rec := bronzeRecord(memory.DefaultAllocator, s, c.rows, false)
		err := w.Write(ctx, rec)
		rec.Release()
		if err == nil {
			_, err = w.Close(ctx)
		}
		if (err != nil) != c.wantErr || (err != nil && !strings.Contains(err.Error(), "create temporary file")) {
			t.Fatalf("%d rows: %v", c.rows, err)
		}
		if err != nil {
			if aerr := w.Abort(ctx); aerr != nil {
				t.Fatal(aerr)
			}
		}
	}
	n := 0
	for _, err := range st.List(ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 { // the small file
		t.Errorf("%d objects in the store, want the small file's", n)
	}
}
