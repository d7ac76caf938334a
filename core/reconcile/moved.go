package reconcile

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// moved are the keys a change after silver's position touched: a difference on one of
// them is IN_FLIGHT, the stream or silver has not caught up with it yet.
type moved struct {
	keys map[string]bool
	// ints are the same keys of an integer key, sorted, for the bucket test.
	ints []int64
}

// movedKeys collects the keys of bronze's change rows after lower and of the change
// table's rows in (lower, max]: the second covers changes bronze has not read yet, the
// first changes cleanup already purged from the change table.
func movedKeys(ctx context.Context, d Deps, o Options, lower, max lsn.LSN) (moved, error) {
	m := moved{keys: map[string]bool{}}
	add := func(rec arrow.RecordBatch, keyCols []int, keep func(i int) bool) {
		for i := 0; i < int(rec.NumRows()); i++ {
			if !keep(i) {
				continue
			}
			k := keyOf(rec, keyCols, i)
			if !m.keys[k.text] {
				m.keys[k.text] = true
				if k.isInt {
					m.ints = append(m.ints, k.int)
				}
			}
		}
	}
	names := make([]string, len(o.Keys))
	for i, k := range o.Keys {
		names[i] = k.Name
	}
	if d.Bronze != nil && d.Bronze.Version() >= 0 {
		cols := append(slices.Clone(names), bronze.ColStartLSN, bronze.ColOperation)
		after := lower.String()
		err := scan(ctx, "bronze", d.Bronze, cols, func(rec arrow.RecordBatch) error {
			lsns, _ := rec.Column(len(names)).(*array.String)
			ops, _ := rec.Column(len(names) + 1).(*array.Int32)
			if lsns == nil || ops == nil {
				return fmt.Errorf("reconcile: bronze's %s or %s column has an unexpected type", bronze.ColStartLSN, bronze.ColOperation)
			}
			add(rec, seq(len(names)), func(i int) bool {
				return ops.IsValid(i) && ops.Value(i) != int32(bronze.OpSnapshot) && lsns.IsValid(i) && lsns.Value(i) > after
			})
			return nil
		})
		if err != nil {
			return m, err
		}
	}
	if o.CaptureInstance != "" && lower.Less(max) {
		rows, err := d.Source.ReadChanges(ctx, source.ChangeRead{CaptureInstance: o.CaptureInstance, From: lower.Next(), To: max,
			Columns: o.Keys, WithoutCommandID: o.WithoutCommandID, ReadOptions: o.Read})
		if err != nil {
			return m, fmt.Errorf("reconcile: read the change table's keys after %s: %w", lower, err)
		}
		keyCols := make([]int, len(names))
		for i, n := range names {
			keyCols[i] = fieldIndex(rows.Schema(), n)
		}
		err = parquetio.Drain(ctx, rows, func(rec arrow.RecordBatch) error {
			add(rec, keyCols, func(int) bool { return true })
			return nil
		})
		if err != nil {
			return m, fmt.Errorf("reconcile: read the change table's keys after %s: %w", lower, err)
		}
	}
	slices.Sort(m.ints)
	return m, nil
}

// inRange reports whether a moved key falls in b (any moved key, for a whole-table bucket).
func (m moved) inRange(b *bucket, intKey bool) bool {
	if !intKey {
		return len(m.keys) > 0
	}
	i, _ := slices.BinarySearch(m.ints, int64Or(b.lo, minInt64))
	return i < len(m.ints) && b.holds(m.ints[i])
}

const minInt64 = -1 << 63

func int64Or(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
