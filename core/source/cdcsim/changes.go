package cdcsim

import (
	"context"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// rangeOf returns the change rows with From <= start_lsn <= To. The slice is never
// modified afterwards (appends go past its end; cleanup and ALTER make new slices).
func (ci *instance) rangeOf(from, to lsn.LSN) []change {
	if from.Compare(to) > 0 {
		return nil
	}
	cmp := func(c change, l lsn.LSN) int { return c.start.Compare(l) }
	i, _ := slices.BinarySearchFunc(ci.changes, from, cmp)
	j, found := slices.BinarySearchFunc(ci.changes, to, cmp)
	if found {
		for j < len(ci.changes) && ci.changes[j].start == to {
			j++
		}
	}
	return ci.changes[i:j:j]
}

// ReadChanges implements source.Source. A range ending above the reading session's
// max_lsn (above the primary's, or above a lagging secondary's under LagReplica) is a
// *source.ReplicaBehindError inside a *source.TransientError.
func (db *DB) ReadChanges(ctx context.Context, r source.ChangeRead) (source.Rows, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := db.enter("ReadChanges")
	if err != nil {
		return nil, err
	}
	if err := f.callError("ReadChanges", "", true); err != nil {
		return nil, err
	}
	if db.cfg.CDCDisabled {
		return nil, &source.CDCNotEnabledError{Database: db.cfg.Database}
	}
	ci, err := db.instanceLocked(r.CaptureInstance)
	if err != nil {
		return nil, err
	}
	if err := db.changeTableDeniedLocked(ci); err != nil {
		return nil, err
	}
	if err := r.ReadOptions.Check(); err != nil {
		return nil, err
	}
	schema, err := bronze.ChangeSchema(r.Columns)
	if err != nil {
		return nil, err
	}
	if ci.noCommandID && !r.WithoutCommandID {
		// SELECT c.[__$command_id] fails with error 207 on such a change table.
		return nil, &source.CommandIDMissingError{CaptureInstance: r.CaptureInstance}
	}
	rows := ci.rangeOf(r.From, r.To)
	if !r.To.Less(r.From) {
		// The reading session's own max_lsn must reach the range's end (a secondary behind
		// the primary would return a short range that looks complete).
		if m := db.sessionMaxLocked(); m.Less(r.To) {
			return nil, &source.TransientError{Op: "read change table", Err: &source.ReplicaBehindError{CaptureInstance: r.CaptureInstance, To: r.To, MaxLSN: m}}
		}
	}
	src := &changeSource{rows: rows, mapping: db.mapping(), noCommandID: r.WithoutCommandID}
	if r.WithoutCommandID {
		// ORDER BY (start_lsn, seqval, operation).
		src.rows = slices.Clone(rows)
		slices.SortStableFunc(src.rows, func(a, b change) int {
			if c := a.start.Compare(b.start); c != 0 {
				return c
			}
			if c := a.seq.Compare(b.seq); c != 0 {
				return c
			}
			return int(a.op) - int(b.op)
		})
	}
	for _, c := range r.Columns {
		// Present is not consulted: a dropped column stays in the change table with the
		// values captured before the DROP (SQL Server keeps it in the instance).
		idx := -1
		for j, cc := range ci.cols {
			if strings.EqualFold(cc.Name, c.Name) {
				idx = j
				break
			}
		}
		var from *source.Column
		if idx >= 0 && !sameType(ci.cols[idx], c) {
			cc := ci.cols[idx]
			from = &cc
		}
		src.cols = append(src.cols, colMap{idx: idx, from: from, to: c})
	}
	return db.withWait(newRows(schema, src, r.ReadOptions, "ReadChanges", f)), nil
}

// colMap maps one requested column to a stored one: idx -1 reads NULL; from set means the
// stored type differs and values are converted.
type colMap struct {
	idx  int
	from *source.Column
	to   source.Column
}

func sameType(a, b source.Column) bool {
	return strings.EqualFold(a.DataType, b.DataType) && a.Precision == b.Precision && a.Scale == b.Scale
}

func (m colMap) value(vals []any) (any, error) {
	if m.idx < 0 {
		return nil, nil
	}
	v := vals[m.idx]
	if m.from != nil {
		return convertValue(*m.from, m.to, v)
	}
	return v, nil
}

type changeSource struct {
	rows        []change
	noCommandID bool // _command_id is NULL (ChangeRead.WithoutCommandID)
	mapping     []commitEntry
	cols        []colMap
	pos, k      int
	// The commit of the last row: its LSN, LSN text and commit time (nil without a
	// mapping row).
	cur    lsn.LSN
	curStr string
	curTS  *arrow.Timestamp
}

// reserve sizes the two LSN columns, whose values are always 22 characters, and the
// string and binary columns read without conversion from the next rows' values.
func (s *changeSource) reserve(fields []array.Builder, rows int) {
	fields[0].(*array.StringBuilder).ReserveData(rows * 22)
	fields[1].(*array.StringBuilder).ReserveData(rows * 22)
	next := s.rows[s.pos:min(len(s.rows), s.pos+rows)]
	for j, m := range s.cols {
		d, ok := fields[5+j].(dataBuilder)
		if !ok || m.idx < 0 || m.from != nil {
			continue
		}
		n := 0
		for i := range next {
			switch v := next[i].vals[m.idx].(type) {
			case string:
				n += len(v)
			case []byte:
				n += len(v)
			}
		}
		if n > 0 {
			d.ReserveData(n)
		}
	}
}

// left is how many rows the source has still to give.
func (s *changeSource) left() int { return len(s.rows) - s.pos }

func (s *changeSource) fill(fields []array.Builder) (int, bool, error) {
	if s.pos >= len(s.rows) {
		return 0, false, nil
	}
	ch := &s.rows[s.pos]
	s.pos++
	if ch.start != s.cur || s.curStr == "" {
		// A new commit: its LSN text and commit time, shared by its rows.
		s.cur, s.curStr, s.curTS = ch.start, ch.start.String(), nil
		for s.k < len(s.mapping) && s.mapping[s.k].lsn.Compare(ch.start) < 0 {
			s.k++
		}
		if s.k < len(s.mapping) && s.mapping[s.k].lsn == ch.start {
			ts := arrow.Timestamp(msUTC(s.mapping[s.k].utc).UnixMicro())
			s.curTS = &ts
		}
	}
	fields[0].(*array.StringBuilder).Append(s.curStr)
	fields[1].(*array.StringBuilder).Append(ch.seq.String())
	fields[2].(*array.Int32Builder).Append(int32(ch.op))
	if s.noCommandID {
		fields[3].(*array.Int32Builder).AppendNull()
	} else {
		fields[3].(*array.Int32Builder).Append(ch.cmd)
	}
	ts := fields[4].(*array.TimestampBuilder)
	if s.curTS != nil {
		ts.Append(*s.curTS)
	} else {
		ts.AppendNull()
	}
	size := 2*22 + 4 + 4 + 8
	for j, m := range s.cols {
		v, err := m.value(ch.vals)
		if err != nil {
			return 0, false, err
		}
		n, err := appendValue(fields[5+j], v)
		if err != nil {
			return 0, false, err
		}
		size += n
	}
	return size, true, nil
}

// SplitChanges implements source.Source: NTILE(n) over the rows' start_lsn (the first
// rows mod n tiles get one row more), each tile ending on its last row's commit LSN, so a
// commit straddling two tiles stays whole in the first; tiles sharing an end are merged.
// Rows is the exact number of rows in (previous tile's Last, Last].
func (db *DB) SplitChanges(ctx context.Context, captureInstance string, from, to lsn.LSN, n int) ([]source.Tile, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "SplitChanges"); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, &source.InvalidArgumentError{Arg: "n", Reason: "must be at least 1"}
	}
	ci, err := db.instanceLocked(captureInstance)
	if err != nil {
		return nil, err
	}
	if err := db.changeTableDeniedLocked(ci); err != nil {
		return nil, err
	}
	rows := ci.rangeOf(from, to)
	var out []source.Tile
	pos, cum := 0, 0
	for _, size := range ntileSizes(len(rows), n) {
		cum += size
		last := rows[cum-1].start
		if len(out) > 0 && out[len(out)-1].Last == last {
			continue // the previous tile ends on the same commit: used once
		}
		end := cum - 1
		// Every row of the tile's last commit belongs to this tile.
		for end+1 < len(rows) && rows[end+1].start == last {
			end++
		}
		out = append(out, source.Tile{Last: last, Next: last.Next(), Rows: int64(end - pos + 1)})
		pos = end + 1
	}
	return out, nil
}

// ntileSizes are the sizes of NTILE(n) over rows rows: the first rows mod n tiles get one
// more; with fewer rows than n, one row per tile.
func ntileSizes(rows, n int) []int {
	if rows == 0 {
		return nil
	}
	tiles := min(n, rows)
	base, extra := rows/tiles, rows%tiles
	out := make([]int, tiles)
	for i := range out {
		out[i] = base
		if i < extra {
			out[i]++
		}
	}
	return out
}
