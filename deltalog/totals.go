package deltalog

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// FileTotals sums the live files of a snapshot (what `mssqlcdc inspect` reports).
type FileTotals struct {
	// Files is the number of live files; Bytes the sum of their sizes.
	Files int
	Bytes int64
	// Rows is the live rows of the files whose stats give numRecords: numRecords less
	// the rows their deletion vectors mark deleted (Add.LiveRecords).
	Rows int64
	// DeletedRows is the rows the live files' deletion vectors mark deleted.
	DeletedRows int64
	// FilesWithoutStats counts the live files whose stats give no numRecords (Rows
	// leaves them out).
	FilesWithoutStats int
}

// Totals sums the live files without building Files: a file read from a checkpoint whose
// stats were not decoded yet (docs/delta-reading.md § Open cost) gets its numRecords
// from the checkpoint's add.stats_parsed.numRecords column where that has a value, else
// from the first key of its add.stats, read in place in the Parquet page, with no stats
// document built. The result equals summing Files() with Add.LiveRecords. An error says
// the checkpoint could not be decoded again.
func (s *Snapshot) Totals() (FileTotals, error) {
	var fromCheckpoint map[*Add]int64 // numRecords of the checkpoint adds, when not loaded
	if l := s.lazy; l != nil {
		// Holding mu keeps load from setting the adds' stats while they are read here.
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.parts) > 0 {
			fromCheckpoint = map[*Add]int64{}
			for _, p := range l.parts {
				if err := checkpointNumRecords(p.part, p.adds, fromCheckpoint); err != nil {
					return FileTotals{}, fmt.Errorf("checkpoint %d: %w", s.checkpoint, err)
				}
			}
		}
	}
	var t FileTotals
	for _, a := range s.files.All() {
		t.Files++
		t.Bytes += a.Size
		var dvRows int64
		if a.DeletionVector != nil {
			dvRows = a.DeletionVector.Cardinality
			t.DeletedRows += dvRows
		}
		n, ok := a.NumRecords()
		if !ok && a.Stats == "" && fromCheckpoint != nil {
			n, ok = fromCheckpoint[a]
		}
		if ok {
			t.Rows += n - dvRows
		} else {
			t.FilesWithoutStats++
		}
	}
	return t, nil
}

// unknownRecords marks a row whose numRecords is not known (yet).
const unknownRecords = math.MinInt64

// checkpointNumRecords records in out the numRecords of each of adds (the add rows of
// the checkpoint file p, in row order) that has one.
func checkpointNumRecords(p *checkpointPart, adds []*Add, out map[*Add]int64) error {
	pf, err := p.open(memory.DefaultAllocator)
	if err != nil {
		return err
	}
	defer pf.Close()
	sc := pf.MetaData().Schema
	stats, parsed, path := -1, -1, -1
	for i := 0; i < sc.NumColumns(); i++ {
		switch sc.Column(i).ColumnPath().String() {
		case "add.stats":
			stats = i
		case "add.stats_parsed.numRecords":
			parsed = i
		case "add.path":
			path = i
		}
	}
	if path < 0 || stats < 0 && parsed < 0 {
		return nil
	}
	next := 0 // index in adds of the row group's first add row
	for rg := range pf.NumRowGroups() {
		if len(presentLeaves(pf, rg, []int{path})) == 0 {
			continue // no add rows
		}
		rgr := pf.RowGroup(rg)
		rows := int(rgr.NumRows())
		// n[r] is the numRecords of row r, or unknown; isAdd[r] whether row r is an add,
		// from the levels of a leaf under add.
		n := make([]int64, rows)
		for i := range n {
			n[i] = unknownRecords
		}
		var isAdd []bool
		if parsed >= 0 && !allNull(pf.MetaData(), rg, parsed) {
			desc := sc.Column(parsed)
			lv, err := readLeaf(rgr, parsed, desc)
			if err != nil {
				return err
			}
			if len(lv.defs) != rows {
				return fmt.Errorf("add.stats_parsed.numRecords has %d levels for %d rows", len(lv.defs), rows)
			}
			isAdd = make([]bool, rows)
			addDef, k := defLevelAt(desc, 0), 0
			for r, d := range lv.defs {
				isAdd[r] = d >= addDef
				if d == lv.maxDef {
					n[r] = lv.int(k)
					k++
				}
			}
		}
		if stats >= 0 && !allNull(pf.MetaData(), rg, stats) {
			if isAdd == nil {
				isAdd = make([]bool, rows)
			}
			if err := scanStats(rgr, stats, sc.Column(stats), n, isAdd); err != nil {
				return err
			}
		}
		if isAdd == nil {
			// No row of the group has stats: its adds have no numRecords. Count them
			// from add.path's levels to keep the rows after them in step.
			desc := sc.Column(path)
			lv, err := readLeaf(rgr, path, desc)
			if err != nil {
				return err
			}
			addDef := defLevelAt(desc, 0)
			for _, d := range lv.defs {
				if d >= addDef {
					next++
				}
			}
			continue
		}
		for r, add := range isAdd {
			if !add {
				continue
			}
			if next >= len(adds) {
				return fmt.Errorf("more add rows than the open read")
			}
			if n[r] != unknownRecords {
				out[adds[next]] = n[r]
			}
			next++
		}
	}
	return nil
}

// scanStats sets n[r] for each row r whose add.stats (leaf col, described by desc)
// gives numRecords and n[r] is not known yet, and marks in isAdd the rows that are adds.
// The values are read in place in their page (ReadBatchInPage): nothing is copied but a
// document whose numRecords is not its first key.
func scanStats(rgr *file.RowGroupReader, col int, desc *schema.Column, n []int64, isAdd []bool) error {
	maxDef, addDef := desc.MaxDefinitionLevel(), defLevelAt(desc, 0)
	cr, err := rgr.Column(col)
	if err != nil {
		return err
	}
	defer cr.Close()
	r, ok := cr.(*file.ByteArrayColumnChunkReader)
	if !ok {
		return fmt.Errorf("add.stats is %s, not a string", cr.Type())
	}
	vals := make([]parquet.ByteArray, leafBatch)
	defs := make([]int16, leafBatch)
	row := 0
	for row < len(n) {
		got, nv, err := r.ReadBatchInPage(int64(min(len(n)-row, leafBatch)), vals, defs, nil)
		if err != nil {
			return err
		}
		if got == 0 {
			break
		}
		k := 0
		for _, d := range defs[:got] {
			if d >= addDef {
				isAdd[row] = true
			}
			if d == maxDef && k < nv {
				if n[row] == unknownRecords {
					if v, ok := numRecordsIn(vals[k]); ok {
						n[row] = v
					}
				}
				k++
			}
			row++
		}
	}
	if row != len(n) {
		return fmt.Errorf("add.stats: %d of %d rows", row, len(n))
	}
	return nil
}
