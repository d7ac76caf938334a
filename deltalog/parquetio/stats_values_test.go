package parquetio

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// naiveStringStats is the per-value definition addStrings must agree with: min of the
// values cut to prefix, max of the values cut to keepRunes, bad when a non-null value is
// not UTF-8.
func naiveStringStats(a *array.String, prefix, keep int) (lo, hi string, seen, bad bool) {
	for i := range a.Len() {
		if a.IsNull(i) {
			continue
		}
		v := a.Value(i)
		if !utf8.ValidString(v) {
			return "", "", false, true
		}
		l, h := cutRunes(v, prefix), cutRunes(v, keep)
		if !seen {
			lo, hi, seen = l, h, true
			continue
		}
		lo, hi = min(lo, l), max(hi, h)
	}
	return lo, hi, seen, false
}

// stringArray builds a string array whose raw value bytes are given (valid UTF-8 or not);
// a nil entry is null but keeps garbage bytes in its slot when garbage is set.
func stringArray(vals [][]byte, null []bool, garbage []byte) *array.String {
	var data []byte
	offs := []int32{0}
	valid := make([]byte, (len(vals)+7)/8)
	nulls := 0
	for i, v := range vals {
		if null[i] {
			data = append(data, garbage...)
			nulls++
		} else {
			data = append(data, v...)
			valid[i/8] |= 1 << (i % 8)
		}
		offs = append(offs, int32(len(data)))
	}
	offBytes := arrow.Int32Traits.CastToBytes(offs)
	d := array.NewData(arrow.BinaryTypes.String, len(vals),
		[]*memory.Buffer{memory.NewBufferBytes(valid), memory.NewBufferBytes(offBytes), memory.NewBufferBytes(data)}, nil, nulls, 0)
	defer d.Release()
	return array.NewStringData(d)
}

func TestStringStatsMatchPerValueDefinition(t *testing.T) {
	pieces := []string{"a", "b", "z", "é", "€", "\U0010FFFF", "\U0001F600", "\u007f", " ", "0"}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 400 {
		n := 1 + rng.IntN(40)
		vals := make([][]byte, n)
		null := make([]bool, n)
		for i := range vals {
			var v []byte
			for range rng.IntN(12) {
				v = append(v, pieces[rng.IntN(len(pieces))]...)
			}
			switch rng.IntN(10) {
			case 0:
				null[i] = true
			case 1: // a value cut inside a character: invalid on its own
				if len(v) > 1 && !utf8.RuneStart(v[len(v)-1]) {
					v = v[:len(v)-1]
				} else if len(v) > 0 {
					v = append(v, "é"[0])
				}
			}
			vals[i] = v
		}
		// A character split across two adjacent values: the bytes as a whole are UTF-8,
		// the two values are not.
		if i := rng.IntN(n); round%2 == 0 && i+1 < n && !null[i] && !null[i+1] {
			vals[i] = append(vals[i], "€"[:2]...)
			vals[i+1] = append([]byte("€"[2:]), vals[i+1]...)
		}
		var garbage []byte
		if round%3 == 0 {
			garbage = []byte{0xff, 'x'} // invalid bytes in null slots only
		}
		a := stringArray(vals, null, garbage)
		// Also a slice of it: offsets that do not start at 0.
		lo := rng.IntN(n)
		hi := lo + rng.IntN(n-lo) + 1
		s := array.NewSlice(a, int64(lo), int64(hi)).(*array.String)
		for _, arr := range []*array.String{a, s} {
			prefix := 1 + rng.IntN(4)
			fs := &fileStats{prefix: prefix, keepRunes: 2*prefix + 1}
			cs := &colStats{kind: kindString}
			fs.addStrings(cs, arr)
			wlo, whi, wseen, wbad := naiveStringStats(arr, prefix, 2*prefix+1)
			if cs.bad != wbad || (!wbad && (cs.seen != wseen || cs.minS != wlo || cs.maxS != whi)) {
				t.Fatalf("round %d: %q nulls %v: got (%q %q seen %v bad %v), want (%q %q seen %v bad %v)",
					round, vals, null, cs.minS, cs.maxS, cs.seen, cs.bad, wlo, whi, wseen, wbad)
			}
		}
		s.Release()
		a.Release()
	}
}

func TestIntStatsOfSlicesWithNulls(t *testing.T) {
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues([]int32{-100, 5, 7, 100, 3, 50, -1}, []bool{true, true, false, true, true, true, true})
	a := b.NewInt32Array()
	defer a.Release()
	s := array.NewSlice(a, 1, 5) // 5, NULL, 100, 3
	defer s.Release()
	fs := &fileStats{prefix: 32, keepRunes: 65}
	cs := &colStats{kind: kindInt}
	fs.addColumn(cs, s)
	if !cs.seen || cs.minI != 3 || cs.maxI != 100 || cs.nulls != 1 {
		t.Fatalf("got min %d max %d nulls %d seen %v, want 3 100 1 true", cs.minI, cs.maxI, cs.nulls, cs.seen)
	}
	fs.addColumn(cs, a)
	if cs.minI != -100 || cs.maxI != 100 || cs.nulls != 2 {
		t.Fatalf("after the whole array: min %d max %d nulls %d, want -100 100 2", cs.minI, cs.maxI, cs.nulls)
	}
}
