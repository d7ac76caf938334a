package stream

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// liveCheckpoint is the checkpoint of the stream's live generation, without wrappers.
func (st *soakStream) liveCheckpoint() *checkpoint.Checkpoint {
	root := st.checkpointRaw()
	g, err := root.Generations(st.t.Context())
	if err != nil {
		st.t.Fatalf("generations of %s: %v", st.table, err)
	}
	return root.Generation(g.Live.Generation)
}

// checkResnapshotted asserts the end state of a drained stream that re-snapshotted
// (soakResnapshot): no duplicate and no change the source never had in bronze; every
// change after the live generation's snapshot in bronze; bronze rebuilt from the newest
// complete snapshot equal to the table; each generation's facts rows contiguous and its
// checkpoint complete; one resnapshot row per generation after 0, with its gap.
func (st *soakStream) checkResnapshotted() {
	t := st.t
	ctx := context.Background()
	root := st.checkpointRaw()
	g, err := root.Generations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g.Open() != nil {
		t.Errorf("%s: a recovery is still open after the drain: %+v", st.table, g.Open())
	}
	got, dups, _ := st.bronzeChanges()
	if dups != 0 {
		t.Errorf("%s: bronze holds %d duplicate (_start_lsn, _seqval, _operation)", st.table, dups)
	}
	var missing, extra, differ []string
	from := st.snap.String()
	if g.Live.Generation > 0 {
		from = g.Live.Snapshot.LSN.String()
	} else if s0, ok := st.chunkedOpen(0); ok {
		from = s0 // generation 0's chunked bootstrap: the stream started at its S
	}
	for id, want := range st.truth {
		gr, ok := got[id]
		if !ok {
			if id > from && !strings.HasPrefix(id, from+"/") {
				missing = append(missing, id)
			}
			continue
		}
		for c, v := range want {
			gv, ok := gr[c]
			if !ok {
				gv = rebuild.Null
			}
			if gv != v {
				differ = append(differ, id+" "+c+": bronze "+gv+", source "+v)
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
	report("after the live generation's snapshot "+from+" are missing from bronze", missing)

	// The table, rebuilt from the newest complete snapshot (bronze's and the facts').
	bsnap, err := st.lake.RawTable(st.spec.Bronze).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fsnap, err := st.lake.RawTable(st.spec.FactsTable).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done, err := rebuild.FactsCompleted(ctx, fsnap, st.spec.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	state, lg, err := rebuild.Rebuild(ctx, bsnap, st.keys, rebuild.Options{Completed: done})
	if err != nil {
		t.Fatal(err)
	}
	if g.Live.Generation > 0 && lg.Newest != g.Live.Snapshot.LSN.String() {
		t.Errorf("%s: rebuild point %s, want the live generation's snapshot %s", st.table, lg.Newest, g.Live.Snapshot.LSN)
	}
	cols, err := st.db.Columns(st.table)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := st.db.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: st.table}, Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	want, err := rebuild.FromRows(ctx, rows, st.keys)
	if err != nil {
		t.Fatal(err)
	}
	if d := rebuild.Diff(want, state, 10); len(d) > 0 {
		t.Errorf("%s: rebuilt bronze differs from the table (%d rows vs %d):\n%s", st.table, len(state.Rows), len(want.Rows), joinLines(d))
	}

	// Each generation's facts and checkpoint.
	all, err := facts.ReadRows(ctx, fsnap)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= g.Live.Generation; n++ {
		app := checkpoint.GenerationAppID(st.spec.AppID, n)
		var resnaps []facts.Row
		batches := map[int64]int{}
		rowsOf := map[int64]int64{}
		top := int64(-1)
		for _, r := range all {
			if r.AppID != app {
				continue
			}
			switch r.Event {
			case facts.EventResnapshot:
				resnaps = append(resnaps, r)
			case "":
				batches[*r.BatchID]++
				rowsOf[*r.BatchID] = *r.Rows
				top = max(top, *r.BatchID)
			}
		}
		cp := root.Generation(n)
		cs, err := cp.Resume(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The live generation's newest batch rows may still wait in its commit files
		// (docs/decisions/0013-facts-rows-deferred.md); an earlier generation's were
		// committed when the loss that ended it was found.
		if through, ok := fsnap.TxnVersion(facts.TxnFacts(app)); n == g.Live.Generation && cs.Last != nil && (!ok || through < cs.Last.ID) {
			if !ok {
				through = -1
			}
			waiting, err := cp.Commits(ctx, through+1, cs.Last.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range waiting {
				var rows []facts.Row
				if err := json.Unmarshal(c.FactsRows, &rows); len(c.FactsRows) > 0 && err != nil {
					t.Fatalf("%s: facts rows of batch %d: %v", app, c.ID, err)
				}
				for _, r := range rows {
					if r.Event == "" {
						batches[*r.BatchID]++
						top = max(top, *r.BatchID)
					}
				}
			}
		}
		for b := int64(0); b <= top; b++ {
			if batches[b] != 1 {
				t.Errorf("%s: %s batch %d has %d facts rows (batches 0..%d)", st.table, app, b, batches[b], top)
			}
		}
		switch {
		case st.soak.chunked:
			st.checkChunkedGeneration(n, g.Live.Generation, all, resnaps)
		case n > 0 && (len(resnaps) != 1 || resnaps[0].LostToTS == nil || resnaps[0].MaxLSN == ""):
			t.Errorf("%s: generation %d has resnapshot rows %+v, want one with its gap", st.table, n, resnaps)
		}
		if n == 0 && len(resnaps) != 0 {
			t.Errorf("%s: generation 0 has resnapshot rows %+v", st.table, resnaps)
		}
		if n == g.Live.Generation && cs.Pending != nil {
			t.Errorf("%s: the live generation %d has a pending batch %d after a clean drain", st.table, n, cs.Pending.ID)
		}
		if cs.Last != nil && cs.Last.ID > top {
			t.Errorf("%s: %s committed batch %d, its facts end at %d", st.table, app, cs.Last.ID, top)
		}
		if n == g.Live.Generation && top >= 0 && (cs.Last == nil || cs.Last.ID != top) {
			t.Errorf("%s: %s facts end at batch %d, its checkpoint at %+v", st.table, app, top, cs.Last)
		}
	}
	for _, r := range all {
		if r.Event == facts.EventResnapshot && r.Target == st.spec.Bronze && !strings.HasPrefix(r.AppID, st.spec.AppID) {
			t.Errorf("%s: resnapshot row of another app_id %s", st.table, r.AppID)
		}
	}
	t.Logf("%s: generation %d, %d attempts open or failed", st.table, g.Live.Generation, len(g.Attempts))
}

// chunkedOpen is S of generation n's chunked snapshot (the plans table's open row), if any.
func (st *soakStream) chunkedOpen(n int) (string, bool) {
	rows, err := snapshot.PlanRows(st.t.Context(), st.lake.RawTable(st.spec.PlansTable()), st.spec.AppID, snapshot.PlanEventOpen)
	if err != nil {
		st.t.Fatal(err)
	}
	for _, r := range rows {
		if int(r.Generation) == n {
			return r.Snapshot, true
		}
	}
	return "", false
}

// checkChunkedGeneration checks generation n of a chunked stream whose live generation is
// live (the backfill run to done): every generation after 0 has one chunked snapshot_open
// row, kind resnapshot, with its gap, at the S of its plans table open row and of its
// generation state; the live one's snapshot is complete (one completion row at S, with the
// gap after 0), an earlier one's complete or superseded (no completion row); and a complete
// one's facts hold one snapshot_chunk row per planned chunk, whose rows add up to the
// completion row's.
func (st *soakStream) checkChunkedGeneration(n, live int, all []facts.Row, resnaps []facts.Row) {
	t := st.t
	app := checkpoint.GenerationAppID(st.spec.AppID, n)
	s, opened := st.chunkedOpen(n)
	var opens, done, chunks []facts.Row
	for _, r := range all {
		if r.AppID != app {
			continue
		}
		switch r.Event {
		case facts.EventSnapshotOpen:
			opens = append(opens, r)
		case facts.EventBootstrap, facts.EventResnapshot:
			done = append(done, r)
		case facts.EventSnapshotChunk:
			chunks = append(chunks, r)
		}
	}
	if n == 0 && !opened {
		if len(opens)+len(done)+len(chunks) != 0 {
			t.Errorf("%s: generation 0 without a chunked open has snapshot rows %+v %+v %+v", st.table, opens, done, chunks)
		}
		return
	}
	if !opened {
		t.Errorf("%s: generation %d has no open row in the plans table", st.table, n)
		return
	}
	if n > 0 {
		gs, err := st.checkpointRaw().Generations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n == gs.Live.Generation && gs.Live.Snapshot.LSN.String() != s {
			t.Errorf("%s: generation %d starts at %s, its chunked open is at %s", st.table, n, gs.Live.Snapshot.LSN, s)
		}
	}
	kind := facts.KindBootstrap
	if n > 0 {
		kind = facts.KindResnapshot
	}
	if len(opens) != 1 || opens[0].MaxLSN != s || !strings.Contains(opens[0].Detail, `"mode":"chunked"`) ||
		!strings.Contains(opens[0].Detail, `"kind":"`+kind+`"`) || (n > 0 && opens[0].LostToTS == nil) {
		t.Errorf("%s: generation %d's snapshot_open rows %+v, want one chunked %s at %s", st.table, n, opens, kind, s)
	}
	if len(done) > 1 || (n == live && len(done) != 1) {
		t.Errorf("%s: generation %d (live %d) has completion rows %+v", st.table, n, live, done)
		return
	}
	if len(done) == 0 {
		st.soak.superseded++ // a loss superseded it before it completed
		return
	}
	c := done[0]
	if c.MaxLSN != s || c.MinLSN != s || (n > 0 && (c.Event != facts.EventResnapshot || c.LostToTS == nil)) || (n == 0 && c.Event != facts.EventBootstrap) {
		t.Errorf("%s: generation %d's completion row %+v, want %s at %s", st.table, n, c, kind, s)
	}
	if n > 0 && (len(resnaps) != 1 || resnaps[0].MaxLSN != s) {
		t.Errorf("%s: generation %d's resnapshot rows %+v", st.table, n, resnaps)
	}
	plan, err := snapshot.PlanRows(t.Context(), st.lake.RawTable(st.spec.PlansTable()), st.spec.AppID, snapshot.PlanEventPlan)
	if err != nil {
		t.Fatal(err)
	}
	planned := 0
	for _, r := range plan {
		if r.Snapshot == s {
			planned++
		}
	}
	var rows int64
	seen := map[string]int{}
	for _, r := range chunks {
		var det struct {
			Snapshot string `json:"snapshot"`
			Chunk    int32  `json:"chunk"`
		}
		if err := json.Unmarshal([]byte(r.Detail), &det); err != nil || det.Snapshot != s {
			t.Errorf("%s: generation %d's snapshot_chunk row of another snapshot: %q", st.table, n, r.Detail)
			continue
		}
		seen[strconv.Itoa(int(det.Chunk))]++
		if r.Rows != nil {
			rows += *r.Rows
		}
	}
	if planned == 0 || len(seen) != planned || len(chunks) != planned {
		t.Errorf("%s: generation %d's snapshot %s: %d chunks planned, %d snapshot_chunk rows over %d chunks", st.table, n, s, planned, len(chunks), len(seen))
	}
	if c.Rows == nil || *c.Rows != rows {
		t.Errorf("%s: generation %d's completion row counts %v rows, its snapshot_chunk rows %d", st.table, n, c.Rows, rows)
	}
}
