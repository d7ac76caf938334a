package mssql

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// The composite key-range builder (docs/reference/sqlserver-cdc.md §8.6, working around the
// T-SQL facts of docs/reference/sqlserver-cdc.md §8.5).
//
// T-SQL has no row-value comparison, and an OR-combined predicate such as
// a >= x AND (a > x OR (a = x AND b >= y)) seeks on a only. So lo <= (k1..kn) < hi is cut
// into disjoint pieces, each a conjunction that seeks on an equality prefix and one range
// column, and the pieces are joined with UNION ALL. Every row lands in exactly one piece.
//
// The builder produces a small predicate tree (pred). The tree renders to T-SQL (render)
// and the tests evaluate the same tree in Go over random keys under SQL semantics
// (NULL first, three-valued logic, case-insensitive collations), which is how the
// partition property is checked without a database.

// side names which bound a value comes from.
type side uint8

const (
	sideLo side = iota
	sideHi
)

// boundRef is one bound value: column col of lo or hi.
type boundRef struct {
	side side
	col  int
}

// cmpOp is a comparison between a key column and a non-NULL bound value.
type cmpOp uint8

const (
	opEq cmpOp = iota
	opGt
	opGe
	opLt
)

func (o cmpOp) String() string {
	switch o {
	case opEq:
		return "="
	case opGt:
		return ">"
	case opGe:
		return ">="
	default:
		return "<"
	}
}

// pred is a node of the predicate tree: predCmp, predIsNull, predNotNull, predConst,
// predAnd or predOr.
type pred interface{ isPred() }

// predCmp is "column op bound" with a non-NULL bound. Under SQL's three-valued logic it is
// not true when the column is NULL.
type predCmp struct {
	col int
	op  cmpOp
	val boundRef
}

// predIsNull is "column IS NULL"; predNotNull is "column IS NOT NULL".
type predIsNull struct{ col int }
type predNotNull struct{ col int }

// predConst is TRUE or FALSE.
type predConst bool

// predAnd and predOr combine predicates; simplify keeps them flat and free of constants.
type predAnd []pred
type predOr []pred

func (predCmp) isPred()     {}
func (predIsNull) isPred()  {}
func (predNotNull) isPred() {}
func (predConst) isPred()   {}
func (predAnd) isPred()     {}
func (predOr) isPred()      {}

// compare builds "column col op bound" with NULL-first semantics
// (docs/reference/sqlserver-cdc.md §8.6 step 1): against a NULL bound, = is IS NULL, > is IS
// NOT NULL, >= is always true and < always false; against a non-NULL bound, < also holds for
// NULL (NULL sorts below every value).
func compare(col int, op cmpOp, ref boundRef, v any) pred {
	if v == nil {
		switch op {
		case opEq:
			return predIsNull{col}
		case opGt:
			return predNotNull{col}
		case opGe:
			return predConst(true)
		default:
			return predConst(false)
		}
	}
	c := predCmp{col: col, op: op, val: ref}
	if op == opLt {
		return or(c, predIsNull{col})
	}
	return c
}

// and conjoins ps, flattening nested ANDs and folding constants.
func and(ps ...pred) pred {
	var out predAnd
	for _, p := range ps {
		switch q := p.(type) {
		case predConst:
			if !q {
				return predConst(false)
			}
		case predAnd:
			out = append(out, q...)
		default:
			out = append(out, p)
		}
	}
	switch len(out) {
	case 0:
		return predConst(true)
	case 1:
		return out[0]
	}
	return out
}

// or disjoins ps, flattening nested ORs and folding constants.
func or(ps ...pred) pred {
	var out predOr
	for _, p := range ps {
		switch q := p.(type) {
		case predConst:
			if q {
				return predConst(true)
			}
		case predOr:
			out = append(out, q...)
		default:
			out = append(out, p)
		}
	}
	switch len(out) {
	case 0:
		return predConst(false)
	case 1:
		return out[0]
	}
	return out
}

// rangePieces cuts lo <= (k_0..k_{n-1}) < hi into disjoint conjunctions
// (docs/reference/sqlserver-cdc.md §8.6 steps 2–7).
// A nil lo or hi is open; the range open below includes keys whose leading column is
// NULL. Pieces that are always false are left out; no pieces means an empty range; a
// single predConst(true) piece means the whole table.
//
// The shared prefix p is computed with exact Go equality (goEqual), which is finer than
// SQL equality (a case-insensitive collation makes 'n' = 'N', trailing spaces are
// ignored). Where the two disagree the guards of steps 3 and 5 keep the pieces disjoint:
// the lower pieces also require "below hi", and the upper pieces also require column p
// above lo[p], so a pair of bounds that SQL finds equal at p is read by the lower pieces
// alone.
//
// lo and hi, when given, must have n values: otherwise a *source.InvalidArgumentError.
func rangePieces(n int, lo, hi source.Key) ([]pred, error) {
	if lo != nil && len(lo) != n {
		return nil, &source.InvalidArgumentError{Arg: "key range", Reason: fmt.Sprintf("lower bound has %d values for %d key columns", len(lo), n)}
	}
	if hi != nil && len(hi) != n {
		return nil, &source.InvalidArgumentError{Arg: "key range", Reason: fmt.Sprintf("upper bound has %d values for %d key columns", len(hi), n)}
	}
	if lo == nil && hi == nil {
		return []pred{predConst(true)}, nil
	}
	if n == 0 {
		return nil, &source.InvalidArgumentError{Arg: "key range", Reason: "bounds given without key columns"}
	}
	loRef := func(i int) boundRef { return boundRef{sideLo, i} }
	hiRef := func(i int) boundRef { return boundRef{sideHi, i} }
	// eqRun is "columns from..to-1 equal the bound's values".
	eqRun := func(s side, b source.Key, from, to int) pred {
		ps := make([]pred, 0, to-from)
		for i := from; i < to; i++ {
			ps = append(ps, compare(i, opEq, boundRef{s, i}, b[i]))
		}
		return and(ps...)
	}

	// Step 2: the shared prefix, stopping at n-1.
	p := 0
	if lo != nil && hi != nil {
		for p < n-1 && goEqual(lo[p], hi[p]) {
			p++
		}
	}
	var prefix pred = predConst(true)
	if p > 0 {
		prefix = eqRun(sideLo, lo, 0, p)
	}

	// belowHi is "(k_p..k_{n-1}) < (hi_p..hi_{n-1})" as an OR over the first differing
	// column.
	var belowHi pred = predConst(true)
	if hi != nil {
		terms := make([]pred, 0, n-p)
		for j := p; j < n; j++ {
			terms = append(terms, and(eqRun(sideHi, hi, p, j), compare(j, opLt, hiRef(j), hi[j])))
		}
		belowHi = or(terms...)
	}

	var pieces []pred
	add := func(ps ...pred) {
		if q := and(ps...); q != predConst(false) {
			pieces = append(pieces, q)
		}
	}

	// Step 3: with a lower bound, from the last column up to p+1.
	if lo != nil {
		for j := n - 1; j > p; j-- {
			op := opGt
			if j == n-1 {
				op = opGe
			}
			add(prefix, eqRun(sideLo, lo, p, j), compare(j, op, loRef(j), lo[j]), belowHi)
		}
	}

	// Step 4: the middle piece, on column p alone.
	mid := []pred{prefix}
	if lo != nil {
		op := opGt
		if p == n-1 {
			op = opGe
		}
		mid = append(mid, compare(p, op, loRef(p), lo[p]))
	}
	if hi != nil {
		mid = append(mid, compare(p, opLt, hiRef(p), hi[p]))
	}
	add(mid...)

	// Step 5: with an upper bound, from p+1 to the last column.
	if hi != nil {
		for j := p + 1; j < n; j++ {
			ps := []pred{prefix, eqRun(sideHi, hi, p, j), compare(j, opLt, hiRef(j), hi[j])}
			if lo != nil {
				ps = append(ps, compare(p, opGt, loRef(p), lo[p]))
			}
			add(ps...)
		}
	}
	return pieces, nil
}

// afterPieces cuts (k_0..k_{n-1}) > after into disjoint conjunctions, one per column j
// from the last to the first: columns 0..j-1 equal after's values and column j above
// after[j] (docs/reference/sqlserver-cdc.md §8.6 step 3 with a strict last column and no
// upper bound). Each piece seeks on its equality prefix and column j. A NULL value of after
// compares as NULL sorts (= is IS NULL, > is IS NOT NULL). after's values are the sideLo
// bound. A nil after or one without n values is a *source.InvalidArgumentError.
func afterPieces(n int, after source.Key) ([]pred, error) {
	if n == 0 {
		return nil, &source.InvalidArgumentError{Arg: "keys", Reason: "no key columns"}
	}
	if after == nil || len(after) != n {
		return nil, &source.InvalidArgumentError{Arg: "key", Reason: fmt.Sprintf("need %d values for %d key columns, got %d", n, n, len(after))}
	}
	var pieces []pred
	for j := n - 1; j >= 0; j-- {
		ps := make([]pred, 0, j+1)
		for i := 0; i < j; i++ {
			ps = append(ps, compare(i, opEq, boundRef{sideLo, i}, after[i]))
		}
		ps = append(ps, compare(j, opGt, boundRef{sideLo, j}, after[j]))
		if q := and(ps...); q != predConst(false) {
			pieces = append(pieces, q)
		}
	}
	return pieces, nil
}

// goEqual is exact equality of two key values of the same column. Unknown or mixed types
// are unequal, which is always safe (it only shortens the shared prefix).
func goEqual(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch x := a.(type) {
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return false
}

// renderer writes a predicate tree as T-SQL. cols are the quoted column expressions and
// val returns the SQL of a bound value (a CAST parameter).
type renderer struct {
	cols []string
	val  func(boundRef) string
}

func (r renderer) render(p pred) string {
	var b strings.Builder
	r.write(&b, p, false)
	return b.String()
}

func (r renderer) write(b *strings.Builder, p pred, nested bool) {
	switch q := p.(type) {
	case predConst:
		if q {
			b.WriteString("1 = 1")
		} else {
			b.WriteString("1 = 0")
		}
	case predIsNull:
		b.WriteString(r.cols[q.col] + " IS NULL")
	case predNotNull:
		b.WriteString(r.cols[q.col] + " IS NOT NULL")
	case predCmp:
		b.WriteString(r.cols[q.col] + " " + q.op.String() + " " + r.val(q.val))
	case predAnd:
		if nested {
			b.WriteByte('(')
		}
		for i, c := range q {
			if i > 0 {
				b.WriteString(" AND ")
			}
			r.write(b, c, true)
		}
		if nested {
			b.WriteByte(')')
		}
	case predOr:
		b.WriteByte('(')
		for i, c := range q {
			if i > 0 {
				b.WriteString(" OR ")
			}
			r.write(b, c, true)
		}
		b.WriteByte(')')
	}
}
