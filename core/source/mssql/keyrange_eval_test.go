package mssql

import (
	"cmp"
	"sort"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// An evaluator of the predicate tree under SQL Server semantics, so the tests can check
// that the pieces partition the key space without a database: NULL sorts first and makes
// every comparison not true, char comparisons ignore trailing spaces, and a
// case-insensitive collation compares case-folded text. Without NOT, three-valued logic
// reduces to "unknown is false", which is what eval does.

// colKind is the SQL comparison of one key column in the tests.
type colKind int

const (
	kindInt    colKind = iota // int64 values
	kindCIText                // varchar under a _CI_ collation
	kindCSText                // varchar under a _CS_ or _BIN2 collation
)

// sqlCompare compares two non-NULL values of one column as SQL Server does.
func sqlCompare(k colKind, a, b any) int {
	switch k {
	case kindInt:
		return cmp.Compare(a.(int64), b.(int64))
	case kindCIText:
		return strings.Compare(strings.ToLower(strings.TrimRight(a.(string), " ")), strings.ToLower(strings.TrimRight(b.(string), " ")))
	default:
		return strings.Compare(strings.TrimRight(a.(string), " "), strings.TrimRight(b.(string), " "))
	}
}

// tupleCompare is the NULL-first lexicographic order of two keys.
func tupleCompare(kinds []colKind, a, b source.Key) int {
	for i, k := range kinds {
		switch {
		case a[i] == nil && b[i] == nil:
			continue
		case a[i] == nil:
			return -1
		case b[i] == nil:
			return 1
		}
		if c := sqlCompare(k, a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// inRange is lo <= row < hi with open nil bounds: the truth the pieces must reproduce.
func inRange(kinds []colKind, row, lo, hi source.Key) bool {
	if lo != nil && tupleCompare(kinds, row, lo) < 0 {
		return false
	}
	if hi != nil && tupleCompare(kinds, row, hi) >= 0 {
		return false
	}
	return true
}

// eval is the SQL truth of p for one row.
func eval(p pred, kinds []colKind, row, lo, hi source.Key) bool {
	switch q := p.(type) {
	case predConst:
		return bool(q)
	case predIsNull:
		return row[q.col] == nil
	case predNotNull:
		return row[q.col] != nil
	case predCmp:
		v := row[q.col]
		if v == nil {
			return false
		}
		var b any
		if q.val.side == sideHi {
			b = hi[q.val.col]
		} else {
			b = lo[q.val.col]
		}
		c := sqlCompare(kinds[q.col], v, b)
		switch q.op {
		case opEq:
			return c == 0
		case opGt:
			return c > 0
		case opGe:
			return c >= 0
		default:
			return c < 0
		}
	case predAnd:
		for _, c := range q {
			if !eval(c, kinds, row, lo, hi) {
				return false
			}
		}
		return true
	case predOr:
		for _, c := range q {
			if eval(c, kinds, row, lo, hi) {
				return true
			}
		}
		return false
	}
	panic("unknown predicate")
}

// matches counts the pieces of one range that hold for row.
func matches(pieces []pred, kinds []colKind, row, lo, hi source.Key) int {
	n := 0
	for _, p := range pieces {
		if eval(p, kinds, row, lo, hi) {
			n++
		}
	}
	return n
}

// byteSource turns fuzz input into choices; it yields zeros once exhausted.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) next(n int) int {
	if n <= 1 {
		return 0
	}
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	return v % n
}

// Small value sets make equal, case-variant and NULL values frequent.
var (
	testInts  = []any{nil, int64(-2), int64(0), int64(1), int64(2), int64(5)}
	testTexts = []any{nil, "", "a", "A", "a ", "b", "B", "n", "N", "n ", "z"}
)

func randomValue(s *byteSource, k colKind) any {
	if k == kindInt {
		return testInts[s.next(len(testInts))]
	}
	return testTexts[s.next(len(testTexts))]
}

func randomKey(s *byteSource, kinds []colKind) source.Key {
	k := make(source.Key, len(kinds))
	for i, kind := range kinds {
		k[i] = randomValue(s, kind)
	}
	return k
}

func randomKinds(s *byteSource) []colKind {
	kinds := make([]colKind, 1+s.next(3))
	for i := range kinds {
		kinds[i] = colKind(s.next(3))
	}
	return kinds
}

// sortSQL sorts keys in SQL order; ties keep their (random) input order, so case variants
// that SQL finds equal arrive in either order, as they would from a planner.
func sortSQL(kinds []colKind, keys []source.Key) {
	sort.SliceStable(keys, func(i, j int) bool { return tupleCompare(kinds, keys[i], keys[j]) < 0 })
}
