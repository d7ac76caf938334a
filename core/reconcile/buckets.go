package reconcile

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

type arrowField = arrow.Field

// bucket is one tier-1 bucket: the keys in [lo, hi) of an integer key, or of a date key's
// days since 1970-01-01 (nil: open), or the whole table for another key; counts and key
// sums on each side; or a tile of another key: the keys in [keyLo, keyHi) in SQL Server's
// order (nil: open), every true when every tile is read.
type bucket struct {
	lo, hi         *int64
	date           bool
	tile, every    bool
	keyLo, keyHi   source.Key
	src, dst       int64
	srcSum, dstSum string
	kind           Kind
}

func (b bucket) row() Row {
	r := Row{Kind: b.kind, Scope: "bucket", SourceRows: b.src, TargetRows: b.dst}
	text := func(v int64) string {
		if b.date {
			return dayTime(v).Format(time.DateOnly)
		}
		return strconv.FormatInt(v, 10)
	}
	if b.lo != nil {
		r.Lo = text(*b.lo)
	}
	if b.hi != nil {
		r.Hi = text(*b.hi)
	}
	return r
}

// bound is a bucket bound as a key value of the source's read: the integer, or the
// date (UTC midnight) of a date key's days.
func (b bucket) bound(v int64) any {
	if b.date {
		return dayTime(v)
	}
	return v
}

// dayTime is the UTC midnight of days since 1970-01-01.
func dayTime(days int64) time.Time { return time.Unix(days*86400, 0).UTC() }

// daysOf is a key value of KeyExtent as a bucketed integer: an integer as is, a date as
// its days since 1970-01-01 (floored).
func daysOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case time.Time:
		return floorDiv(x.Unix(), 86400), true
	}
	return 0, false
}

// holds reports whether k falls in the bucket.
func (b bucket) holds(k int64) bool {
	return (b.lo == nil || k >= *b.lo) && (b.hi == nil || k < *b.hi)
}

// silverSide is what one scan of silver's key column and _start_lsn gives tier 1.
type silverSide struct {
	rows int64
	// ints are the keys of an integer key (NULL keys left out, as the server's buckets
	// leave them out).
	ints []int64
	// newest is the newest _start_lsn among the rows.
	newest lsn.LSN
}

func silverBuckets(ctx context.Context, snap *deltalog.Snapshot, keys []source.Column, intKey bool) (silverSide, error) {
	var side silverSide
	cols := []string{keys[0].Name, startLSN}
	if !intKey {
		cols = []string{startLSN}
	}
	err := scan(ctx, "silver", snap, cols, func(rec arrow.RecordBatch) error {
		side.rows += rec.NumRows()
		lsns, _ := rec.Column(len(cols) - 1).(*array.String)
		for i := 0; lsns != nil && i < lsns.Len(); i++ {
			if lsns.IsValid(i) {
				if l, err := lsn.Parse(lsns.Value(i)); err == nil && side.newest.Less(l) {
					side.newest = l
				}
			}
		}
		if intKey {
			a := rec.Column(0)
			for i := 0; i < a.Len(); i++ {
				if k, ok := intAt(a, i); ok {
					side.ints = append(side.ints, k)
				}
			}
		}
		return nil
	})
	return side, err
}

// intBuckets is tier 1 for one integer or date key (a date as its days since 1970-01-01):
// fine buckets over the span of both sides' keys, counted and summed by the server in one
// scan and from silver's keys here, merged in key order until the larger side holds
// o.BucketRows rows.
func intBuckets(ctx context.Context, src source.Source, o Options, side silverSide) ([]bucket, error) {
	date := isDate(o.Keys[0].DataType)
	lo, hi, any := int64(0), int64(0), false
	mn, mx, ok, err := src.KeyExtent(ctx, o.Table, o.Keys[0], nil, nil)
	if err != nil {
		return nil, fmt.Errorf("reconcile: key extent: %w", err)
	}
	if ok {
		l, okl := daysOf(mn)
		h, okh := daysOf(mx)
		if !okl || !okh {
			return nil, fmt.Errorf("reconcile: key extent of %s: %T and %T, want integers or dates", o.Keys[0].Name, mn, mx)
		}
		lo, hi, any = l, h, true
	}
	for _, k := range side.ints {
		if !any || k < lo {
			lo = k
		}
		if !any || k > hi {
			hi = k
		}
		any = true
	}
	if !any {
		return []bucket{{date: date, srcSum: "0", dstSum: "0"}}, nil
	}
	width := fineWidth(lo, hi)
	srcFine, err := src.KeyBuckets(ctx, o.Table, o.Keys[0], width, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("reconcile: count the source's key buckets: %w", err)
	}
	type counts struct {
		src, dst       int64
		srcSum, dstSum big.Int
	}
	fine := map[int64]*counts{}
	at := func(i int64) *counts {
		if fine[i] == nil {
			fine[i] = &counts{}
		}
		return fine[i]
	}
	for _, b := range srcFine {
		c := at(b.Index)
		c.src = b.Rows
		if _, ok := c.srcSum.SetString(b.KeySum, 10); !ok {
			return nil, fmt.Errorf("reconcile: the source's key sum %q is not an integer", b.KeySum)
		}
	}
	for _, k := range side.ints {
		c := at(floorDiv(k, width))
		c.dst++
		c.dstSum.Add(&c.dstSum, big.NewInt(k))
	}
	idx := make([]int64, 0, len(fine))
	for i := range fine {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var out []bucket
	var cur *bucket
	var srcSum, dstSum big.Int
	next := lo // buckets tile [lo, hi]: each starts where the previous ended
	for n, i := range idx {
		c := fine[i]
		if cur == nil {
			l := next
			cur = &bucket{lo: &l, date: date}
			srcSum.SetInt64(0)
			dstSum.SetInt64(0)
		}
		cur.src += c.src
		cur.dst += c.dst
		srcSum.Add(&srcSum, &c.srcSum)
		dstSum.Add(&dstSum, &c.dstSum)
		if max64(cur.src, cur.dst) >= o.BucketRows || n == len(idx)-1 {
			h := (i + 1) * width
			if n == len(idx)-1 {
				h = hi + 1
			}
			cur.hi = &h
			next = h
			cur.srcSum, cur.dstSum = srcSum.String(), dstSum.String()
			out = append(out, *cur)
			cur = nil
		}
	}
	return out, nil
}

// fineWidth cuts [lo, hi] into about fineBuckets buckets of at least one key each.
func fineWidth(lo, hi int64) int64 {
	span := new(big.Int).Sub(big.NewInt(hi), big.NewInt(lo))
	span.Add(span, big.NewInt(fineBuckets))
	span.Quo(span, big.NewInt(fineBuckets))
	if !span.IsInt64() || span.Int64() < 1 {
		return 1
	}
	return span.Int64()
}

// floorDiv is a divided by b rounded towards negative infinity (b > 0), as the server's
// buckets are (docs/reference/original-library.md §14).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// wholeTable is tier 1 for any other key: one bucket, the source's rows counted by reading
// the key columns (no value leaves the count) against silver's rows.
func wholeTable(ctx context.Context, src source.Source, o Options, side silverSide) ([]bucket, error) {
	rows, err := src.ReadTable(ctx, source.TableRead{Table: o.Table, Columns: o.Keys, ReadOptions: o.Read})
	if err != nil {
		return nil, fmt.Errorf("reconcile: count the source's rows: %w", err)
	}
	var n int64
	if err := parquetio.Drain(ctx, rows, func(rec arrow.RecordBatch) error { n += rec.NumRows(); return nil }); err != nil {
		return nil, fmt.Errorf("reconcile: count the source's rows: %w", err)
	}
	return []bucket{{src: n, dst: side.rows}}, nil
}

// scan reads cols of every live row of snap, record by record.
func scan(ctx context.Context, what string, snap *deltalog.Snapshot, cols []string, each func(arrow.RecordBatch) error) error {
	return scanWhere(ctx, what, snap, cols, nil, each)
}

// scanWhere reads cols of the live rows of snap that filter keeps (nil: all).
func scanWhere(ctx context.Context, what string, snap *deltalog.Snapshot, cols []string, filter deltalog.Filter, each func(arrow.RecordBatch) error) error {
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: cols, Filter: filter})
	if err == nil {
		err = parquetio.Drain(ctx, it, each)
	}
	if err != nil {
		return fmt.Errorf("reconcile: read %s: %w", what, err)
	}
	return nil
}

// intAt is a[i] of an integer column as int64; ok is false for NULL or another type.
func intAt(a arrow.Array, i int) (int64, bool) {
	if a.IsNull(i) {
		return 0, false
	}
	switch v := a.(type) {
	case *array.Int64:
		return v.Value(i), true
	case *array.Int32:
		return int64(v.Value(i)), true
	case *array.Int16:
		return int64(v.Value(i)), true
	case *array.Int8:
		return int64(v.Value(i)), true
	case *array.Uint8:
		return int64(v.Value(i)), true
	case *array.Date32: // days since 1970-01-01, a date key's bucketed value
		return int64(v.Value(i)), true
	}
	return 0, false
}

// bucketed is a SQL Server type tier 1 buckets: an integer type, or date (by its days
// since 1970-01-01, as Source.KeyBuckets counts it).
func bucketed(t string) bool {
	switch t {
	case "tinyint", "smallint", "int", "bigint", "date":
		return true
	}
	return false
}

func isDate(t string) bool { return t == "date" }
