package cdcsim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// FuzzKeyRangeBounds reads a small table through ReadTable, KeyBound and KeyTiles with
// bounds of random arity and random Go types (nil, ints, digit strings, words, floats,
// bools, bytes, over-long strings, out-of-range ints). It asserts no panic, and either a
// *source.InvalidArgumentError or rows that satisfy lo <= key < hi under an oracle written
// independently of the simulator: NULL first, integers by value, strings compared ignoring
// case and trailing spaces (the column's _CI_ collation).
func FuzzKeyRangeBounds(f *testing.F) {
	f.Add([]byte{0, 2, 2, 4, 1, 1, 3, 4, 7, 1, 200})
	f.Add([]byte{1, 1, 1, 1, 120, 1, 140})
	f.Add([]byte{0, 1, 3, 3, 5, 6, 1, 4, 2})
	f.Add([]byte{1, 4, 0, 9, 255})
	f.Add([]byte{0, 2, 0, 0, 0, 5, 7})
	name := source.Column{Name: "name", DataType: "varchar", MaxLength: 8, Collation: "Latin1_General_CI_AS", Present: true}
	n := source.Column{Name: "n", DataType: "int", Present: true}
	words := []string{"", "a", "A", "ab", "AB ", "b", "Ba", "z"}
	db := New(Config{Seed: 7})
	if err := db.CreateTable(TableSpec{Name: "t", Columns: []source.Column{name, n}, Key: []string{"name", "n"}}); err != nil {
		f.Fatal(err)
	}
	if _, err := db.Exec(func(tx *Txn) error {
		for i, w := range words {
			for _, v := range []int{-300, -5, 0, 7, 130} {
				if w == "A" || w == "AB " {
					continue // equal to "a" and "ab" under the collation: duplicate keys
				}
				if _, err := tx.Insert("t", Row{"name": w, "n": v + i}); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		keys := []source.Column{name, n}
		if next()%2 == 1 {
			keys = []source.Column{n}
		}
		value := func() any {
			kind, p := next()%10, next()
			switch kind {
			case 0:
				return nil
			case 1:
				return int64(p) - 128
			case 2:
				return int(p) - 128
			case 3:
				return strconv.Itoa(int(p) - 128)
			case 4:
				return words[int(p)%len(words)]
			case 5:
				return float64(p) / 2
			case 6:
				return p%2 == 0
			case 7:
				return []byte{p}
			case 8:
				return strings.Repeat("x", int(p)%20)
			}
			return int64(p) << 40
		}
		bound := func() source.Key {
			arity := int(next() % 5)
			if arity == 0 {
				return nil
			}
			k := source.Key{}
			for i := 0; i < arity-1; i++ {
				k = append(k, value())
			}
			return k
		}
		r := source.KeyRange{Lo: bound(), Hi: bound()}
		tbl := source.Table{Name: "t"}
		// The oracle's reading of the bounds: ok false means the read must be refused.
		lo, okLo := oracleBound(keys, r.Lo)
		hi, okHi := oracleBound(keys, r.Hi)
		valid := okLo && okHi

		rows, err := db.ReadTable(ctx, source.TableRead{Table: tbl, Columns: []source.Column{name, n}, Keys: keys, Range: r})
		if !checkRefusal(t, "ReadTable", r, valid, err) {
			return
		}
		got := readAll(t, rows)
		want := 0
		for _, row := range got {
			key := []any{row["name"], row["n"]}[2-len(keys):]
			if (lo != nil && oracleCmp(keys, key, lo) < 0) || (hi != nil && oracleCmp(keys, key, hi) >= 0) {
				t.Fatalf("ReadTable %v keys %d: row %v outside the range", r, len(keys), key)
			}
		}
		// Every row of the table in range is read: count with the oracle.
		all, err := db.ReadTable(ctx, source.TableRead{Table: tbl, Columns: []source.Column{name, n}})
		mustT(t, err)
		for _, row := range readAll(t, all) {
			key := []any{row["name"], row["n"]}[2-len(keys):]
			if (lo == nil || oracleCmp(keys, key, lo) >= 0) && (hi == nil || oracleCmp(keys, key, hi) < 0) {
				want++
			}
		}
		if len(got) != want {
			t.Fatalf("ReadTable %v keys %d: %d rows, the oracle counts %d", r, len(keys), len(got), want)
		}

		k, ok, err := db.KeyBound(ctx, tbl, keys, r, int64(next()%8))
		if checkRefusal(t, "KeyBound", r, valid, err) && ok {
			if (lo != nil && oracleCmp(keys, k, lo) < 0) || (hi != nil && oracleCmp(keys, k, hi) >= 0) {
				t.Fatalf("KeyBound %v: key %v outside the range", r, k)
			}
		}
		if _, err := db.KeyTiles(ctx, tbl, keys, int(next()%6)); err != nil && !isInvalid(err) {
			t.Fatalf("KeyTiles: untyped error %T %v", err, err)
		}
	})
}

// checkRefusal reports whether the call succeeded, failing t when a refusal is not a
// *source.InvalidArgumentError or does not match the oracle's verdict.
func checkRefusal(t *testing.T, what string, r source.KeyRange, valid bool, err error) bool {
	t.Helper()
	var ia *source.InvalidArgumentError
	switch {
	case err == nil && !valid:
		t.Fatalf("%s %#v: accepted bounds the oracle refuses", what, r)
	case err != nil && !errors.As(err, &ia):
		t.Fatalf("%s %#v: %T %v, want *source.InvalidArgumentError", what, r, err, err)
	case err != nil && valid:
		t.Fatalf("%s %#v: refused valid bounds: %v", what, r, err)
	}
	return err == nil
}

// oracleBound converts a bound to the oracle's values (int64 or folded string), or reports
// it invalid: wrong arity, or a value that does not fit its column (varchar(8), int).
func oracleBound(keys []source.Column, k source.Key) ([]any, bool) {
	if k == nil {
		return nil, true
	}
	if len(k) != len(keys) {
		return nil, false
	}
	out := make([]any, len(k))
	for i, v := range k {
		if v == nil {
			continue
		}
		if keys[i].DataType == "varchar" {
			s, ok := v.(string)
			if !ok || len(s) > keys[i].MaxLength {
				return nil, false
			}
			out[i] = s
			continue
		}
		var x int64
		switch y := v.(type) {
		case int64:
			x = y
		case int:
			x = int64(y)
		case string:
			p, err := strconv.ParseInt(y, 10, 64)
			if err != nil {
				return nil, false
			}
			x = p
		case float64:
			if y != math.Trunc(y) {
				return nil, false
			}
			x = int64(y)
		default:
			return nil, false
		}
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, false
		}
		out[i] = x
	}
	return out, true
}

// oracleCmp compares a key with a bound column by column: NULL first, integers by value,
// strings by SQL Server's _CI_ rule (case and trailing spaces ignored).
func oracleCmp(keys []source.Column, a, b []any) int {
	for i := range keys {
		x, y := a[i], b[i]
		switch {
		case x == nil && y == nil:
			continue
		case x == nil:
			return -1
		case y == nil:
			return 1
		}
		var c int
		if keys[i].DataType == "varchar" {
			c = strings.Compare(strings.ToLower(strings.TrimRight(x.(string), " ")), strings.ToLower(strings.TrimRight(y.(string), " ")))
		} else {
			xi, yi := toInt64(x), toInt64(y)
			c = map[bool]int{true: -1, false: 0}[xi < yi] + map[bool]int{true: 1, false: 0}[xi > yi]
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	}
	panic(fmt.Sprintf("oracle: %T is not an integer", v))
}
