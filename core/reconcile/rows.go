package reconcile

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// key is one row's key: its values as text, joined into text (the join key), and the
// value itself for an integer key.
type key struct {
	text  string
	vals  []string
	isInt bool
	int   int64
}

// digest is what tier 2 keeps of a row: a SHA-256 of its compared columns, one 64-bit
// hash per column (to name the columns that differ) and silver's _start_lsn. No value is
// kept.
type digest struct {
	key  []string
	row  [sha256.Size]byte
	cols []uint64
	lsn  string
	// in is the lower bound of the tier-1 bucket holding the key (minInt64: open, or the
	// whole table).
	in int64
}

// nullText stands for NULL in a row's text (a value's text never holds a NUL byte first).
const nullText = "\x00NULL"

// valueText is a[i] as text: arrow's ValueStr of the bronze type, which the source's rows
// and silver's share, as core/rebuild compares them.
func valueText(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return nullText
	}
	return a.ValueStr(i)
}

func keyOf(rec arrow.RecordBatch, keyCols []int, i int) key {
	k := key{vals: make([]string, len(keyCols))}
	for j, c := range keyCols {
		k.vals[j] = valueText(rec.Column(c), i)
	}
	k.text = strings.Join(k.vals, "\x1f")
	if len(keyCols) == 1 {
		k.int, k.isInt = intAt(rec.Column(keyCols[0]), i)
	}
	return k
}

func digestOf(rec arrow.RecordBatch, cols []int, i int) digest {
	d := digest{cols: make([]uint64, len(cols))}
	h := sha256.New()
	for j, c := range cols {
		v := valueText(rec.Column(c), i)
		fmt.Fprintf(h, "%d:%s;", len(v), v) // length-prefixed: no two rows share a text
		f := fnv.New64a()
		f.Write([]byte(v))
		d.cols[j] = f.Sum64()
	}
	h.Sum(d.row[:0])
	return d
}

// compareRows is tier 2: the rows of buckets on both sides, digested and joined on the
// key. A key only one side has, or whose digests differ, is a row of the report; one a
// change in flight touched, or that a chunk silver has not applied explains (unapplied),
// is IN_FLIGHT. bad holds the lower bound (minInt64: open, or the whole table) of each
// tier-1 bucket holding a key that differs and is not in flight. For tiles (keyTiles) it
// also returns a row per tile; silver's rows of a tile are those whose key the source's
// read of the tile returned, and, when every tile is read, every other silver row too
// (the tiles cover the key space).
func compareRows(ctx context.Context, d Deps, o Options, cols []source.Column, buckets []bucket, intKey bool, mv moved, un *unapplied) (tiles, keys []Row, bad map[int64]bool, err error) {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	keyCols := make([]int, len(o.Keys))
	for i, k := range o.Keys {
		keyCols[i] = slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, k.Name) })
	}
	all := seq(len(cols))

	src := map[string]digest{}
	tileOf := map[string]int{}
	for bi, b := range buckets {
		r := source.TableRead{Table: o.Table, Columns: cols, ReadOptions: o.Read}
		if intKey {
			r.Keys = o.Keys
			if b.lo != nil {
				r.Range.Lo = source.Key{b.bound(*b.lo)}
			}
			if b.hi != nil {
				r.Range.Hi = source.Key{b.bound(*b.hi)}
			}
		}
		if b.tile {
			r.Keys = o.Keys
			r.Range = source.KeyRange{Lo: b.keyLo, Hi: b.keyHi}
		}
		rows, err := d.Source.ReadTable(ctx, r)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("reconcile: read the source's rows: %w", err)
		}
		err = parquetio.Drain(ctx, rows, func(rec arrow.RecordBatch) error {
			for i := 0; i < int(rec.NumRows()); i++ {
				k := keyOf(rec, keyCols, i)
				dg := digestOf(rec, all, i)
				dg.key, dg.in = k.vals, int64Or(b.lo, minInt64)
				src[k.text] = dg
				if b.tile {
					tileOf[k.text] = bi
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("reconcile: read the source's rows: %w", err)
		}
	}

	tiled := len(buckets) > 0 && buckets[0].tile
	if !tiled {
		slices.SortFunc(buckets, func(a, b bucket) int { return cmp.Compare(int64Or(a.lo, minInt64), int64Or(b.lo, minInt64)) })
	}
	// inBuckets reports whether tier 2 reads k, and the lower bound of its bucket.
	inBuckets := func(k key) (int64, bool) {
		if tiled && !buckets[0].every {
			_, ok := src[k.text]
			return minInt64, ok
		}
		if !intKey {
			return minInt64, true
		}
		if !k.isInt {
			return 0, false
		}
		i, found := slices.BinarySearchFunc(buckets, k.int, func(b bucket, v int64) int { return cmp.Compare(int64Or(b.lo, minInt64), v) })
		if !found {
			i--
		}
		if i < 0 || !buckets[i].holds(k.int) {
			return 0, false
		}
		return int64Or(buckets[i].lo, minInt64), true
	}
	dst := map[string]digest{}
	err = scan(ctx, "silver", d.Silver, append(slices.Clone(names), startLSN), func(rec arrow.RecordBatch) error {
		lsns := rec.Column(len(names))
		for i := 0; i < int(rec.NumRows()); i++ {
			k := keyOf(rec, keyCols, i)
			in, ok := inBuckets(k)
			if !ok {
				continue
			}
			dg := digestOf(rec, all, i)
			dg.key, dg.lsn, dg.in = k.vals, valueText(lsns, i), in
			if _, dup := dst[k.text]; dup {
				return fmt.Errorf("reconcile: silver holds key %v twice: it is not a table keyed by %v", k.vals, names)
			}
			dst[k.text] = dg
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}

	var out []Row
	for k, s := range src {
		t, ok := dst[k]
		switch {
		case !ok:
			out = append(out, Row{Kind: MissingTarget, Scope: "key", Key: s.key})
		case s.row != t.row:
			var diff []string
			for j := range s.cols {
				if s.cols[j] != t.cols[j] {
					diff = append(diff, names[j])
				}
			}
			out = append(out, Row{Kind: RecordDiff, Scope: "key", Key: s.key, Columns: diff, TargetLSN: t.lsn})
		}
	}
	for k, t := range dst {
		if _, ok := src[k]; !ok {
			out = append(out, Row{Kind: MissingSource, Scope: "key", Key: t.key, TargetLSN: t.lsn})
		}
	}
	// A difference a change after silver's position or a chunk silver has not applied
	// explains is in flight.
	keyText := func(r Row) string { return strings.Join(r.Key, "\x1f") }
	if slices.ContainsFunc(out, func(r Row) bool { return !mv.keys[keyText(r)] && un.needsSource(r.Kind, r.TargetLSN) }) {
		if err := un.readSource(ctx, d.Source, o); err != nil {
			return nil, nil, nil, err
		}
	}
	bad = map[int64]bool{}
	for i, r := range out {
		k := keyText(r)
		if mv.keys[k] || un.explains(key{text: k, vals: r.Key}, r.Kind, r.TargetLSN) {
			out[i].Kind = InFlight
			continue
		}
		dg, ok := src[k]
		if !ok {
			dg = dst[k]
		}
		bad[dg.in] = true
	}
	slices.SortFunc(out, func(a, b Row) int { return strings.Compare(strings.Join(a.Key, "\x1f"), strings.Join(b.Key, "\x1f")) })
	if tiled {
		tiles = tileRows(buckets, tileOf, dst, out, func(v []string) string { return strings.Join(v, "\x1f") })
	}
	return tiles, out, bad, nil
}

func fieldIndex(sc *arrow.Schema, name string) int {
	return slices.IndexFunc(sc.Fields(), func(f arrow.Field) bool { return strings.EqualFold(f.Name, name) })
}
