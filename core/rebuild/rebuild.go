// Package rebuild derives a table's current state from its bronze change log, the way a
// downstream MERGE does, and compares it with the source table. The demo and the tests
// use it to prove that bronze holds every change exactly once.
//
// The rule (docs/design.md §4.2, docs/reference/original-library.md §9.1): per key, the
// latest row image in the order (_start_lsn, _command_id, _seqval, _operation), NULL
// first; snapshot rows (operation 0) sort below every change of their LSN. The key's row
// exists when that image is an insert (2), an after-image (4) or a snapshot row (0); a
// delete (1), or a before-image (3) not outranked by an after-image (the old key of a key
// update), means the row is gone.
//
// The downstream rule (docs/bronze.md "The current table"; docs/stream.md "Data loss"):
// only the newest complete snapshot S of any generation and the rows after it count
// (_start_lsn >= S). S is the larger of the largest coalesce(_snapshot, _start_lsn) of
// operation-0 rows without a _chunk (a whole snapshot is one bronze commit, complete once
// it is there) and the largest LSN of the table's bootstrap and resnapshot facts rows
// (Options.Completed, FactsCompleted: a chunked snapshot is complete only at that row,
// and an empty table's snapshot has no rows). After a re-snapshot following data loss, a
// key deleted in the lost gap has no delete row, only its absence from S.
//
// Values are compared as text (arrow's ValueStr of the bronze type), so a state read from
// bronze and one read from the source table with the same bronze types compare equal.
package rebuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Null is how a NULL value is written in a State.
const Null = "NULL"

// State is a table's rows: key text → the values of Columns as text.
type State struct {
	Columns []string
	Rows    map[string][]string
}

// Log summarises the change rows of a bronze table.
type Log struct {
	// Rows by _operation (0 snapshot, 1..4 changes).
	ByOp map[int32]int64
	// Duplicates counts change rows whose (_start_lsn, _seqval, _operation) another row
	// already has: a change appended twice.
	Duplicates int64
	// Batches is the set of _batch_id values seen.
	Batches map[int64]bool
	// Snapshots are the whole snapshots (operation-0 rows without a _chunk) by LSN
	// (coalesce(_snapshot, _start_lsn)), with their rows.
	Snapshots map[string]int64
	// Newest is the rebuild point S ("" when bronze and the facts hold no snapshot).
	Newest string
}

// ChangeRows is the number of change rows (operations 1 to 4).
func (l *Log) ChangeRows() int64 { return l.ByOp[1] + l.ByOp[2] + l.ByOp[3] + l.ByOp[4] }

type image struct {
	lsn, seq string
	cmd      int64 // -1 for NULL
	op       int32
	vals     []string
}

func (a *image) less(b *image) bool {
	return bronze.Order{LSN: a.lsn, CommandID: a.cmd, Seqval: a.seq, Op: a.op}.Less(
		bronze.Order{LSN: b.lsn, CommandID: b.cmd, Seqval: b.seq, Op: b.op})
}

// Options tune Rebuild.
type Options struct {
	// Completed are the LSNs ("0x…") of the table's snapshots the facts table records as
	// complete (FactsCompleted): candidates for the rebuild point besides the whole
	// snapshots found in bronze.
	Completed []string
}

// FromBronze rebuilds the state of the bronze table at snap, keyed by keys (captured
// column names), and summarises its change log. It finds the rebuild point in bronze
// alone; Rebuild also takes the facts table's completed snapshots.
func FromBronze(ctx context.Context, snap *deltalog.Snapshot, keys []string) (*State, *Log, error) {
	return Rebuild(ctx, snap, keys, Options{})
}

// Rebuild rebuilds the state of the bronze table at snap from the newest complete
// snapshot (bronze's whole snapshots and opts.Completed) on, keyed by keys.
func Rebuild(ctx context.Context, snap *deltalog.Snapshot, keys []string, opts Options) (*State, *Log, error) {
	lg := &Log{ByOp: map[int32]int64{}, Batches: map[int64]bool{}, Snapshots: map[string]int64{}}
	if snap.Version() < 0 {
		return &State{Rows: map[string][]string{}}, lg, nil
	}
	sc, err := snap.ArrowSchema()
	if err != nil {
		return nil, nil, err
	}
	var cols []string
	for _, f := range sc.Fields() {
		if !bronze.IsMetadataColumn(f.Name) {
			cols = append(cols, f.Name)
		}
	}
	latest := map[string]*image{}
	seen := map[string]bool{}
	newest := "" // the rebuild point; "" when there is none
	for _, c := range opts.Completed {
		newest = max(newest, c)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{})
	if err != nil {
		return nil, nil, err
	}
	defer it.Close()
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		wholeSnapshots(rec, lg.Snapshots)
		err = fold(rec, cols, keys, latest, seen, lg)
		rec.Release()
		if err != nil {
			return nil, nil, err
		}
	}
	for l := range lg.Snapshots {
		newest = max(newest, l)
	}
	lg.Newest = newest
	st := &State{Columns: cols, Rows: map[string][]string{}}
	for k, im := range latest {
		if im.lsn < newest {
			continue // before the newest snapshot: superseded by it
		}
		switch im.op {
		case bronze.OpSnapshot, bronze.OpInsert, bronze.OpUpdateAfter:
			st.Rows[k] = im.vals
		}
	}
	return st, lg, nil
}

// wholeSnapshots counts the record's whole snapshot rows (operation 0, _chunk NULL) into
// found, by coalesce(_snapshot, _start_lsn).
func wholeSnapshots(rec arrow.RecordBatch, found map[string]int64) {
	sc := rec.Schema()
	col := func(name string) arrow.Array {
		if i := sc.FieldIndices(name); len(i) > 0 {
			return rec.Column(i[0])
		}
		return nil
	}
	opA, _ := col(bronze.ColOperation).(*array.Int32)
	lsnA, _ := col(bronze.ColStartLSN).(*array.String)
	snapA, _ := col(bronze.ColSnapshot).(*array.String)
	chunkA := col(bronze.ColChunk)
	if opA == nil || lsnA == nil {
		return
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		if opA.Value(i) != bronze.OpSnapshot || (chunkA != nil && chunkA.IsValid(i)) {
			continue
		}
		l := lsnA.Value(i)
		if snapA != nil && snapA.IsValid(i) {
			l = snapA.Value(i)
		}
		found[l]++
	}
}

// FactsCompleted is facts.CompletedSnapshots: the LSNs of the complete snapshots of bronze
// table target in the facts table at snap, Opts.Completed of Rebuild.
func FactsCompleted(ctx context.Context, snap *deltalog.Snapshot, target string) ([]string, error) {
	return facts.CompletedSnapshots(ctx, snap, target)
}

func fold(rec arrow.RecordBatch, cols, keys []string, latest map[string]*image, seen map[string]bool, lg *Log) error {
	sc := rec.Schema()
	col := func(name string) arrow.Array {
		if i := sc.FieldIndices(name); len(i) > 0 {
			return rec.Column(i[0])
		}
		return nil
	}
	lsnA, _ := col(bronze.ColStartLSN).(*array.String)
	seqA, _ := col(bronze.ColSeqval).(*array.String)
	opA, _ := col(bronze.ColOperation).(*array.Int32)
	cmdA, _ := col(bronze.ColCommandID).(*array.Int32)
	batchA, _ := col(bronze.ColBatchID).(*array.Int64)
	if lsnA == nil || seqA == nil || opA == nil || cmdA == nil {
		return fmt.Errorf("bronze file lacks metadata columns")
	}
	vals := make([]arrow.Array, len(cols))
	for i, c := range cols {
		vals[i] = col(c) // nil: an older file without the column (NULL)
	}
	keyIdx := make([]int, len(keys))
	for i, k := range keys {
		keyIdx[i] = indexFold(cols, k)
		if keyIdx[i] < 0 {
			return fmt.Errorf("key column %s is not in bronze", k)
		}
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		im := &image{lsn: lsnA.Value(i), op: opA.Value(i), cmd: -1}
		if seqA.IsValid(i) {
			im.seq = seqA.Value(i)
		}
		if cmdA.IsValid(i) {
			im.cmd = int64(cmdA.Value(i))
		}
		lg.ByOp[im.op]++
		if batchA != nil && batchA.IsValid(i) {
			lg.Batches[batchA.Value(i)] = true
		}
		if im.op != bronze.OpSnapshot {
			id := im.lsn + "/" + im.seq + "/" + string(rune('0'+im.op))
			if seen[id] {
				lg.Duplicates++
			}
			seen[id] = true
		}
		im.vals = make([]string, len(cols))
		for j, a := range vals {
			im.vals[j] = text(a, i)
		}
		k := keyText(im.vals, keyIdx)
		if cur, ok := latest[k]; !ok || cur.less(im) {
			latest[k] = im
		}
	}
	return nil
}

// FromRows reads a source table's rows (Source.ReadTable output, bronze types) into a
// State keyed by keys.
func FromRows(ctx context.Context, rows source.Rows, keys []string) (*State, error) {
	defer rows.Close()
	var cols []string
	for _, f := range rows.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	keyIdx := make([]int, len(keys))
	for i, k := range keys {
		if keyIdx[i] = indexFold(cols, k); keyIdx[i] < 0 {
			return nil, fmt.Errorf("key column %s is not read", k)
		}
	}
	st := &State{Columns: cols, Rows: map[string][]string{}}
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return nil, err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			v := make([]string, len(cols))
			for j := range cols {
				v[j] = text(rec.Column(j), i)
			}
			st.Rows[keyText(v, keyIdx)] = v
		}
		rec.Release()
	}
}

// Diff lists the differences between want and got on the columns both have, at most max
// (0: all), sorted; empty when the states are equal.
func Diff(want, got *State, max int) []string {
	var common [][2]int
	for i, c := range want.Columns {
		if j := indexFold(got.Columns, c); j >= 0 {
			common = append(common, [2]int{i, j})
		}
	}
	var out []string
	for k, w := range want.Rows {
		g, ok := got.Rows[k]
		if !ok {
			out = append(out, fmt.Sprintf("key %s: missing", k))
			continue
		}
		for _, p := range common {
			if w[p[0]] != g[p[1]] {
				out = append(out, fmt.Sprintf("key %s: %s = %s, want %s", k, want.Columns[p[0]], g[p[1]], w[p[0]]))
			}
		}
	}
	for k := range got.Rows {
		if _, ok := want.Rows[k]; !ok {
			out = append(out, fmt.Sprintf("key %s: unexpected row", k))
		}
	}
	sort.Strings(out)
	if max > 0 && len(out) > max {
		out = append(out[:max], fmt.Sprintf("... and %d more", len(out)-max))
	}
	return out
}

func text(a arrow.Array, i int) string {
	if a == nil || a.IsNull(i) {
		return Null
	}
	return a.ValueStr(i)
}

func keyText(vals []string, idx []int) string {
	parts := make([]string, len(idx))
	for i, j := range idx {
		parts[i] = vals[j]
	}
	return strings.Join(parts, "|")
}

func indexFold(cols []string, name string) int {
	for i, c := range cols {
		if c == name {
			return i
		}
	}
	for i, c := range cols {
		if strings.EqualFold(c, name) {
			return i
		}
	}
	return -1
}
