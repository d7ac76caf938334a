package cdcsim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// sourceRead is the common start of source-table reads: the call's fault, the table, and
// the lock wait. It returns with db.mu held (the caller unlocks). lo and hi (normalised,
// nil open) and k bound the rows the read touches, for lock conflicts.
func (db *DB) sourceRead(ctx context.Context, method string, st source.Table, keys []source.Column, r source.KeyRange, streaming bool) (*table, keySpec, []any, []any, *Fault, error) {
	db.mu.Lock()
	f, err := db.enter(method)
	if err == nil {
		err = f.callError(method, st.Schema+"."+st.Name, streaming)
	}
	if err != nil {
		return nil, keySpec{}, nil, nil, nil, err
	}
	for first := true; ; first = false {
		if !first {
			db.mu.Lock()
		}
		if err := ctx.Err(); err != nil {
			return nil, keySpec{}, nil, nil, nil, err
		}
		if db.cfg.CDCDisabled {
			err = &source.CDCNotEnabledError{Database: db.cfg.Database}
		}
		if err == nil && st.LockTimeout != nil && *st.LockTimeout < 0 {
			err = &source.InvalidArgumentError{Arg: "lockTimeoutMs", Reason: "negative"}
		}
		if err == nil && st.Isolation != "" && st.Isolation != source.ReadCommitted && st.Isolation != source.Snapshot {
			err = &source.InvalidArgumentError{Arg: "isolation", Reason: fmt.Sprintf("%q is neither read_committed nor snapshot (READ UNCOMMITTED and NOLOCK are never used)", st.Isolation)}
		}
		if err != nil {
			return nil, keySpec{}, nil, nil, nil, err
		}
		if method == "ReadTable" {
			if err := db.commitQueuedLocked(); err != nil {
				return nil, keySpec{}, nil, nil, nil, err
			}
		}
		t, err := db.tableOf(st)
		if err != nil {
			return nil, keySpec{}, nil, nil, nil, err
		}
		k, err := t.keySpec(keys)
		if err != nil {
			return nil, keySpec{}, nil, nil, nil, err
		}
		lo, err := k.bound("range lower bound", r.Lo)
		if err != nil {
			return nil, keySpec{}, nil, nil, nil, err
		}
		hi, err := k.bound("range upper bound", r.Hi)
		if err != nil {
			return nil, keySpec{}, nil, nil, nil, err
		}
		if st.Isolation == source.Snapshot {
			return t, k, lo, hi, f, nil
		}
		holder := db.lockHolder(t, k, lo, hi)
		if holder == nil {
			return t, k, lo, hi, f, nil
		}
		db.mu.Unlock()
		// READ COMMITTED waits (LCK_M_S) for the writer, up to the lock timeout.
		var timeout <-chan time.Time
		if st.LockTimeout != nil {
			tm := time.NewTimer(*st.LockTimeout)
			timeout = tm.C
			defer tm.Stop()
		}
		select {
		case <-holder.release:
		case <-timeout:
			db.mu.Lock()
			return nil, keySpec{}, nil, nil, nil, &source.LockTimeoutError{Table: t.qualified()}
		case <-ctx.Done():
			db.mu.Lock()
			return nil, keySpec{}, nil, nil, nil, ctx.Err()
		}
	}
}

// lockHolder is an open transaction holding a lock on a row of t inside [lo, hi) (the old
// or the new version), or nil. Transactions queued by CommitBeforeRead do not count: they
// commit before the read.
func (db *DB) lockHolder(t *table, k keySpec, lo, hi []any) *Txn {
	for tx := range db.open {
		if slices.Contains(db.queued, tx) {
			continue
		}
		for ident, r := range tx.overlay[t] {
			if r != nil && (len(k.ids) == 0 || k.inRange(r, lo, hi)) {
				return tx
			}
			if old, ok := t.rows[ident]; ok && (len(k.ids) == 0 || k.inRange(old, lo, hi)) {
				return tx
			}
		}
	}
	return nil
}

// ReadTable implements source.Source. The rows are those committed when the read starts
// (after committing any CommitBeforeRead transactions); a range whose keys lead the unique
// index is read from the index, other ranges by a scan.
func (db *DB) ReadTable(ctx context.Context, r source.TableRead) (source.Rows, error) {
	t, k, lo, hi, f, err := db.sourceRead(ctx, "ReadTable", r.Table, r.Keys, r.Range, true)
	defer db.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := r.ReadOptions.Check(); err != nil {
		return nil, err
	}
	if len(r.Columns) == 0 {
		return nil, &source.InvalidArgumentError{Arg: "columns", Reason: "no columns to read"}
	}
	schema, err := bronze.TableSchema(r.Columns)
	if err != nil {
		return nil, err
	}
	src := &tableSource{}
	for _, c := range r.Columns {
		m := tableCol{id: -1, to: c}
		if c.Present {
			i, ok := t.colByName(c.Name)
			if !ok {
				return nil, &source.InvalidArgumentError{Arg: "column", Reason: fmt.Sprintf("Invalid column name '%s' in %s", c.Name, t.qualified())}
			}
			if t.cols[i].Computed {
				// NULL, as in every change row (docs/types.md "Computed columns").
				src.cols = append(src.cols, m)
				continue
			}
			m.id = t.cols[i].ColumnID
			if !sameType(t.cols[i], c) {
				from := t.cols[i]
				m.from = &from
			}
		}
		src.cols = append(src.cols, m)
	}
	if len(k.ids) == 0 && (lo != nil || hi != nil) {
		return nil, &source.InvalidArgumentError{Arg: "range", Reason: "a bounded range needs key columns"}
	}
	if !r.AtLeast.IsZero() {
		// The table state must include the stamp: a secondary behind it would return
		// rows older than the snapshot claims.
		if m := db.sessionMaxLocked(); m.Less(r.AtLeast) {
			return nil, &source.TransientError{Op: "read source table", Err: &source.ReplicaBehindError{Table: t.qualified(), To: r.AtLeast, MaxLSN: m}}
		}
	}
	if k.prefix || len(k.ids) == 0 {
		src.rows = t.ordered(k, lo, hi)
	} else {
		// A scan: filter while streaming, so nothing is copied.
		src.rows, src.k, src.lo, src.hi, src.filter = t.order(), k, lo, hi, true
	}
	return newRows(schema, src, r.ReadOptions, "ReadTable", f), nil
}

type tableCol struct {
	id   int
	from *source.Column
	to   source.Column
}

type tableSource struct {
	rows   []*row
	cols   []tableCol
	pos    int
	filter bool
	k      keySpec
	lo, hi []any
	// idx caches, for the last ids slice seen, the position of each column's value.
	lastIDs []int
	idx     []int
}

// left is how many rows the source has still to look at (those outside the key range
// included): at most the rows it gives.
func (s *tableSource) left() int { return len(s.rows) - s.pos }

func (s *tableSource) fill(fields []array.Builder) (int, bool, error) {
	for s.pos < len(s.rows) && s.filter && !s.k.inRange(s.rows[s.pos], s.lo, s.hi) {
		s.pos++
	}
	if s.pos >= len(s.rows) {
		return 0, false, nil
	}
	r := s.rows[s.pos]
	s.pos++
	if len(r.ids) == 0 || len(s.lastIDs) == 0 || &r.ids[0] != &s.lastIDs[0] || len(r.ids) != len(s.lastIDs) {
		s.lastIDs = r.ids
		s.idx = s.idx[:0]
		for _, c := range s.cols {
			p := -1
			for i, id := range r.ids {
				if id == c.id {
					p = i
				}
			}
			s.idx = append(s.idx, p)
		}
	}
	size := 0
	for j, c := range s.cols {
		var v any
		if p := s.idx[j]; p >= 0 {
			v = r.vals[p]
		}
		if c.from != nil && v != nil {
			var err error
			if v, err = convertValue(*c.from, c.to, v); err != nil {
				return 0, false, err
			}
		}
		n, err := appendValue(fields[j], v)
		if err != nil {
			return 0, false, err
		}
		size += n
	}
	return size, true, nil
}
