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
	long := repeatString(mem, "dbo_orders", constCacheRows+5) // rebuilds a longer one
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
	}{"first": {first, 3}, "long": {long, constCacheRows + 5}} {
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
