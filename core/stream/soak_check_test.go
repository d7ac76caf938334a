package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// changeRow is one change row's captured values as text (rebuild's ValueStr rendering),
// with _command_id, by column name.
type changeRow map[string]string

// changeID names a change row: (_start_lsn, _seqval, _operation).
func changeID(rec arrow.RecordBatch, i int) (string, int32, bool) {
	sc := rec.Schema()
	get := func(name string) arrow.Array {
		if ix := sc.FieldIndices(name); len(ix) > 0 {
			return rec.Column(ix[0])
		}
		return nil
	}
	l, _ := get(bronze.ColStartLSN).(*array.String)
	q, _ := get(bronze.ColSeqval).(*array.String)
	o, _ := get(bronze.ColOperation).(*array.Int32)
	if l == nil || q == nil || o == nil {
		return "", 0, false
	}
	return l.Value(i) + "/" + q.Value(i) + "/" + strconv.Itoa(int(o.Value(i))), o.Value(i), true
}

// rowOf renders row i of rec: the captured columns and _command_id.
func rowOf(rec arrow.RecordBatch, i int) changeRow {
	r := changeRow{}
	for j, f := range rec.Schema().Fields() {
		if f.Name != bronze.ColCommandID && bronze.IsMetadataColumn(f.Name) {
			continue
		}
		a := rec.Column(j)
		if a.IsNull(i) {
			r[f.Name] = rebuild.Null
		} else {
			r[f.Name] = a.ValueStr(i)
		}
	}
	return r
}

// instances are the capture instances of st's table, oldest first.
func (st *soakStream) instances() []source.CaptureInstance {
	list, err := st.db.CaptureInstances(context.Background())
	if err != nil {
		st.t.Fatal(err)
	}
	return source.InstancesOf(list, "dbo", st.table)
}

// harvest adds to truth the change rows the source now holds in the spans the stream
// reads (each instance below the next one's start LSN) above the snapshot LSN. Change
// rows never change, so the union over time is every change the stream must deliver.
func (st *soakStream) harvest() {
	ctx := context.Background()
	max, err := st.db.MaxLSN(ctx)
	if err != nil {
		st.t.Fatal(err)
	}
	from := lsn.Zero
	if !st.snap.IsZero() {
		from = st.snap.Next()
	}
	// Each instance from its min LSN up to the next instance's start LSN (written here
	// rather than with the stream's spans, so the oracle is independent of it).
	insts := st.instances()
	for i, ci := range insts {
		lo, hi := from, max
		if m, err := st.db.MinLSN(ctx, ci.Name); err == nil && lo.Less(m) {
			lo = m
		}
		if i+1 < len(insts) && !insts[i+1].StartLSN.IsZero() && insts[i+1].StartLSN.Compare(hi) <= 0 {
			hi = insts[i+1].StartLSN.Prev()
		}
		if hi.Less(lo) {
			continue
		}
		rows, err := st.db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci.Name, From: lo, To: hi})
		if err != nil {
			st.t.Fatalf("harvest %s [%s, %s]: %v", ci.Name, lo, hi, err)
		}
		for {
			rec, err := rows.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				st.t.Fatal(err)
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				id, _, ok := changeID(rec, i)
				if !ok {
					st.t.Fatalf("change records lack metadata columns: %s", rec.Schema())
				}
				st.truth[id] = rowOf(rec, i)
			}
			rec.Release()
		}
		rows.Close()
	}
}

// bronzeChanges reads bronze's change rows (operations 1 to 4) by id, counting ids seen
// twice, and the _batch_id values present.
func (st *soakStream) bronzeChanges() (map[string]changeRow, int, map[int64]bool) {
	ctx := context.Background()
	snap, err := st.lake.RawTable(st.spec.Bronze).Snapshot(ctx)
	if err != nil {
		st.t.Fatal(err)
	}
	out, dups, batches := map[string]changeRow{}, 0, map[int64]bool{}
	if snap.Version() < 0 {
		return out, 0, batches
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{})
	if err != nil {
		st.t.Fatal(err)
	}
	defer it.Close()
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			st.t.Fatal(err)
		}
		ba, _ := rec.Column(rec.Schema().FieldIndices(bronze.ColBatchID)[0]).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			if ba != nil && ba.IsValid(i) {
				batches[ba.Value(i)] = true
			}
			id, op, ok := changeID(rec, i)
			if op == bronze.OpSnapshot {
				continue
			}
			if !ok {
				st.t.Fatalf("bronze lacks metadata columns")
			}
			if _, seen := out[id]; seen {
				dups++
			}
			out[id] = rowOf(rec, i)
		}
		rec.Release()
	}
	return out, dups, batches
}

// check asserts the end state of a drained stream (of one stopped by DataLossError: no
// duplicate and nothing the source did not have).
func (st *soakStream) check() {
	t := st.t
	got, dups, bronzeBatches := st.bronzeChanges()
	if dups != 0 {
		t.Errorf("%s: bronze holds %d duplicate (_start_lsn, _seqval, _operation)", st.table, dups)
	}
	var missing, extra, differ []string
	for id, want := range st.truth {
		g, ok := got[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		for c, v := range want {
			gv, ok := g[c]
			if !ok {
				gv = rebuild.Null
			}
			if gv != v {
				differ = append(differ, fmt.Sprintf("%s %s: bronze %q, source %q", id, c, gv, v))
			}
		}
	}
	for id := range got {
		if _, ok := st.truth[id]; !ok {
			extra = append(extra, id)
		}
	}
	report := func(what string, ids []string) {
		if len(ids) > 0 {
			sort.Strings(ids)
			t.Errorf("%s: %d change rows %s, e.g. %s", st.table, len(ids), what, strings.Join(ids[:min(5, len(ids))], "; "))
		}
	}
	report("in bronze are not the source's", extra)
	report("differ", differ)
	if st.lost {
		// Stopped by DataLossError: what is in bronze is right; what is missing was
		// reported, not lost silently, and the checkpoint holds the failed batch.
		return
	}
	report("of the source are missing from bronze", missing)

	st.checkState()
	st.checkFactsAndCheckpoint(bronzeBatches)
}

// checkState compares bronze rebuilt with the simulator's table.
func (st *soakStream) checkState() {
	ctx := context.Background()
	snap, err := st.lake.RawTable(st.spec.Bronze).Snapshot(ctx)
	if err != nil {
		st.t.Fatal(err)
	}
	got, _, err := rebuild.FromBronze(ctx, snap, st.keys)
	if err != nil {
		st.t.Fatal(err)
	}
	cols, err := st.db.Columns(st.table)
	if err != nil {
		st.t.Fatal(err)
	}
	rows, err := st.db.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: st.table}, Columns: cols})
	if err != nil {
		st.t.Fatal(err)
	}
	want, err := rebuild.FromRows(ctx, rows, st.keys)
	if err != nil {
		st.t.Fatal(err)
	}
	if d := rebuild.Diff(want, got, 10); len(d) > 0 {
		st.t.Errorf("%s: rebuilt bronze differs from the table (%d rows vs %d):\n%s", st.table, len(got.Rows), len(want.Rows), joinLines(d))
	}
}

// checkFactsAndCheckpoint: one micro-batch facts row per batch, ids contiguous from 0;
// commits/ and offsets/ hold the same batches, the newest being the newest facts batch,
// and each commit's rows and bronze version match its facts row and bronze.
func (st *soakStream) checkFactsAndCheckpoint(bronzeBatches map[int64]bool) {
	t := st.t
	ctx := context.Background()
	byBatch := map[int64]int{}
	rowsOf := map[int64]int64{}
	top := int64(-1)
	for _, r := range st.factsRows() {
		if r.Event != "" || r.BatchID == nil {
			continue
		}
		b := *r.BatchID
		byBatch[b]++
		if r.Rows != nil {
			rowsOf[b] = *r.Rows
		}
		top = max(top, b)
	}
	for b := int64(0); b <= top; b++ {
		if byBatch[b] != 1 {
			t.Errorf("%s: batch %d has %d facts rows (batches 0..%d)", st.table, b, byBatch[b], top)
		}
	}
	for b := range bronzeBatches {
		if byBatch[b] == 0 {
			t.Errorf("%s: bronze holds batch %d, the facts do not", st.table, b)
		}
	}
	store := st.lake.RawStore(st.spec.Checkpoint)
	list := func(dir string) map[int64]bool {
		out := map[int64]bool{}
		for oi, err := range store.List(ctx, dir, "") {
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(oi.Key[strings.LastIndex(oi.Key, "/")+1:], ".json")
			n, err := strconv.ParseInt(name, 10, 64)
			if err != nil {
				continue
			}
			out[n] = true
		}
		return out
	}
	offs, commits := list(checkpoint.OffsetsDir), list(checkpoint.CommitsDir)
	if len(offs) != len(commits) {
		t.Errorf("%s: %d offsets files, %d commits files", st.table, len(offs), len(commits))
	}
	for n := range offs {
		if !commits[n] {
			t.Errorf("%s: offsets/%d.json has no commit after a clean drain", st.table, n)
		}
	}
	for n := range commits {
		if !offs[n] {
			t.Errorf("%s: commits/%d.json has no offsets file", st.table, n)
			continue
		}
		if n > top {
			t.Errorf("%s: commit %d is past the newest facts batch %d", st.table, n, top)
		}
		rc, err := store.Get(ctx, checkpoint.CommitsDir+strconv.FormatInt(n, 10)+".json")
		if err != nil {
			t.Fatal(err)
		}
		var c checkpoint.Commit
		err = json.NewDecoder(rc).Decode(&c)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if c.ID != n || c.Rows != rowsOf[n] {
			t.Errorf("%s: commit %d says batch %d with %d rows, facts %d rows", st.table, n, c.ID, c.Rows, rowsOf[n])
		}
		if (c.Rows > 0) != bronzeBatches[n] {
			t.Errorf("%s: commit %d has %d rows, bronze holds the batch: %v", st.table, n, c.Rows, bronzeBatches[n])
		}
	}
	if top >= 0 && !commits[top] {
		t.Errorf("%s: the newest facts batch %d has no commit", st.table, top)
	}
}
