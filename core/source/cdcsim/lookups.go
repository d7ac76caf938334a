package cdcsim

import (
	"context"
	"math/big"
	"slices"
	"sort"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// KeyExtent implements source.Source: MIN and MAX of one column, NULLs ignored as MIN and
// MAX ignore them.
func (db *DB) KeyExtent(ctx context.Context, st source.Table, key source.Column, lo, hi *int64) (any, any, bool, error) {
	var r source.KeyRange
	if lo != nil {
		r.Lo = source.Key{*lo}
	}
	if hi != nil {
		r.Hi = source.Key{*hi}
	}
	t, k, l, h, _, err := db.sourceRead(ctx, "KeyExtent", st, []source.Column{key}, r, false)
	defer db.mu.Unlock()
	if err != nil {
		return nil, nil, false, err
	}
	if (lo != nil || hi != nil) && kindOf(k.cols[0].DataType) != kindInt {
		return nil, nil, false, &source.InvalidArgumentError{Arg: "lo/hi", Reason: "bounds apply to integer keys only"}
	}
	rows := t.ordered(k, l, h)
	var mn, mx any
	for _, row := range rows {
		v := row.value(k.ids[0])
		if v == nil {
			continue
		}
		if mn == nil || compareValues(k.cols[0], v, mn) < 0 {
			mn = v
		}
		if mx == nil || compareValues(k.cols[0], v, mx) > 0 {
			mx = v
		}
		if k.prefix {
			// Index order: the first non-NULL is MIN; MAX is the last row.
			mx = rows[len(rows)-1].value(k.ids[0])
			break
		}
	}
	if mn == nil {
		return nil, nil, false, nil
	}
	return mn, mx, true, nil
}

// KeyMax implements source.Source.
func (db *DB) KeyMax(ctx context.Context, st source.Table, keys []source.Column) (source.Key, bool, error) {
	t, k, _, _, _, err := db.sourceRead(ctx, "KeyMax", st, keys, source.KeyRange{}, false)
	defer db.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	if len(keys) == 0 {
		return nil, false, &source.InvalidArgumentError{Arg: "keys", Reason: "no key columns"}
	}
	if k.prefix {
		all := t.order()
		if len(all) == 0 {
			return nil, false, nil
		}
		return k.project(all[len(all)-1]), true, nil
	}
	var best *row
	for _, r := range t.list {
		if best == nil || k.cmp(k.project(r), k.project(best)) > 0 {
			best = r
		}
	}
	if best == nil {
		return nil, false, nil
	}
	return k.project(best), true, nil
}

// KeyBound implements source.Source.
func (db *DB) KeyBound(ctx context.Context, st source.Table, keys []source.Column, r source.KeyRange, n int64) (source.Key, bool, error) {
	t, k, lo, hi, _, err := db.sourceRead(ctx, "KeyBound", st, keys, r, false)
	defer db.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	if len(keys) == 0 || n < 0 {
		return nil, false, &source.InvalidArgumentError{Arg: "keys/n", Reason: "need key columns and n >= 0"}
	}
	rows := t.ordered(k, lo, hi)
	if int64(len(rows)) <= n {
		return nil, false, nil
	}
	return k.project(rows[n]), true, nil
}

// KeyAfter implements source.Source: the first row whose key compares above after,
// column by column as SQL Server compares (compareValues: NULL first, collations,
// uniqueidentifier order), so every row of after's value is skipped.
func (db *DB) KeyAfter(ctx context.Context, st source.Table, keys []source.Column, after source.Key) (source.Key, bool, error) {
	if len(keys) == 0 || after == nil {
		db.mu.Lock()
		defer db.mu.Unlock()
		if err := db.begin(ctx, "KeyAfter"); err != nil {
			return nil, false, err
		}
		return nil, false, &source.InvalidArgumentError{Arg: "keys/key", Reason: "need key columns and a key to seek after"}
	}
	t, k, lo, _, _, err := db.sourceRead(ctx, "KeyAfter", st, keys, source.KeyRange{Lo: after}, false)
	defer db.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	rows := t.ordered(k, lo, nil)
	i := sort.Search(len(rows), func(x int) bool { return k.cmpRow(rows[x], lo) > 0 })
	if i == len(rows) {
		return nil, false, nil
	}
	return k.project(rows[i]), true, nil
}

// KeyTiles implements source.Source.
func (db *DB) KeyTiles(ctx context.Context, st source.Table, keys []source.Column, n int) ([]source.Key, error) {
	t, k, _, _, _, err := db.sourceRead(ctx, "KeyTiles", st, keys, source.KeyRange{}, false)
	defer db.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 || n < 1 {
		return nil, &source.InvalidArgumentError{Arg: "keys/n", Reason: "need key columns and n >= 1"}
	}
	rows := t.ordered(k, nil, nil)
	var out []source.Key
	pos := 0
	for i, size := range ntileSizes(len(rows), n) {
		if i > 0 {
			out = append(out, k.project(rows[pos]))
		}
		pos += size
	}
	return out, nil
}

// KeyBuckets implements source.Source for integer keys (and date keys, by days since
// 1970-01-01, as S4 does): bucket = floor(key / width).
func (db *DB) KeyBuckets(ctx context.Context, st source.Table, key source.Column, width int64, lo, hi *int64) ([]source.Bucket, error) {
	var r source.KeyRange
	if lo != nil {
		r.Lo = source.Key{*lo}
	}
	if hi != nil {
		r.Hi = source.Key{*hi}
	}
	t, k, l, h, _, err := db.sourceRead(ctx, "KeyBuckets", st, []source.Column{key}, r, false)
	defer db.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if width < 1 {
		return nil, &source.InvalidArgumentError{Arg: "width", Reason: "must be at least 1"}
	}
	kd := kindOf(k.cols[0].DataType)
	if kd != kindInt && kd != kindDate {
		return nil, &source.InvalidArgumentError{Arg: "key", Reason: key.Name + " is not an integer or date column"}
	}
	if kd == kindDate && (lo != nil || hi != nil) {
		return nil, &source.InvalidArgumentError{Arg: "key bucket bounds", Reason: "bounds apply to integer keys only, not date"}
	}
	counts := map[int64]int64{}
	sums := map[int64]*big.Int{}
	for _, row := range t.ordered(k, l, h) {
		var o int64
		switch v := row.value(k.ids[0]).(type) {
		case nil:
			continue
		case int64:
			o = v
		case time.Time:
			o = v.Unix() / 86400
			if v.Unix()%86400 < 0 {
				o--
			}
		}
		b := floorDiv(o, width)
		counts[b]++
		if sums[b] == nil {
			sums[b] = new(big.Int)
		}
		sums[b].Add(sums[b], big.NewInt(o))
	}
	out := make([]source.Bucket, 0, len(counts))
	for b, c := range counts {
		out = append(out, source.Bucket{Index: b, Rows: c, KeySum: sums[b].String()})
	}
	slices.SortFunc(out, func(a, b source.Bucket) int { return cmpOrdered(a.Index, b.Index) })
	return out, nil
}

// floorDiv is a divided by b rounded towards negative infinity (b > 0), the bucket of a key
// (T-SQL's / truncates towards zero; S4 floors so buckets match Spark's).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// SizeEstimate implements source.Source with the exact row count, and the bytes the rows
// would take in SQL Server's pages, about: a row header and each value's stored width
// (storedBytes).
func (db *DB) SizeEstimate(ctx context.Context, st source.Table) (source.TableSize, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "SizeEstimate"); err != nil {
		return source.TableSize{}, err
	}
	t, err := db.tableOf(st)
	if err != nil {
		return source.TableSize{}, err
	}
	size := source.TableSize{Rows: int64(len(t.list))}
	for _, r := range t.list {
		size.Bytes += rowHeaderBytes
		for _, c := range t.cols {
			if !c.Computed {
				size.Bytes += storedBytes(c, r.value(c.ColumnID))
			}
		}
	}
	return size, nil
}
