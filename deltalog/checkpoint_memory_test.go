package deltalog

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// peakAllocator tracks the bytes an Arrow allocator holds at once, and in all.
type peakAllocator struct {
	memory.Allocator
	mu                sync.Mutex
	live, peak, total int
}

func (a *peakAllocator) Allocate(n int) []byte {
	a.mu.Lock()
	a.live += n
	a.total += n
	a.peak = max(a.peak, a.live)
	a.mu.Unlock()
	return a.Allocator.Allocate(n)
}

func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	a.mu.Lock()
	a.live += n - len(b)
	if n > len(b) {
		a.total += n - len(b)
	}
	a.peak = max(a.peak, a.live)
	a.mu.Unlock()
	return a.Allocator.Reallocate(n, b)
}

func (a *peakAllocator) Free(b []byte) {
	a.mu.Lock()
	a.live -= len(b)
	a.mu.Unlock()
	a.Allocator.Free(b)
}

// A checkpoint is decoded one row group at a time: the Arrow memory held at once is about
// one row group's, not the whole file's (a table with a million files has a checkpoint of
// hundreds of MB once decoded).
func TestCheckpointDecodeHoldsOneRowGroup(t *testing.T) {
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	checkpointBatchRows = 500
	acts := []Action{{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}}, {MetaData: lgMetadata("p")}}
	for i := range 2998 {
		a := testAdd(fmt.Sprintf("%05d", i))
		a.Stats = fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i, i, i+100)
		acts = append(acts, Action{Add: &a})
	}
	data, err := encodeCheckpoint(acts)
	if err != nil {
		t.Fatal(err)
	}
	alloc := &peakAllocator{Allocator: memory.NewGoAllocator()}
	got, err := decodeCheckpointWith(context.Background(), data, nil, alloc, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(acts) {
		t.Fatalf("decoded %d actions, want %d", len(got), len(acts))
	}
	if alloc.live != 0 {
		t.Errorf("%d Arrow bytes still held after decoding", alloc.live)
	}
	t.Logf("peak Arrow memory %d bytes, %d allocated in all", alloc.peak, alloc.total)
	// Six row groups: the peak must stay well under the sum of all of them.
	if alloc.peak*3 > alloc.total {
		t.Fatalf("peak Arrow memory %d of %d allocated in all: the row groups are held together", alloc.peak, alloc.total)
	}
}
