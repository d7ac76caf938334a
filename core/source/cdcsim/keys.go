package cdcsim

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// keySpec is a list of key columns of a table as a read names them.
type keySpec struct {
	cols []source.Column // the table's columns (their types and collations)
	ids  []int
	// prefix is true when the columns are a leading part of the unique index, in order,
	// so the index order serves them.
	prefix bool
}

func (t *table) keySpec(keys []source.Column) (keySpec, error) {
	var k keySpec
	for _, c := range keys {
		if kindOf(strings.ToLower(c.DataType)) == kindString && c.Collation == "" {
			// As the T-SQL Source refuses it: a bound cast without the column's collation
			// can compare differently from the column (docs/reference/sqlserver-cdc.md §8.4).
			return k, &source.InvalidArgumentError{Arg: "key column " + c.Name, Reason: "a character key needs its collation (sys.columns.collation_name)"}
		}
		i, ok := t.colByName(c.Name)
		if !ok {
			return k, &source.InvalidArgumentError{Arg: "key column", Reason: fmt.Sprintf("Invalid column name '%s' in %s", c.Name, t.qualified())}
		}
		k.cols = append(k.cols, t.cols[i])
		k.ids = append(k.ids, t.cols[i].ColumnID)
	}
	k.prefix = t.key != nil && len(k.ids) > 0 && len(k.ids) <= len(t.keyIDs) && slices.Equal(k.ids, t.keyIDs[:len(k.ids)])
	return k, nil
}

func (k keySpec) project(r *row) source.Key {
	out := make(source.Key, len(k.ids))
	for j, id := range k.ids {
		out[j] = r.value(id)
	}
	return out
}

// cmpRow compares a row's key with a key, column by column, NULL first.
func (k keySpec) cmpRow(r *row, key []any) int {
	for j, id := range k.ids {
		if c := compareValues(k.cols[j], r.value(id), key[j]); c != 0 {
			return c
		}
	}
	return 0
}

func (k keySpec) cmp(a, b []any) int {
	for j := range k.cols {
		if c := compareValues(k.cols[j], a[j], b[j]); c != 0 {
			return c
		}
	}
	return 0
}

// bound normalises a range bound to the key columns' stored forms (nil stays open).
func (k keySpec) bound(name string, key source.Key) ([]any, error) {
	if key == nil {
		return nil, nil
	}
	if len(key) != len(k.cols) {
		return nil, &source.InvalidArgumentError{Arg: name, Reason: fmt.Sprintf("%d values for %d key columns", len(key), len(k.cols))}
	}
	out := make([]any, len(key))
	for j, v := range key {
		nv, err := normalize(k.cols[j], v)
		if err != nil {
			return nil, &source.InvalidArgumentError{Arg: name, Reason: err.Error()}
		}
		out[j] = nv
	}
	return out, nil
}

// inRange reports lo <= key(r) < hi.
func (k keySpec) inRange(r *row, lo, hi []any) bool {
	return (lo == nil || k.cmpRow(r, lo) >= 0) && (hi == nil || k.cmpRow(r, hi) < 0)
}

// ordered returns the rows of [lo, hi) ordered by k. With an index prefix it is a window
// of the index (no copy); otherwise a sorted copy of the matching row pointers.
func (t *table) ordered(k keySpec, lo, hi []any) []*row {
	if k.prefix {
		all := t.order()
		i := 0
		if lo != nil {
			i = sort.Search(len(all), func(x int) bool { return k.cmpRow(all[x], lo) >= 0 })
		}
		j := len(all)
		if hi != nil {
			j = sort.Search(len(all), func(x int) bool { return k.cmpRow(all[x], hi) >= 0 })
		}
		if j < i {
			j = i
		}
		return all[i:j:j]
	}
	if len(k.ids) == 0 {
		return t.order() // no keys: the whole table, in index (or row id) order
	}
	var out []*row
	for _, r := range t.order() {
		if k.inRange(r, lo, hi) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *row) int {
		for j, id := range k.ids {
			if c := compareValues(k.cols[j], a.value(id), b.value(id)); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}
