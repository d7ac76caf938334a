package bronze

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The assemblers stamp every record with columns that hold one value (or NULL) in every
// row: _capture_instance, _batch_id, a snapshot's _start_lsn, _snapshot, _commit_ts,
// _operation and _chunk, and the NULL columns. Building them afresh for each record
// allocated as many bytes as the captured columns of a narrow table (a snapshot row of
// the benchmark table carried ~90 bytes of stamp for ~60 of data) and made the GC run
// that much more often. They are built once instead and handed out as slices: Arrow
// arrays are immutable, a slice holds its own reference to the buffers, and the cache
// holds one until it drops the array, so a slice stays valid whatever the cache does.

// constCacheMax bounds the number of cached arrays; the cache is emptied when full (a
// process writes a handful of distinct constants: capture instances, LSN stamps, batch
// ids).
const constCacheMax = 64

type constKey struct {
	typ   string // arrow.DataType fingerprint
	null  bool
	str   string
	i64   int64
	isStr bool
}

var constCache struct {
	mu sync.Mutex
	m  map[constKey]arrow.Array
}

// constant returns an array of n rows of one value: the first n rows of a cached array,
// built by build(rows) when none long enough is cached. The caller releases it.
//
// A value's first array holds the rows asked for, and a longer request doubles it: a
// stream batch's _batch_id is a new value each batch, used for about a thousand rows, and
// building it at a fixed 16,384 rows had been 128 KiB of a 1,000-row batch's allocation
// (docs/performance.md § Requests per stream batch).
func constant(k constKey, n int, build func(rows int) arrow.Array) arrow.Array {
	constCache.mu.Lock()
	defer constCache.mu.Unlock()
	a, ok := constCache.m[k]
	if !ok || a.Len() < n {
		rows := n
		if ok {
			rows = max(n, 2*a.Len())
			delete(constCache.m, k)
			a.Release()
		}
		if constCache.m == nil || len(constCache.m) >= constCacheMax {
			for _, old := range constCache.m {
				old.Release()
			}
			constCache.m = map[constKey]arrow.Array{}
		}
		a = build(rows)
		constCache.m[k] = a
	}
	return array.NewSlice(a, 0, int64(n))
}

func repeatString(mem memory.Allocator, v string, n int) arrow.Array {
	return constant(constKey{typ: "utf8", str: v, isStr: true}, n, func(rows int) arrow.Array {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.Reserve(rows)
		b.ReserveData(len(v) * rows)
		for range rows {
			b.Append(v)
		}
		return b.NewArray()
	})
}

func repeatInt32(mem memory.Allocator, v int32, n int) arrow.Array {
	return constant(constKey{typ: "int32", i64: int64(v)}, n, func(rows int) arrow.Array {
		b := array.NewInt32Builder(mem)
		defer b.Release()
		b.Reserve(rows)
		for range rows {
			b.UnsafeAppend(v)
		}
		return b.NewArray()
	})
}

func repeatInt64(mem memory.Allocator, v int64, n int) arrow.Array {
	return constant(constKey{typ: "int64", i64: v}, n, func(rows int) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.Reserve(rows)
		for range rows {
			b.UnsafeAppend(v)
		}
		return b.NewArray()
	})
}

func repeatTimestamp(mem memory.Allocator, v arrow.Timestamp, n int) arrow.Array {
	return constant(constKey{typ: CommitTSType.Fingerprint(), i64: int64(v)}, n, func(rows int) arrow.Array {
		b := array.NewTimestampBuilder(mem, CommitTSType)
		defer b.Release()
		b.Reserve(rows)
		for range rows {
			b.UnsafeAppend(v)
		}
		return b.NewArray()
	})
}

// nulls is an array of n NULLs of type t.
func nulls(mem memory.Allocator, t arrow.DataType, n int) arrow.Array {
	return constant(constKey{typ: t.Fingerprint(), null: true}, n, func(rows int) arrow.Array {
		return array.MakeArrayOfNull(mem, t, rows)
	})
}
