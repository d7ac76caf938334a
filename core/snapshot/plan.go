package snapshot

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Plan cuts the table of snapshot snap into key ranges for numPartitions and records them
// in the staging area (plan.json: the bounds stay there, the output carries only the
// ranges' indexes). A rerun plans again and replaces the plan (reads not yet committed are
// redone by the Map that follows).
func Plan(ctx context.Context, d Deps, snap lsn.Offset) (PlanResult, error) {
	st, ok, err := loadOpen(ctx, d, snap.LSN)
	if err != nil {
		return PlanResult{}, err
	}
	if !ok {
		return PlanResult{}, &PlanNotFoundError{Snapshot: snap.LSN}
	}
	if err := CheckStamp(ctx, d.Source, st.Snapshot); err != nil {
		return PlanResult{}, err
	}
	ci, _, keys, err := d.columns(ctx, st.CaptureInstance)
	if err != nil {
		return PlanResult{}, err
	}
	n := max(d.Spec.Options.NumPartitions, 1)
	ranges, size, err := d.planRanges(ctx, ci, keys, n, true)
	if err != nil {
		return PlanResult{}, err
	}
	ps := planState{Ranges: ranges}
	if len(ranges) > 1 {
		for _, k := range keys {
			ps.Keys = append(ps.Keys, k.Name)
		}
	}
	if err := putJSON(ctx, d.Staging, planKey(snap.LSN), ps); err != nil {
		return PlanResult{}, err
	}
	refs := make([]Range, len(ranges))
	for i, r := range ranges {
		refs[i] = Range{Index: r.Index}
	}
	return PlanResult{NumPartitions: n, Keys: ps.Keys, Ranges: refs, EstimatedRows: max(size.Rows, 0)}, nil
}

// rangeCount is how many ranges to cut for a table of the estimated size (zero fields:
// unknown): n, or more when the table would put more than MaxRangeRows rows or
// TargetRangeBytes bytes in a range, so each read fits in one invocation; never more than
// MaxRanges (the ranges grow instead). When the cap makes ranges hold more than
// MaxRangeBytes it is a *PlanTooLargeError (decision 0008).
func rangeCount(d Deps, size source.TableSize, n int) (int, error) {
	o := d.Options
	rowLimit := defaulted(o.MaxRangeRows, DefaultMaxRangeRows)
	byteTarget := defaulted(o.TargetRangeBytes, DefaultTargetRangeBytes)
	byteLimit := defaulted(o.MaxRangeBytes, DefaultMaxRangeBytes)
	most := o.MaxRanges
	if most <= 0 {
		most = DefaultMaxRanges
	}
	count := int64(n)
	if rowLimit > 0 && size.Rows > 0 {
		count = max(count, (size.Rows+rowLimit-1)/rowLimit)
	}
	if byteTarget > 0 && size.Bytes > 0 {
		count = max(count, (size.Bytes+byteTarget-1)/byteTarget)
	}
	count = min(count, int64(most))
	if byteLimit > 0 && size.Bytes > count*byteLimit {
		return 0, &PlanTooLargeError{EstimatedBytes: size.Bytes, EstimatedRows: size.Rows, Ranges: int(count), MaxRangeBytes: byteLimit}
	}
	return int(count), nil
}

// defaulted is v, or def when v is 0; negative (no bound) stays.
func defaulted(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

// KeyColumns are the columns ranges are cut on, and rows are told apart by: snapshotKeys
// when given, else the capture instance's unique index (docs/reference/original-library.md §9.2), matched to the
// captured columns by name ignoring case. ok is false when there are none or one is not a
// present captured column: the table is then read as one range.
func KeyColumns(ci source.CaptureInstance, cols []source.Column, snapshotKeys []string) (keys []source.Column, ok bool) {
	names := snapshotKeys
	if len(names) == 0 {
		names = ci.IndexColumns
	}
	if len(names) == 0 {
		return nil, false
	}
	for _, n := range names {
		found := false
		for _, c := range cols {
			if strings.EqualFold(c.Name, n) && c.Present && !c.Computed {
				keys = append(keys, c)
				found = true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return keys, true
}

// planRanges cuts the table of ci into key ranges for n connections
// (docs/reference/original-library.md §9.2), more when split (the bootstrap machine's plan)
// and the row estimate (sys.sp_spaceused) puts more than MaxRangeRows in a range:
//   - one integer key: MIN and MAX (two seeks), then n' = min(n, MAX − MIN + 1) uniform
//     ranges, bound i at MIN + (MAX − MIN + 1)·i / n' (floor) for i = 1..n'−1;
//   - a composite or non-integer key: ranges of about estimate / n rows, each bound a keyset
//     seek that many keys after the one before (seeker, the chunked plan's machinery: no
//     NTILE, which scans and spools the whole key in one statement; docs/performance.md
//     "Planning statements");
//   - no usable key, n ≤ 1, an empty table or MIN = MAX: one range.
//
// The first range is open below (it holds NULL keys), the last open above (it holds keys
// written above MAX meanwhile). est is the table's row estimate when it was read (with
// split always), else 0.
func (d Deps) planRanges(ctx context.Context, ci source.CaptureInstance, keys []source.Column, n int, split bool) ([]Range, source.TableSize, error) {
	whole := []Range{{Index: 0}}
	t := d.table(ci)
	var size source.TableSize
	// The bounds need the estimate when splitting, or on a key that is not one integer;
	// a plan without keys fetches it only for the progress it reports (PlanResult).
	needEst := len(keys) > 0 && (split || !(len(keys) == 1 && integerTypes[keys[0].DataType]))
	if needEst || split {
		var err error
		if size, err = d.Source.SizeEstimate(ctx, t); err != nil {
			if needEst {
				return nil, size, fmt.Errorf("read the size estimate: %w", err)
			}
			size = source.TableSize{}
		}
		if split && len(keys) > 0 {
			if n, err = rangeCount(d, size, n); err != nil {
				return nil, size, err
			}
		}
	}
	est := size.Rows
	if len(keys) == 0 {
		return whole, size, nil
	}
	if n <= 1 {
		return whole, size, nil
	}
	var bounds []source.Key
	if len(keys) == 1 && integerTypes[keys[0].DataType] {
		lo, hi, ok, err := d.Source.KeyExtent(ctx, t, keys[0], nil, nil)
		if err != nil {
			return nil, size, fmt.Errorf("read key extent: %w", err)
		}
		if !ok {
			return whole, size, nil
		}
		mn, ok1 := lo.(int64)
		mx, ok2 := hi.(int64)
		if !ok1 || !ok2 {
			return nil, size, &KeyError{Column: keys[0].Name, Reason: fmt.Sprintf("extent %T..%T is not integer", lo, hi)}
		}
		for _, b := range uniformBounds(mn, mx, n) {
			bounds = append(bounds, source.Key{b})
		}
	} else {
		if est <= 0 {
			return whole, size, nil
		}
		sk := seeker{src: d.Source, t: t, keys: keys, unique: len(d.Spec.Options.SnapshotKeys) == 0}
		var err error
		if bounds, err = sk.bounds(ctx, nil, (est+int64(n)-1)/int64(n), n-1); err != nil {
			return nil, size, err
		}
	}
	ranges := make([]Range, 0, len(bounds)+1)
	var lo []any
	for i, b := range bounds {
		hi, err := encodeKey(b)
		if err != nil {
			return nil, size, &KeyError{Column: joinNames(keys), Reason: err.Error()}
		}
		ranges = append(ranges, Range{Index: i, Lo: lo, Hi: hi})
		lo = hi
	}
	ranges = append(ranges, Range{Index: len(bounds), Lo: lo})
	return ranges, size, nil
}

// uniformBounds are the n'−1 inner bounds of uniform ranges over [mn, mx]:
// mn + (mx − mn + 1)·i / n' with n' = min(n, mx − mn + 1), computed without overflow.
func uniformBounds(mn, mx int64, n int) []int64 {
	if mx <= mn {
		return nil
	}
	span := new(big.Int).Sub(big.NewInt(mx), big.NewInt(mn))
	span.Add(span, big.NewInt(1))
	parts := big.NewInt(int64(n))
	if span.Cmp(parts) < 0 {
		parts.Set(span)
	}
	np := parts.Int64()
	out := make([]int64, 0, np-1)
	for i := int64(1); i < np; i++ {
		b := new(big.Int).Mul(span, big.NewInt(i))
		b.Quo(b, parts) // span and i are positive: Quo is floor
		b.Add(b, big.NewInt(mn))
		out = append(out, b.Int64())
	}
	return out
}
