package snapshot

import (
	"context"
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// seeker finds range bounds by keyset seeks on the server (Source.KeyBound and
// Source.KeyAfter), in SQL Server's own key order: collations, uniqueidentifier byte
// groups, NULL first (docs/reference/sqlserver-cdc.md §8.5). The full snapshot's ranges
// over a composite or non-integer key and the chunked snapshot's keyset plan both cut with
// it (docs/snapshots.md "How chunks are sized"). Each seek reads at most step + 1 keys of
// an index the keys lead, so planning reads the key once in all and spools nothing
// (docs/performance.md "Planning statements").
type seeker struct {
	src  source.Source
	t    source.Table
	keys []source.Column
	// unique is true when keys are the capture instance's unique index: no two rows share
	// a key, so the key step rows on is always above lo. snapshotKeys need not be unique.
	unique bool
}

// next is the bound b leaving step rows in [lo, b), below hi (nil: open), and ok false when
// [lo, hi) holds step rows or fewer. On keys that are not unique a value is never split:
// when the rows from lo on all share b's value (a value held by more than step rows), the
// range takes that whole value and b is the first key after it.
func (s seeker) next(ctx context.Context, lo, hi source.Key, step int64) (source.Key, bool, error) {
	b, ok, err := s.src.KeyBound(ctx, s.t, s.keys, source.KeyRange{Lo: lo, Hi: hi}, step)
	if err != nil {
		return nil, false, fmt.Errorf("seek a bound %d keys on: %w", step, err)
	}
	if !ok || s.unique {
		return b, ok, nil
	}
	// [lo, b) holds the rows below b's value: none when they all share it. Asked on the
	// server, which compares as the column's collation does.
	if _, some, err := s.src.KeyBound(ctx, s.t, s.keys, source.KeyRange{Lo: lo, Hi: b}, 0); err != nil {
		return nil, false, fmt.Errorf("seek below a bound: %w", err)
	} else if some {
		return b, true, nil
	}
	a, ok, err := s.after(ctx, b)
	if err != nil || !ok {
		return nil, false, err
	}
	if hi != nil {
		// The value runs up to hi or past it: no bound below hi.
		if _, some, err := s.src.KeyBound(ctx, s.t, s.keys, source.KeyRange{Lo: a, Hi: hi}, 0); err != nil {
			return nil, false, fmt.Errorf("seek below a bound: %w", err)
		} else if !some {
			return nil, false, nil
		}
	}
	return a, true, nil
}

// after is the first key strictly after k (every row of k's value skipped), ok false when
// there is none.
func (s seeker) after(ctx context.Context, k source.Key) (source.Key, bool, error) {
	a, ok, err := s.src.KeyAfter(ctx, s.t, s.keys, k)
	if err != nil {
		return nil, false, fmt.Errorf("seek the key after a bound: %w", err)
	}
	return a, ok, nil
}

// bounds chains next from an open lower bound: at most max bounds, each step rows after the
// one before, all below hi (nil: open). Fewer when the range runs out of rows.
func (s seeker) bounds(ctx context.Context, hi source.Key, step int64, max int) ([]source.Key, error) {
	var out []source.Key
	var lo source.Key
	for len(out) < max {
		b, ok, err := s.next(ctx, lo, hi, step)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		out = append(out, b)
		lo = b
	}
	return out, nil
}
