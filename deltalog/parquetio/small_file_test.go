package parquetio

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// countingStore counts the requests that read objects.
type countingStore struct {
	storage.Store
	heads, gets atomic.Int64
}

func (c *countingStore) Head(ctx context.Context, key string) (storage.ObjectInfo, error) {
	c.heads.Add(1)
	return c.Store.Head(ctx, key)
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *countingStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.GetRange(ctx, key, off, n)
}

// A small file (a facts row, a checkpoint) costs one GET, not a ranged GET per column
// chunk: ReadFile adds a HEAD for the size, ReadFileSized (the size from the add action)
// nothing more.
func TestSmallFileOneGet(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	s := mustSchema(t, allTypeColumns)
	rec := bronzeRecord(memory.DefaultAllocator, s, 3, true)
	defer rec.Release()
	f := writeOne(t, st, s, rec)
	if s.NumFields() < 10 {
		t.Fatalf("only %d columns: the test needs many column chunks", s.NumFields())
	}
	for _, sized := range []bool{false, true} {
		cs := &countingStore{Store: st}
		var it RecordIterator
		var err error
		if sized {
			it, err = ReadFileSized(ctx, cs, f.Path, f.Size, nil)
		} else {
			it, err = ReadFile(ctx, cs, f.Path, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		rows := int64(0)
		for {
			r, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			rows += r.NumRows()
			r.Release()
		}
		it.Close()
		wantHeads := int64(1)
		if sized {
			wantHeads = 0
		}
		if rows != 3 || cs.gets.Load() != 1 || cs.heads.Load() != wantHeads {
			t.Fatalf("sized %t: %d rows, %d GETs, %d HEADs; want 3 rows, 1 GET, %d HEAD", sized, rows, cs.gets.Load(), cs.heads.Load(), wantHeads)
		}
	}
}
