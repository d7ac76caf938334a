package mssql

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// checkRange asserts that every row lands in at most one piece of [lo, hi), and in one
// exactly when lo <= row < hi in SQL order.
func checkRange(t *testing.T, kinds []colKind, lo, hi source.Key, rows []source.Key) {
	t.Helper()
	pieces, err := rangePieces(len(kinds), lo, hi)
	if err != nil {
		t.Fatalf("rangePieces(%v, %v): %v", lo, hi, err)
	}
	for _, row := range rows {
		want := 0
		if inRange(kinds, row, lo, hi) {
			want = 1
		}
		if got := matches(pieces, kinds, row, lo, hi); got != want {
			t.Fatalf("kinds %v, range [%q, %q): row %q is in %d pieces, want %d\npieces: %s", kinds, lo, hi, row, got, want, debugPieces(pieces))
		}
	}
}

// checkTiling asserts that the ranges [nil,b1), [b1,b2), ..., [bk,nil) over bounds sorted
// in SQL order put every row in exactly one piece of one range.
func checkTiling(t *testing.T, kinds []colKind, bounds, rows []source.Key) {
	t.Helper()
	sortSQL(kinds, bounds)
	edges := append(append([]source.Key{nil}, bounds...), nil)
	type rng struct {
		lo, hi source.Key
		pieces []pred
	}
	ranges := make([]rng, 0, len(edges)-1)
	for i := 0; i+1 < len(edges); i++ {
		ps, err := rangePieces(len(kinds), edges[i], edges[i+1])
		if err != nil {
			t.Fatal(err)
		}
		ranges = append(ranges, rng{edges[i], edges[i+1], ps})
	}
	for _, row := range rows {
		total := 0
		for _, r := range ranges {
			total += matches(r.pieces, kinds, row, r.lo, r.hi)
		}
		if total != 1 {
			t.Fatalf("kinds %v, bounds %q: row %q lands in %d pieces, want 1", kinds, bounds, row, total)
		}
	}
}

func debugPieces(ps []pred) string {
	r := renderer{cols: []string{"[k0]", "[k1]", "[k2]"}, val: func(b boundRef) string {
		if b.side == sideLo {
			return fmt.Sprintf("lo%d", b.col)
		}
		return fmt.Sprintf("hi%d", b.col)
	}}
	s := ""
	for _, p := range ps {
		s += "\n  " + r.render(p)
	}
	return s
}

func TestRangePiecesPartitionRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 256)
	for iter := 0; iter < 3000; iter++ {
		for i := range buf {
			buf[i] = byte(rng.UintN(256))
		}
		s := &byteSource{b: buf}
		kinds := randomKinds(s)
		var lo, hi source.Key
		if s.next(4) != 0 {
			lo = randomKey(s, kinds)
		}
		if s.next(4) != 0 {
			hi = randomKey(s, kinds)
		}
		rows := make([]source.Key, 40)
		for i := range rows {
			rows[i] = randomKey(s, kinds)
		}
		checkRange(t, kinds, lo, hi, rows)
		bounds := make([]source.Key, 1+s.next(5))
		for i := range bounds {
			bounds[i] = randomKey(s, kinds)
		}
		checkTiling(t, kinds, bounds, rows)
	}
}

// The case the CI guards exist for (docs/reference/sqlserver-cdc.md §8.6 step 6): bounds
// unequal in Go, equal in SQL.
func TestRangePiecesCaseInsensitiveBounds(t *testing.T) {
	kinds := []colKind{kindCIText, kindInt}
	lo := source.Key{"n", int64(1)}
	hi := source.Key{"N", int64(5)}
	var rows []source.Key
	for _, s := range []any{nil, "m", "n", "N", "n ", "o"} {
		for _, i := range testInts {
			rows = append(rows, source.Key{s, i})
		}
	}
	checkRange(t, kinds, lo, hi, rows)
	checkTiling(t, kinds, []source.Key{lo, hi, {"N", int64(0)}}, rows)
}

func TestRangePiecesShapes(t *testing.T) {
	r := renderer{cols: []string{"[a]", "[b]"}, val: func(b boundRef) string {
		return [...]string{"x", "y", "u", "v"}[int(b.side)*2+b.col]
	}}
	cases := []struct {
		name   string
		lo, hi source.Key
		want   []string
	}{
		// The example of docs/reference/sqlserver-cdc.md §8.6.
		{"both bounds", source.Key{int64(1), int64(2)}, source.Key{int64(3), int64(4)}, []string{
			"[a] = x AND [b] >= y AND ([a] < u OR [a] IS NULL OR ([a] = u AND ([b] < v OR [b] IS NULL)))",
			"[a] > x AND ([a] < u OR [a] IS NULL)",
			"[a] = u AND ([b] < v OR [b] IS NULL) AND [a] > x",
		}},
		{"shared prefix", source.Key{int64(1), int64(2)}, source.Key{int64(1), int64(4)}, []string{
			"[a] = x AND [b] >= y AND ([b] < v OR [b] IS NULL)",
		}},
		{"open above", source.Key{int64(1), int64(2)}, nil, []string{
			"[a] = x AND [b] >= y",
			"[a] > x",
		}},
		{"open below", nil, source.Key{int64(3), int64(4)}, []string{
			"([a] < u OR [a] IS NULL)",
			"[a] = u AND ([b] < v OR [b] IS NULL)",
		}},
		{"NULL bounds", source.Key{nil, nil}, source.Key{nil, int64(4)}, []string{
			"[a] IS NULL AND ([b] < v OR [b] IS NULL)",
		}},
		{"open", nil, nil, []string{"1 = 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps, err := rangePieces(2, c.lo, c.hi)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != len(c.want) {
				t.Fatalf("%d pieces, want %d:%s", len(ps), len(c.want), debugPieces(ps))
			}
			for i, p := range ps {
				if got := r.render(p); got != c.want[i] {
					t.Errorf("piece %d:\n got %s\nwant %s", i, got, c.want[i])
				}
			}
		})
	}
}

func TestRangePiecesArity(t *testing.T) {
	for _, c := range []struct {
		n      int
		lo, hi source.Key
	}{
		{2, source.Key{int64(1)}, nil},
		{2, nil, source.Key{int64(1), int64(2), int64(3)}},
		{0, source.Key{}, nil},
	} {
		_, err := rangePieces(c.n, c.lo, c.hi)
		var ia *source.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("rangePieces(%d, %v, %v) = %v, want *InvalidArgumentError", c.n, c.lo, c.hi, err)
		}
	}
}

// FuzzKeyRange: for any column kinds, bounds and rows, every row lands in exactly one
// piece when in range and none otherwise, and the ranges tiling the space between sorted
// bounds put every row in exactly one piece.
func FuzzKeyRange(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 1, 0, 1, 7, 3, 8, 1, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{2, 1, 1, 2, 2, 1, 7, 1, 8, 2, 9, 3, 3, 3, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &byteSource{b: data}
		kinds := randomKinds(s)
		var lo, hi source.Key
		if s.next(4) != 0 {
			lo = randomKey(s, kinds)
		}
		if s.next(4) != 0 {
			hi = randomKey(s, kinds)
		}
		bounds := make([]source.Key, 1+s.next(6))
		for i := range bounds {
			bounds[i] = randomKey(s, kinds)
		}
		// Every combination of the small value sets is a row, so no case goes untried.
		rows := allKeys(kinds)
		checkRange(t, kinds, lo, hi, rows)
		checkTiling(t, kinds, bounds, rows)
		checkRendered(t, kinds, lo, hi)
	})
}

// checkRendered renders the range as the S5 statement: no panic, one UNION ALL branch per
// piece, and every placeholder bound.
func checkRendered(t *testing.T, kinds []colKind, lo, hi source.Key) {
	t.Helper()
	keys := make([]source.Column, len(kinds))
	for i, k := range kinds {
		switch k {
		case kindInt:
			keys[i] = source.Column{Name: fmt.Sprintf("k%d", i), DataType: "int", Present: true}
		case kindCIText:
			keys[i] = source.Column{Name: fmt.Sprintf("k%d", i), DataType: "varchar", MaxLength: 10, Collation: "Latin1_General_CI_AS", Present: true}
		default:
			keys[i] = source.Column{Name: fmt.Sprintf("k%d", i), DataType: "nvarchar", MaxLength: 10, Collation: "Latin1_General_100_BIN2", Present: true}
		}
	}
	q, args, err := readTableSQL(source.Table{Schema: "dbo", Name: "t"}, keys, keys, source.KeyRange{Lo: lo, Hi: hi})
	if err != nil {
		t.Fatalf("readTableSQL: %v", err)
	}
	pieces, _ := rangePieces(len(kinds), lo, hi)
	want := len(pieces)
	if want == 0 {
		want = 1 // WHERE 1 = 0
	}
	if got := strings.Count(q, "SELECT "); got != want {
		t.Fatalf("%d SELECTs for %d pieces:\n%s", got, len(pieces), q)
	}
	for i := range args {
		if !strings.Contains(q, fmt.Sprintf("@p%d ", i+1)) {
			t.Fatalf("@p%d unused in %s", i+1, q)
		}
	}
	if strings.Contains(q, fmt.Sprintf("@p%d ", len(args)+1)) {
		t.Fatalf("@p%d unbound in %s", len(args)+1, q)
	}
}

// allKeys is every key over the test value sets.
func allKeys(kinds []colKind) []source.Key {
	out := []source.Key{{}}
	for _, k := range kinds {
		vals := testInts
		if k != kindInt {
			vals = testTexts
		}
		next := make([]source.Key, 0, len(out)*len(vals))
		for _, prefix := range out {
			for _, v := range vals {
				key := append(append(source.Key{}, prefix...), v)
				next = append(next, key)
			}
		}
		out = next
	}
	return out
}

// The pieces of "(keys) > after" hold for a row exactly when it is above after in SQL
// order, in exactly one piece: NULLs, case-insensitive text and trailing spaces included
// (Source.KeyAfter skips every row of after's value).
func TestAfterPiecesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 128)
	for iter := 0; iter < 3000; iter++ {
		for i := range buf {
			buf[i] = byte(rng.UintN(256))
		}
		s := &byteSource{b: buf}
		kinds := randomKinds(s)
		after := randomKey(s, kinds)
		pieces, err := afterPieces(len(kinds), after)
		if err != nil {
			t.Fatal(err)
		}
		for range 40 {
			row := randomKey(s, kinds)
			want := 0
			if tupleCompare(kinds, row, after) > 0 {
				want = 1
			}
			if got := matches(pieces, kinds, row, after, nil); got != want {
				t.Fatalf("kinds %v, after %q: row %q is in %d pieces, want %d\npieces: %s", kinds, after, row, got, want, debugPieces(pieces))
			}
		}
	}
	for _, bad := range []source.Key{nil, {}, {int64(1), int64(2)}} {
		if _, err := afterPieces(1, bad); err == nil {
			t.Errorf("afterPieces(1, %v): no error", bad)
		}
	}
}
