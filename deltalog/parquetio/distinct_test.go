package parquetio

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// referenceEncoding is parquet-mr's rule as chooseEncoding applied it before its sets
// (distinct.go): every value counted in a Go map keyed by the value's bytes.
func referenceEncoding(a arrow.Array) colEncoding {
	var nonNull int
	var raw, dict int64
	seen := map[string]bool{}
	own := false
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			continue
		}
		nonNull++
		var v string
		switch c := a.(type) {
		case *array.String:
			v, own = c.Value(i), true
			raw += 4
		case *array.Binary:
			v, own = c.ValueString(i), true
			raw += 4
		case *array.Int64:
			v = fmt.Sprint(c.Value(i))
			raw += 8
		case *array.Int32:
			v = fmt.Sprint(c.Value(i))
			raw += 4
		case *array.Int16:
			v = fmt.Sprint(c.Value(i))
			raw += 2
		case *array.Decimal128:
			v = c.Value(i).BigInt().String()
			raw += 16
		default:
			panic(a.DataType())
		}
		if own {
			raw += int64(len(v))
		}
		if !seen[v] {
			seen[v] = true
			switch {
			case own:
				dict += int64(len(v)) + 4
			default:
				dict += raw / int64(nonNull) // the width
			}
		}
	}
	if nonNull == 0 || dict+indexBytes(nonNull, len(seen)) >= raw {
		return encPlain
	}
	if own {
		return encOwnDict
	}
	return encDict
}

// TestChooseEncodingMatchesReference: the open-addressing sets and the early stop decide
// what counting every value in a map decides, on columns of every width whose distinct
// values lie around the rule's threshold, with and without NULLs, sliced at an offset,
// one set reused from column to column (keys 0 and the all-zero decimal included).
func TestChooseEncodingMatchesReference(t *testing.T) {
	mem := memory.DefaultAllocator
	rng := rand.New(rand.NewPCG(1, 2))
	var sets distinctSets
	checked := map[colEncoding]int{}
	for round := range 400 {
		n := 1 + rng.IntN(3000)
		distinct := 1 + rng.IntN(n)
		nullEvery := []int{0, 2, 7}[round%3]
		value := func(i int) uint64 {
			v := uint64(rng.IntN(distinct))
			if round%5 == 0 {
				v <<= 40 // keys that differ only in high bits
			}
			return v
		}
		var b array.Builder
		switch round % 5 {
		case 0:
			b = array.NewInt64Builder(mem)
		case 1:
			b = array.NewInt32Builder(mem)
		case 2:
			b = array.NewInt16Builder(mem)
		case 3:
			b = array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 38, Scale: 0})
		case 4:
			if round%2 == 0 {
				b = array.NewStringBuilder(mem)
			} else {
				b = array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			}
		}
		for i := range n + 5 {
			if nullEvery > 0 && i%nullEvery == 0 {
				b.AppendNull()
				continue
			}
			v := value(i)
			switch b := b.(type) {
			case *array.Int64Builder:
				b.Append(int64(v))
			case *array.Int32Builder:
				b.Append(int32(v))
			case *array.Int16Builder:
				b.Append(int16(v))
			case *array.Decimal128Builder:
				b.Append(decimal128.New(int64(v%3), v))
			case *array.StringBuilder:
				b.Append(fmt.Sprintf("v%0*d", 1+int(v%13), v))
			case *array.BinaryBuilder:
				b.Append([]byte(fmt.Sprintf("%x", v)))
			}
		}
		full := b.NewArray()
		b.Release()
		a := array.NewSlice(full, 5, int64(n+5))
		full.Release()
		got, want := sets.chooseEncoding(a), referenceEncoding(a)
		if got != want {
			t.Fatalf("round %d: %s, %d values, %d distinct, NULL every %d: %d, want %d", round, a.DataType(), n, distinct, nullEvery, got, want)
		}
		checked[want]++
		a.Release()
	}
	if checked[encPlain] == 0 || checked[encDict] == 0 || checked[encOwnDict] == 0 {
		t.Fatalf("the columns did not cover every encoding: %v", checked)
	}
}

// TestChooseEncodingNestedNulls: a nested column keeps arrow-go's dictionary with the
// fallback even when its sample is all NULL (as before the sets); a flat one is plain.
func TestChooseEncodingNestedNulls(t *testing.T) {
	mem := memory.DefaultAllocator
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	defer lb.Release()
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	for range 10 {
		lb.AppendNull()
		ib.AppendNull()
	}
	list, ints := lb.NewArray(), ib.NewArray()
	defer list.Release()
	defer ints.Release()
	if got := chooseEncoding(list); got != encDict {
		t.Errorf("all-NULL list: %d, want encDict", got)
	}
	if got := chooseEncoding(ints); got != encPlain {
		t.Errorf("all-NULL int64: %d, want encPlain", got)
	}
}

// TestBytesSetSpans: values are told apart by their bytes wherever they lie, a reset set
// starts empty, and a dropped set keeps no reference to the buffer.
func TestBytesSetSpans(t *testing.T) {
	var s bytesSet
	data := []byte("abcabxab")
	s.reset(4, data)
	for _, sp := range [][2]int32{{0, 2}, {3, 5}, {2, 3}, {5, 6}, {6, 8}, {0, 0}, {4, 4}} {
		s.add(sp[0], sp[1])
	}
	// "ab" three times, "c", "x", "" twice.
	if s.len() != 4 {
		t.Fatalf("%d distinct, want 4", s.len())
	}
	s.drop()
	if s.data != nil {
		t.Fatal("dropped set still holds its buffer")
	}
	s.reset(4, []byte("zz"))
	if !s.add(0, 1) || s.add(1, 2) || s.len() != 1 {
		t.Fatal("a reset set does not start empty")
	}
}

// intIndex numbers keys in order of first appearance as a map would: runs, zero,
// negatives, extremes and many distinct keys, after a reset to fewer and to more.
func TestIntIndexNumbersInOrderOfFirstAppearance(t *testing.T) {
	var x intIndex
	var entries []int64
	for _, n := range []int{1000, 10, 5000} {
		keys := make([]int64, n)
		for i := range keys {
			switch i % 7 {
			case 0:
				keys[i] = int64(i % 13)
			case 1:
				keys[i] = -int64(i % 5)
			case 2:
				keys[i] = math.MinInt64 + int64(i%3)
			case 3:
				keys[i] = math.MaxInt64 - int64(i%3)
			default:
				keys[i] = int64(i) * 7919 % int64(n)
			}
		}
		x.reset(n)
		entries = entries[:0]
		want := map[int64]int32{}
		var wantEntries []int64
		for i, k := range keys {
			w, ok := want[k]
			if !ok {
				w = int32(len(wantEntries))
				want[k] = w
				wantEntries = append(wantEntries, k)
			}
			if got := x.index(k, &entries); got != w {
				t.Fatalf("n %d, key %d (#%d): index %d, want %d", n, k, i, got, w)
			}
		}
		if !slices.Equal(entries, wantEntries) {
			t.Fatalf("n %d: %d entries, want %d", n, len(entries), len(wantEntries))
		}
	}
}

// dictBuilder numbers strings in order of first appearance as a map would, with the
// dictionary and plain sizes ownDictionary checks, across resets.
func TestDictBuilderNumbersInOrderOfFirstAppearance(t *testing.T) {
	d := new(dictBuilder)
	for _, n := range []int{3000, 5, 700} {
		d.reset()
		d.table(n)
		want := map[string]int32{}
		var values []string
		var bytes, raw int64
		for i := range n {
			v := fmt.Sprint("v", i*7919%(n/2+1))
			if i%5 == 0 {
				v = ""
			}
			raw += int64(len(v)) + 4
			w, ok := want[v]
			if !ok {
				w = int32(len(values))
				want[v] = w
				values = append(values, v)
				bytes += int64(len(v)) + 4
			}
			if got := d.add(v); got != w {
				t.Fatalf("n %d, %q (#%d): index %d, want %d", n, v, i, got, w)
			}
		}
		if !slices.Equal(d.values, values) || d.bytes != bytes || d.raw != raw {
			t.Fatalf("n %d: %d values (want %d), bytes %d (%d), raw %d (%d)", n, len(d.values), len(values), d.bytes, bytes, d.raw, raw)
		}
	}
}
