package bronze

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestConstantArraysSurviveTheCache(t *testing.T) {
	mem := memory.DefaultAllocator
	first := repeatString(mem, "dbo_orders", 3)
	defer first.Release()
	long := repeatString(mem, "dbo_orders", 16<<10+5) // rebuilds a longer one
	defer long.Release()
	// Fill the cache past its bound: it is emptied and the first arrays' buffers are
	// released by the cache, not by their holders.
	for i := range constCacheMax + 2 {
		a := repeatInt64(mem, int64(i), 10)
		if a.Len() != 10 || a.(*array.Int64).Value(9) != int64(i) {
			t.Fatalf("repeatInt64(%d, 10) = %v", i, a)
		}
		a.Release()
	}
	for name, c := range map[string]struct {
		a arrow.Array
		n int
	}{"first": {first, 3}, "long": {long, 16<<10 + 5}} {
		s := c.a.(*array.String)
		if s.Len() != c.n || s.NullN() != 0 {
			t.Fatalf("%s: %d rows, %d nulls", name, s.Len(), s.NullN())
		}
		for i := range s.Len() {
			if s.Value(i) != "dbo_orders" {
				t.Fatalf("%s row %d = %q", name, i, s.Value(i))
			}
		}
	}
	n := nulls(mem, &arrow.Decimal128Type{Precision: 18, Scale: 2}, 7)
	defer n.Release()
	if n.Len() != 7 || n.NullN() != 7 || n.DataType().String() != "decimal(18, 2)" {
		t.Fatalf("nulls: %d rows, %d nulls, %s", n.Len(), n.NullN(), n.DataType())
	}
	ts := repeatTimestamp(mem, 42, 2)
	defer ts.Release()
	if got := fmt.Sprint(ts.(*array.Timestamp).Value(1)); got != "42" || !arrow.TypeEqual(ts.DataType(), CommitTSType) {
		t.Fatalf("repeatTimestamp: %s of %s", got, ts.DataType())
	}
}

// TestConstantArraysSizedToTheRequest: a value's cached array holds the rows first asked
// for (a stream batch's _batch_id is new each batch), a longer request doubles it, and
// growing a value's array when the cache is full rebuilds it once.
func TestConstantArraysSizedToTheRequest(t *testing.T) {
	mem := memory.DefaultAllocator
	cached := func(v int64) int {
		constCache.mu.Lock()
		defer constCache.mu.Unlock()
		a, ok := constCache.m[constKey{typ: "int64", i64: v}]
		if !ok {
			return 0
		}
		return a.Len()
	}
	const v = -7
	for _, c := range []struct{ n, want int }{{1000, 1000}, {900, 1000}, {1500, 2000}, {5000, 5000}} {
		a := repeatInt64(mem, v, c.n)
		if a.Len() != c.n || a.(*array.Int64).Value(c.n-1) != v {
			t.Fatalf("repeatInt64(%d, %d): %d rows", v, c.n, a.Len())
		}
		a.Release()
		if got := cached(v); got != c.want {
			t.Fatalf("after %d rows the cached array holds %d, want %d", c.n, got, c.want)
		}
	}
	// Fill the cache to its bound with the value's array in it, then grow that array.
	constCache.mu.Lock()
	for _, a := range constCache.m {
		a.Release()
	}
	constCache.m = nil
	constCache.mu.Unlock()
	repeatInt64(mem, v, 5000).Release()
	for i := range constCacheMax - 1 {
		repeatInt64(mem, int64(i), 1).Release()
	}
	a := repeatInt64(mem, v, 6000)
	defer a.Release()
	if a.Len() != 6000 || a.(*array.Int64).Value(5999) != v || cached(v) != 10000 {
		t.Fatalf("grown in a full cache: %d rows, cached %d", a.Len(), cached(v))
	}
}
