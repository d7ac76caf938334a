package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Chunk planning (docs/snapshots.md "How chunks are sized";
// docs/reference/original-library.md §11). A plan is a list of chunks [lo, hi) tiling the
// key space: the first open below (it holds the NULLs and any key inserted below MIN), each
// starting where the previous ends, the last ending just above the MAX recorded at the open
// (keys above it were inserted after S: the stream carries them).

// chunk is one planned chunk: [Lo, Hi) as JSON key values (encodeKey), nil ends open.
type chunk struct {
	Index int
	Lo    []any
	Hi    []any
	Last  bool
	// Rows is the count an integer plan found in the chunk when planning; nil for keyset
	// plans (about chunk_rows each, the last one fewer).
	Rows *int64
}

// Limits of the integer plan's slice grid (docs/reference/original-library.md §11.1).
const (
	slicesPerChunk = 16
	maxSlices      = 100_000
)

// extent is what the open recorded of the key (the plans table's open row): the plan kind,
// the key columns, MIN (integer keys) and MAX as JSON key values, and the row estimate.
type extent struct {
	Kind string
	Keys []string
	Min  []any
	Max  []any
	Rows int64
}

// planner cuts one table into chunks of at most ChunkRows rows.
type planner struct {
	src       source.Source
	t         source.Table
	keys      []source.Column
	unique    bool
	chunkRows int64
}

// plan cuts the table as the open's extent says: by row counts per slice for one integer
// key, by keyset seeks for any other key, one chunk for none.
func (p planner) plan(ctx context.Context, ext extent) ([]chunk, error) {
	switch ext.Kind {
	case PlanKindInt:
		mn, err := decodeKey(ext.Min, p.keys)
		if err != nil {
			return nil, err
		}
		mx, err := decodeKey(ext.Max, p.keys)
		if err != nil {
			return nil, err
		}
		lo, ok1 := mn[0].(int64)
		hi, ok2 := mx[0].(int64)
		if !ok1 || !ok2 || hi < lo {
			return nil, &KeyError{Column: p.keys[0].Name, Reason: fmt.Sprintf("recorded extent %v..%v is not an integer range", ext.Min, ext.Max)}
		}
		return p.intChunks(ctx, lo, hi, ext.Rows)
	case PlanKindKeyset:
		mx, err := decodeKey(ext.Max, p.keys)
		if err != nil {
			return nil, err
		}
		return p.keysetChunks(ctx, mx)
	}
	return []chunk{{Index: 0, Last: true}}, nil
}

// slice is a run of integer keys [Start, next slice's start) holding Rows rows.
type slice struct {
	Start int64
	Rows  int64
}

// intChunks plans one integer key whose extent at the open was [mn, mx] with about est
// rows: the slices' row counts (cut), packed in key order into chunks of at most
// chunkRows rows; a chunk closes at the start of the slice that would take it past
// chunkRows, so every bound but the last is the start of a non-empty slice. The last
// chunk ends at mx + 1 (open when that overflows).
func (p planner) intChunks(ctx context.Context, mn, mx, est int64) ([]chunk, error) {
	var end *int64
	if mx < math.MaxInt64 {
		e := mx + 1
		end = &e
	}
	slices, err := p.cut(ctx, nil, end, mn, mx, max(est, 1))
	if err != nil {
		return nil, err
	}
	var out []chunk
	var lo []any
	var acc int64
	for _, s := range slices {
		if acc > 0 && acc+s.Rows > p.chunkRows {
			hi := []any{s.Start}
			out = append(out, chunk{Index: len(out), Lo: lo, Hi: hi, Rows: ptr(acc)})
			lo, acc = hi, 0
		}
		acc += s.Rows
	}
	last := chunk{Index: len(out), Lo: lo, Last: true, Rows: ptr(acc)}
	if end != nil {
		last.Hi = []any{*end}
	}
	return append(out, last), nil
}

// cut counts the rows of [a, b) (nil: open) per slice of a grid over [lo, hi] — 16 slices
// per chunk_rows of the rows expected, at most 100,000, anchored at multiples of the
// slice width from 0 — in one grouped count on the server (Source.KeyBuckets). A slice
// holding more than chunkRows rows and wider than one key is counted again on a finer grid
// over its own MIN and MAX; one the recount finds empty (rows deleted since) keeps its
// first count. Returns the non-empty slices in key order, each start clamped to a.
func (p planner) cut(ctx context.Context, a, b *int64, lo, hi, rows int64) ([]slice, error) {
	n := int64(maxSlices)
	if rows <= maxSlices/slicesPerChunk*p.chunkRows {
		n = max(1, (slicesPerChunk*rows+p.chunkRows-1)/p.chunkRows)
	}
	span := new(big.Int).Sub(big.NewInt(hi), big.NewInt(lo))
	span.Add(span, big.NewInt(1))
	w := new(big.Int).Add(span, big.NewInt(n-1))
	w.Quo(w, big.NewInt(n))
	if !w.IsInt64() || w.Int64() < 1 {
		return nil, &KeyError{Column: p.keys[0].Name, Reason: fmt.Sprintf("slice width of %d..%d over %d slices out of range", lo, hi, n)}
	}
	width := w.Int64()
	buckets, err := p.src.KeyBuckets(ctx, p.t, p.keys[0], width, a, b)
	if err != nil {
		return nil, fmt.Errorf("count rows per slice of %s: %w", p.keys[0].Name, err)
	}
	var out []slice
	for _, bk := range buckets {
		s := clampMul(bk.Index, width)
		e := clampMul(bk.Index+1, width)
		if a != nil && s < *a {
			s = *a
		}
		if b != nil && e > *b {
			e = *b
		}
		if bk.Rows > p.chunkRows && width > 1 {
			smin, smax, ok, err := p.src.KeyExtent(ctx, p.t, p.keys[0], &s, &e)
			if err != nil {
				return nil, fmt.Errorf("read the extent of a dense slice of %s: %w", p.keys[0].Name, err)
			}
			if ok {
				l, ok1 := smin.(int64)
				h, ok2 := smax.(int64)
				if ok1 && ok2 {
					sub, err := p.cut(ctx, &s, &e, l, h, bk.Rows)
					if err != nil {
						return nil, err
					}
					if len(sub) > 0 {
						sub[0].Start = s // the slice's part of the key space starts where it did
						out = append(out, sub...)
						continue
					}
				}
			}
		}
		out = append(out, slice{Start: s, Rows: bk.Rows})
	}
	return out, nil
}

// clampMul is i·w held to int64's range.
func clampMul(i, w int64) int64 {
	v := new(big.Int).Mul(big.NewInt(i), big.NewInt(w))
	switch {
	case v.Cmp(big.NewInt(math.MaxInt64)) > 0:
		return math.MaxInt64
	case v.Cmp(big.NewInt(math.MinInt64)) < 0:
		return math.MinInt64
	}
	return v.Int64()
}

// keysetChunks plans any other key by keyset seeks (seeker): from an open start, each
// chunk ends chunkRows keys after the previous one, below MAX, until fewer are left; the
// last chunk ends at the first key after MAX, or stays open when there is none yet (it is
// sought again before the wave that reads it: lastEnd).
func (p planner) keysetChunks(ctx context.Context, mx source.Key) ([]chunk, error) {
	sk := seeker{src: p.src, t: p.t, keys: p.keys, unique: p.unique}
	var out []chunk
	var lo source.Key
	var loJSON []any
	for {
		b, ok, err := sk.next(ctx, lo, mx, p.chunkRows)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		hi, err := encodeKey(b)
		if err != nil {
			return nil, &KeyError{Column: joinNames(p.keys), Reason: err.Error()}
		}
		out = append(out, chunk{Index: len(out), Lo: loJSON, Hi: hi})
		lo, loJSON = b, hi
	}
	hi, err := p.lastEnd(ctx, mx)
	if err != nil {
		return nil, err
	}
	return append(out, chunk{Index: len(out), Lo: loJSON, Hi: hi, Last: true}), nil
}

// lastEnd is the end of a keyset plan's last chunk: the first key after MAX, nil (open)
// while none exists.
func (p planner) lastEnd(ctx context.Context, mx source.Key) ([]any, error) {
	sk := seeker{src: p.src, t: p.t, keys: p.keys, unique: p.unique}
	a, ok, err := sk.after(ctx, mx)
	if err != nil || !ok {
		return nil, err
	}
	hi, err := encodeKey(a)
	if err != nil {
		return nil, &KeyError{Column: joinNames(p.keys), Reason: err.Error()}
	}
	return hi, nil
}

// boundText is the plans table's text of a bound: a JSON list, "" for open.
func boundText(b []any) string {
	if b == nil {
		return ""
	}
	out, _ := json.Marshal(b)
	return string(out)
}

// parseBound reads a bound written by boundText; numbers stay exact (json.Number).
func parseBound(s string) ([]any, error) {
	if s == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var out []any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("plans table bound %q: %w", s, err)
	}
	if out == nil {
		out = []any{}
	}
	return out, nil
}

// DecodeBound is a plans table bound (a JSON list, "" open: nil) as a key of the key
// columns keys, as a chunk read bounds its range (docs/snapshots.md § The plans table).
// Errors: a *KeyError for a value that does not fit its column; a bound that is not a JSON
// list.
func DecodeBound(text string, keys []source.Column) (source.Key, error) {
	vals, err := parseBound(text)
	if err != nil || vals == nil {
		return nil, err
	}
	return decodeKey(vals, keys)
}

func ptr[T any](v T) *T { return &v }
