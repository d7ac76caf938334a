package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// changeID is the identity of a change row across capture instances
// (docs/reference/sqlserver-cdc.md §3.3): (start_lsn, seqval, operation).
type changeID struct {
	start, seq lsn.LSN
	op         int
}

// byCommit groups rows by start LSN, in read order.
func byCommit(rows []ChangeRow) [][]ChangeRow {
	var out [][]ChangeRow
	for i, r := range rows {
		if i == 0 || r.Start != rows[i-1].Start {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], r)
	}
	return out
}

// One statement that changes several rows — a multi-row INSERT, UPDATE and DELETE — writes
// a change row per row (a 3 and 4 per updated row), and every row has its own __$seqval: SQL
// Server logs one record per row (docs/reference/sqlserver-cdc.md §3.3). An updated row's 3
// and 4 share their seqval and command_id and come 3 first; (start_lsn, seqval, operation)
// is unique, which is what bronze's identity of a change relies on.
func testMultiRowStatements(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	before := maxLSN(ctx, t, env.Source())
	must(t, env.Exec(ctx, InsertRows(tbl,
		map[string]any{"id": 1, "v": 10}, map[string]any{"id": 2, "v": 20}, map[string]any{"id": 3, "v": 30})))
	must(t, env.Exec(ctx, UpdateRows(tbl, [][]any{{1}, {2}, {3}}, map[string]any{"v": 99})))
	must(t, env.Exec(ctx, DeleteRows(tbl, []any{1}, []any{3})))
	rows := ReadChanges(ctx, t, env.Source(), ci, before.Next(), maxLSN(ctx, t, env.Source()))
	commits := byCommit(rows)
	if len(commits) != 3 {
		t.Fatalf("%d commits, want 3: %+v", len(commits), rows)
	}
	seen := map[changeID]bool{}
	for _, r := range rows {
		id := changeID{r.Start, r.Seqval, r.Op}
		if seen[id] {
			t.Fatalf("two change rows with (start_lsn, seqval, operation) %v", id)
		}
		seen[id] = true
	}
	distinctSeqvals := func(name string, rs []ChangeRow, want int) {
		t.Helper()
		set := map[lsn.LSN]bool{}
		for _, r := range rs {
			set[r.Seqval] = true
		}
		if len(set) != want {
			t.Fatalf("%s: %d distinct seqvals over %d rows, want %d (one per row)", name, len(set), len(rs), want)
		}
	}
	ids := func(rs []ChangeRow) []int64 {
		var out []int64
		for _, r := range rs {
			out = append(out, r.Values["id"].(int64))
		}
		slices.Sort(out)
		return out
	}
	ins, upd, del := commits[0], commits[1], commits[2]
	if got := ops(ins); !slices.Equal(got, []int{2, 2, 2}) || !slices.Equal(ids(ins), []int64{1, 2, 3}) {
		t.Fatalf("multi-row INSERT: operations %v, ids %v", got, ids(ins))
	}
	distinctSeqvals("multi-row INSERT", ins, 3)
	if len(upd) != 6 {
		t.Fatalf("multi-row UPDATE of 3 rows: %d change rows, want 6", len(upd))
	}
	var afters []ChangeRow
	for i := 0; i < len(upd); i += 2 {
		b, a := upd[i], upd[i+1]
		if b.Op != 3 || a.Op != 4 || b.Seqval != a.Seqval || b.CommandID != a.CommandID || b.Values["id"] != a.Values["id"] {
			t.Fatalf("multi-row UPDATE, pair %d: %+v then %+v, want a 3 and a 4 of one row sharing seqval and command_id", i/2, b, a)
		}
		if b.Values["v"] != b.Values["id"].(int64)*10 || a.Values["v"] != int64(99) {
			t.Fatalf("multi-row UPDATE images %v -> %v", b.Values, a.Values)
		}
		afters = append(afters, a)
	}
	distinctSeqvals("multi-row UPDATE", afters, 3)
	if got := ops(del); !slices.Equal(got, []int{1, 1}) || !slices.Equal(ids(del), []int64{1, 3}) {
		t.Fatalf("multi-row DELETE: operations %v, ids %v", got, ids(del))
	}
	distinctSeqvals("multi-row DELETE", del, 2)
}

// Cleanup that passes a range while it is being read (sp_cdc_cleanup_change_table run
// after the read's first record batch) does not fail the read: it ends with io.EOF, every
// row it returns is a change row of the range, none twice, and min_lsn afterwards is above
// the range's start. That min_lsn is how a reader learns its read may be short: the stream
// checks it after every read (DataLossError, docs/reference/sqlserver-cdc.md §5). On SQL
// Server the cleanup may wait for the reading session's locks; it runs beside the read.
func testCleanupDuringRead(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	for c := 0; c < 4; c++ {
		var rs []map[string]any
		for i := 1; i <= 10; i++ {
			rs = append(rs, map[string]any{"id": c*10 + i, "v": i})
		}
		must(t, env.Exec(ctx, InsertRows(tbl, rs...)))
	}
	all := ReadChanges(ctx, t, env.Source(), ci, lsn.Zero, maxLSN(ctx, t, env.Source()))
	if len(all) != 40 {
		t.Fatalf("%d change rows, want 40", len(all))
	}
	inRange := map[changeID]bool{}
	for _, r := range all {
		inRange[changeID{r.Start, r.Seqval, r.Op}] = true
	}
	from, to := all[0].Start, all[39].Start
	cols, err := env.Source().CapturedColumns(ctx, ci)
	must(t, err)
	rows, err := env.Source().ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: from, To: to, Columns: cols,
		ReadOptions: source.ReadOptions{BatchRows: 5}})
	must(t, err)
	defer rows.Close()
	seen := map[changeID]bool{}
	take := func() bool {
		t.Helper()
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			t.Fatalf("read with a cleanup beside it: %v", err)
		}
		defer rec.Release()
		for i := 0; i < int(rec.NumRows()); i++ {
			m := map[string]any{}
			for j, f := range rec.Schema().Fields() {
				m[f.Name] = Cell(rec.Column(j), i)
			}
			id := changeID{lsn.MustParse(m["_start_lsn"].(string)), lsn.MustParse(m["_seqval"].(string)), int(m["_operation"].(int64))}
			if !inRange[id] || seen[id] {
				t.Fatalf("row %v: outside the range, or read twice", id)
			}
			seen[id] = true
		}
		return true
	}
	if !take() {
		t.Fatal("no first batch")
	}
	cleaned := make(chan error, 1)
	go func() { cleaned <- env.Cleanup(ctx, ci, to) }()
	for take() {
	}
	must(t, <-cleaned)
	m, err := env.Source().MinLSN(ctx, ci)
	must(t, err)
	if !from.Less(m) {
		t.Fatalf("min_lsn %s after a cleanup to %s, want above the range's start %s", m, to, from)
	}
	t.Logf("read %d of %d rows with the cleanup beside it", len(seen), len(all))
}

// Commit times across a daylight-saving fall-back (docs/reference/sqlserver-cdc.md §2.4,
// §2.6): tran_end_time is the server's local clock, which repeats an hour. The UTC commit
// times the Source returns follow LSN order through the repeated hour, 20 minutes apart as
// the commits were, the same from CommitTime as in the change rows; LSNAtOrBefore never
// answers a commit after the time asked for. Only an Env whose clock can be set (the
// simulator) runs it: a real server's clock cannot be moved to a fall-back.
func testCommitTimesAcrossFallBack(ctx context.Context, t *testing.T, env Env) {
	cs, ok := env.(ClockSetter)
	if !ok {
		t.Skip("the server's clock cannot be moved to a daylight-saving change; the conversion it would exercise is core/source/mssql's TZ5")
	}
	zone, err := time.LoadLocation("America/New_York")
	must(t, err)
	// 2026-11-01 02:00 EDT falls back to 01:00 EST at 06:00 UTC: 01:00-02:00 local repeats.
	must(t, cs.SetClock(ctx, zone, time.Date(2026, 11, 1, 5, 10, 0, 0, time.UTC)))
	tbl, ci := ordersTable(ctx, t, env)
	for i := 1; i <= 5; i++ {
		must(t, env.Sleep(ctx, 20*time.Minute)) // 01:30 and 01:50 EDT, 01:10, 01:30 and 01:50 EST
		must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": i, "v": i})))
	}
	rows := ReadChanges(ctx, t, env.Source(), ci, lsn.Zero, maxLSN(ctx, t, env.Source()))
	if len(rows) != 5 {
		t.Fatalf("%d change rows, want 5", len(rows))
	}
	var times []string
	for i, r := range rows {
		times = append(times, r.CommitTS.Format("15:04:05.000Z"))
		ct, ok, err := env.Source().CommitTime(ctx, r.Start)
		must(t, err)
		if !ok || !ct.Equal(r.CommitTS) {
			t.Fatalf("commit %d: CommitTime %v (%v), change row %v", i, ct, ok, r.CommitTS)
		}
		if i > 0 {
			if gap := r.CommitTS.Sub(rows[i-1].CommitTS); gap < 19*time.Minute || gap > 21*time.Minute {
				t.Fatalf("commit times across the fall-back %s: %v between commits %d and %d, want 20m in LSN order", strings.Join(times, ", "), gap, i-1, i)
			}
		}
		l, ok, err := env.Source().LSNAtOrBefore(ctx, r.CommitTS)
		must(t, err)
		if ok && r.Start.Less(l) {
			t.Fatalf("LSNAtOrBefore(%v) = %s, after commit %d at %s", r.CommitTS, l, i, r.Start)
		}
	}
	last := rows[4]
	if l, ok, err := env.Source().LSNAtOrBefore(ctx, last.CommitTS.Add(2*time.Second)); err != nil || !ok || l.Less(last.Start) {
		t.Fatalf("LSNAtOrBefore(%v) = %s, %v, %v; want at least the last commit %s", last.CommitTS.Add(2*time.Second), l, ok, err, last.Start)
	}
}

// A change-table read the login may not make is refused with a *source.PermissionError
// naming the change table and the GRANT that fixes it (the P6 probe:
// docs/permissions.md); SplitChanges the same; once granted, the read works again.
func testPermissionProbe(ctx context.Context, t *testing.T, env Env) {
	p, ok := env.(Permissioner)
	if !ok {
		t.Skip("this Env cannot take a permission from the reading login")
	}
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	to := maxLSN(ctx, t, env.Source())
	ok, err := p.DenyChangeTable(ctx, ci)
	must(t, err)
	if !ok {
		t.Skip("the Source reads as the tables' owner (no separate reader login): set MSSQL_TEST_READER_DSN")
	}
	cols, err := env.Source().CapturedColumns(ctx, ci)
	must(t, err)
	want := fmt.Sprintf("cdc.[%s_CT]", ci)
	check := func(what string, err error) {
		t.Helper()
		var pe *source.PermissionError
		if !errors.As(err, &pe) || !strings.EqualFold(pe.Object, want) || !strings.HasPrefix(pe.Grant, "GRANT SELECT ON "+pe.Object+" TO [") {
			t.Fatalf("%s without SELECT on the change table: %v, want *source.PermissionError on %s with its GRANT", what, err, want)
		}
	}
	rows, err := env.Source().ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: lsn.Zero, To: to, Columns: cols})
	if err == nil {
		_, err = rows.Next(ctx)
		rows.Close()
	}
	check("ReadChanges", err)
	_, err = env.Source().SplitChanges(ctx, ci, lsn.Zero, to, 2)
	check("SplitChanges", err)
	must(t, p.GrantChangeTable(ctx, ci))
	if got := ReadChanges(ctx, t, env.Source(), ci, lsn.Zero, to); len(got) != 1 {
		t.Fatalf("after the GRANT: %d rows, want 1", len(got))
	}
}
