package reconcile

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// unapplied are the chunks of an open chunked snapshot S that silver has not applied yet
// (docs/reconcile.md § While a chunked snapshot is open): chunks not read yet, and chunks
// read into bronze after the newest wave silver's position records. Their waves will
// bring every key the source holds in their ranges, as an image at their stamp, and
// delete the keys of their ranges silver holds with an image older than S. So:
//
//   - a key the source holds in such a chunk's planned range that silver lacks, or holds
//     with an image older than S, is in flight;
//   - a key silver alone holds, with an image older than S, in such a chunk's range (the
//     first chunk open below, the last open above, as range deletes take them) is in
//     flight; for a key reconcile cannot place in a range (not integer columns: the server's
//     order decides), any such key is, since the completing wave rebuilds silver when it
//     holds a row older than S (docs/silver.md § Chunk waves).
//
// An image at or after S is the stream's or an applied chunk's: a difference on it is
// explained by a moved key or not at all.
type unapplied struct {
	// s is S; "" when nothing is unapplied (no snapshot open, or silver holds it whole).
	s string
	// keys are the columns the plan's bounds compare on, resolved among the captured
	// columns; nil when they are not (nothing can be placed: no key is in flight for them).
	keys []source.Column
	// planned are the unapplied chunks' ranges as planned, adjacent chunks merged; wide the
	// same with chunk 0 open below and the last chunk open above.
	planned, wide []span
	// numeric is true when the plan's keys are reconcile's and all integer columns: keys
	// are placed by comparing numbers, with no read of the server.
	numeric bool
	// inSource are the source's keys in the planned ranges (read on first need when not
	// numeric), by key text.
	inSource map[string]bool
}

// span is a chunk range [lo, hi) as the plans table holds its bounds ("" open), and as
// integers when numeric.
type span struct {
	lo, hi       string
	loInt, hiInt []*int64
}

// unappliedChunks finds the chunks of the newest open chunked snapshot in rec that silver
// has not applied, by silver's position pos (nil: none recorded; the chunks with a chunk
// row then count as applied). keys are reconcile's key columns, cols the captured ones.
// When the open row's key columns are not captured columns (or it records none), nothing
// is placed and log says so.
func unappliedChunks(rec *ChunkRecords, pos *silver.Position, keys, cols []source.Column, log *slog.Logger) *unapplied {
	u := &unapplied{}
	open := rec.newestOpen()
	if open == nil {
		return u
	}
	s := open.Snapshot
	if pos != nil && pos.Snapshot != "" && pos.Snapshot >= s {
		return u // silver stands on S whole, or on a newer whole snapshot
	}
	if pos == nil && rec.complete(s) {
		return u
	}
	plan, read := rec.chunkRows(s)
	applied := func(i int32) bool {
		rs := read[i]
		if len(rs) == 0 {
			return false
		}
		if pos == nil {
			return true
		}
		return pos.OpenSnapshot == s && pos.Wave != nil && rs[0].Wave != nil && *rs[0].Wave <= *pos.Wave
	}
	var idx []int32
	for i := range plan {
		if !applied(i) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return u
	}
	slices.Sort(idx)
	u.s = s
	var names []string
	if err := json.Unmarshal([]byte(open.Keys), &names); err != nil || len(names) == 0 {
		log.Warn("reconcile: the plans table's open row records no key columns: the unapplied chunks are not placed", "keys", open.Keys, "snapshot", s)
		return u
	}
	for _, n := range names {
		i := slices.IndexFunc(cols, func(c source.Column) bool { return strings.EqualFold(c.Name, n) })
		if i < 0 {
			log.Warn("reconcile: the open chunked snapshot's key columns are not captured columns: its unapplied chunks are not placed", "keys", names, "snapshot", s)
			return u
		}
		u.keys = append(u.keys, cols[i])
	}
	u.numeric = slices.EqualFunc(u.keys, keys, func(a, b source.Column) bool { return strings.EqualFold(a.Name, b.Name) }) &&
		!slices.ContainsFunc(keys, func(c source.Column) bool { return !integerType(c.DataType) })
	last := int32(-1)
	for i, ps := range plan {
		if ps[0].Last != nil && *ps[0].Last {
			last = max(last, i)
		}
	}
	for n, i := range idx {
		p := plan[i][0]
		w := span{lo: p.Lo, hi: p.Hi}
		if i == 0 {
			w.lo = ""
		}
		if i == last {
			w.hi = ""
		}
		if n > 0 && idx[n-1] == i-1 {
			u.planned[len(u.planned)-1].hi = p.Hi
			u.wide[len(u.wide)-1].hi = w.hi
			continue
		}
		u.planned = append(u.planned, span{lo: p.Lo, hi: p.Hi})
		u.wide = append(u.wide, w)
	}
	if u.numeric {
		for _, ss := range [][]span{u.planned, u.wide} {
			for j := range ss {
				var ok1, ok2 bool
				ss[j].loInt, ok1 = intBound(ss[j].lo, u.keys)
				ss[j].hiInt, ok2 = intBound(ss[j].hi, u.keys)
				if !ok1 || !ok2 {
					u.numeric = false
				}
			}
		}
	}
	return u
}

// any is true when a chunk is unapplied.
func (u *unapplied) any() bool { return u != nil && u.s != "" }

// touches reports whether tier-1 bucket b may hold a key of an unapplied chunk: for an
// integer key placed by number, when b's range meets a chunk's (its wide range); any
// bucket otherwise.
func (u *unapplied) touches(b *bucket, intKey bool) bool {
	if !u.any() || u.keys == nil {
		return false
	}
	if !intKey || !u.numeric || b.date {
		return true
	}
	for _, w := range u.wide {
		// [b.lo, b.hi) and [w.lo, w.hi) overlap: each starts below the other's end.
		if below(w.loInt, firstOf(b.hi)) && below(firstOf(b.lo), w.hiInt) {
			return true
		}
	}
	return false
}

// below reports whether lo < hi, bounds of a single integer key: an empty lo (or NULL)
// is open below, an empty hi open above.
func below(lo, hi []*int64) bool {
	return len(hi) == 0 || len(lo) == 0 || lo[0] == nil || (hi[0] != nil && *lo[0] < *hi[0])
}

func firstOf(p *int64) []*int64 {
	if p == nil {
		return nil
	}
	return []*int64{p}
}

// readSource reads the source's keys in the planned ranges, one key-range read each, on
// first need: the server's order places a key that is not a number.
func (u *unapplied) readSource(ctx context.Context, src source.Source, o Options) error {
	if u.numeric || u.inSource != nil || u.keys == nil {
		return nil
	}
	u.inSource = map[string]bool{}
	keyCols := seq(len(o.Keys))
	for _, sp := range u.planned {
		r := source.TableRead{Table: o.Table, Columns: o.Keys, Keys: u.keys, ReadOptions: o.Read}
		var err error
		if r.Range.Lo, err = snapshot.DecodeBound(sp.lo, u.keys); err == nil {
			r.Range.Hi, err = snapshot.DecodeBound(sp.hi, u.keys)
		}
		if err != nil {
			return fmt.Errorf("reconcile: the open chunked snapshot's bounds: %w", err)
		}
		rows, err := src.ReadTable(ctx, r)
		if err == nil {
			err = parquetio.Drain(ctx, rows, func(rec arrow.RecordBatch) error {
				for i := 0; i < int(rec.NumRows()); i++ {
					u.inSource[keyOf(rec, keyCols, i).text] = true
				}
				return nil
			})
		}
		if err != nil {
			return fmt.Errorf("reconcile: read the source's keys of the chunks silver has not applied: %w", err)
		}
	}
	return nil
}

// explains reports whether an unapplied chunk explains a difference of kind on key k;
// lsn is silver's _start_lsn of the key ("" when silver lacks it). readSource must have
// run when the keys are not numeric.
func (u *unapplied) explains(k key, kind Kind, lsn string) bool {
	if !u.any() || u.keys == nil {
		return false
	}
	older := lsn != "" && lsn < u.s // silver's image predates S
	switch kind {
	case MissingTarget, RecordDiff:
		if kind == RecordDiff && !older {
			return false
		}
		if u.numeric {
			return inSpans(u.planned, k.vals)
		}
		return u.inSource[k.text]
	case MissingSource:
		return older && (!u.numeric || inSpans(u.wide, k.vals))
	}
	return false
}

// needsSource reports whether explains needs the source's keys for a difference of kind.
func (u *unapplied) needsSource(kind Kind, lsn string) bool {
	return u.any() && u.keys != nil && !u.numeric &&
		(kind == MissingTarget || (kind == RecordDiff && lsn != "" && lsn < u.s))
}

// inSpans reports whether the integer key vals (text, as keyOf has them) is in a span.
func inSpans(ss []span, vals []string) bool {
	k := make([]*int64, len(vals))
	for i, v := range vals {
		if v == nullText {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		k[i] = &n
	}
	for _, s := range ss {
		if (s.lo == "" || cmpKey(k, s.loInt) >= 0) && (s.hi == "" || cmpKey(k, s.hiInt) < 0) {
			return true
		}
	}
	return false
}

// cmpKey compares integer keys value by value, NULL (nil) first, as SQL Server orders them.
func cmpKey(a, b []*int64) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		switch {
		case a[i] == nil && b[i] == nil:
		case a[i] == nil:
			return -1
		case b[i] == nil:
			return 1
		case *a[i] != *b[i]:
			return cmp.Compare(*a[i], *b[i])
		}
	}
	return cmp.Compare(len(a), len(b))
}

// intBound is a plans table bound of the integer key columns keys as numbers (nil values
// NULL; a nil list for an open bound), decoded as the snapshot's range reads decode it
// (snapshot.DecodeBound); ok is false when a value is not an integer.
func intBound(text string, keys []source.Column) ([]*int64, bool) {
	k, err := snapshot.DecodeBound(text, keys)
	if err != nil {
		return nil, false
	}
	out := make([]*int64, len(k))
	for i, v := range k {
		if v == nil {
			continue
		}
		x, ok := v.(int64)
		if !ok {
			return nil, false
		}
		out[i] = &x
	}
	return out, true
}

func integerType(t string) bool {
	switch t {
	case "tinyint", "smallint", "int", "bigint":
		return true
	}
	return false
}
