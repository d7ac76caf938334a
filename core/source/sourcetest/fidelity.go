package sourcetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// uniqueidentifier keys sort as SQL Server compares them: the last six bytes first, then
// bytes 8-9, 6-7, 4-5 and 0-3, each group in storage order, where the first three text
// groups are stored little-endian (docs/reference/sqlserver-cdc.md §13.7). So
// ...-0001-... sorts above ...-0100-..., although it is below it as text.
func testGUIDOrder(ctx context.Context, t *testing.T, env Env) {
	must(t, env.CreateTable(ctx, Table{Name: "guids", Columns: [][2]string{{"g", "uniqueidentifier"}, {"v", "int"}}, Key: []string{"g"}, Instance: "guids_ci"}))
	// In SQL Server's order, ascending.
	order := []string{
		"00000000-0000-0000-0000-000000000000",
		"01000000-0000-0000-0000-000000000000", // storage byte 3, compared last
		"00010000-0000-0000-0000-000000000000", // byte 2
		"00000100-0000-0000-0000-000000000000", // byte 1
		"00000001-0000-0000-0000-000000000000", // byte 0
		"00000000-0100-0000-0000-000000000000", // byte 5
		"00000000-0001-0000-0000-000000000000", // byte 4
		"00000000-0000-0100-0000-000000000000", // byte 7
		"00000000-0000-0001-0000-000000000000", // byte 6
		"00000000-0000-0000-0001-000000000000", // byte 9
		"00000000-0000-0000-0100-000000000000", // byte 8
		"00000000-0000-0000-0000-000000000001", // byte 15
		"00000000-0000-0000-0000-010000000000", // byte 10, compared first
	}
	var stmts []Stmt
	for i, g := range order {
		stmts = append(stmts, Insert("guids", map[string]any{"g": g, "v": i}))
	}
	must(t, env.Exec(ctx, stmts...))
	st := source.Table{Schema: "dbo", Name: env.Name("guids")}
	cols := capturedNamed(ctx, t, env, "guids_ci", "g", "v")
	mx, ok, err := env.Source().KeyMax(ctx, st, cols[:1])
	must(t, err)
	if !ok || mx[0] != order[len(order)-1] {
		t.Fatalf("KeyMax = %v, want %s", mx, order[len(order)-1])
	}
	// Each range [order[i], order[i+1]) holds exactly the row of order[i].
	for i := 0; i+1 < len(order); i++ {
		rows, err := env.Source().ReadTable(ctx, source.TableRead{Table: st, Columns: cols, Keys: cols[:1],
			Range: source.KeyRange{Lo: source.Key{order[i]}, Hi: source.Key{order[i+1]}}})
		must(t, err)
		got := Drain(ctx, t, rows)
		if len(got) != 1 || got[0]["v"] != int64(i) {
			t.Fatalf("range [%s, %s): %v, want only v=%d", order[i], order[i+1], got, i)
		}
	}
}

// Large objects in change rows follow Microsoft's rules for cdc.<capture_instance>_CT
// (docs/reference/sqlserver-cdc.md §3.6; docs/reference/known-failures.md §G19): text,
// ntext and image are NULL in the delete (1) and the before-image (3), even when the update
// set them; nvarchar(max) and varbinary(max) are NULL in the before-image unless the update
// set them, and hold the deleted value in a delete.
func testLOBBeforeImages(ctx context.Context, t *testing.T, env Env) {
	must(t, env.CreateTable(ctx, Table{Name: "lobs", Columns: [][2]string{{"id", "int"}, {"v", "int"}, {"doc", "nvarchar(max)"}, {"bin", "varbinary(max)"}, {"old", "ntext"}, {"txt", "text"}, {"img", "image"}},
		Key: []string{"id"}, Instance: "lobs_ci"}))
	ci := env.Name("lobs_ci")
	must(t, env.Exec(ctx, Insert("lobs", map[string]any{"id": 1, "v": 1, "doc": "hello", "bin": []byte{1, 2}, "old": "legacy", "txt": "plain", "img": []byte{9}})))
	before := maxLSN(ctx, t, env.Source())
	must(t, env.Exec(ctx, Update("lobs", []any{1}, map[string]any{"v": 2})))
	must(t, env.Exec(ctx, Update("lobs", []any{1}, map[string]any{"doc": "world"})))
	must(t, env.Exec(ctx, Update("lobs", []any{1}, map[string]any{"txt": "plainer", "old": "legacier"})))
	must(t, env.Exec(ctx, Delete("lobs", 1)))
	rows := ReadChanges(ctx, t, env.Source(), ci, before.Next(), maxLSN(ctx, t, env.Source()))
	if got := ops(rows); !slices.Equal(got, []int{3, 4, 3, 4, 3, 4, 1}) {
		t.Fatalf("operations %v", got)
	}
	for i, r := range rows {
		if r.Op == 1 || r.Op == 3 {
			if r.Values["txt"] != nil || r.Values["img"] != nil || r.Values["old"] != nil {
				t.Errorf("row %d (operation %d): text %v, image %v, ntext %v; want NULL", i, r.Op, r.Values["txt"], r.Values["img"], r.Values["old"])
			}
		}
	}
	// An update setting the text and ntext columns: their after-image holds the new values.
	if r := rows[5]; r.Values["txt"] != "plainer" || r.Values["old"] != "legacier" || !bytes.Equal(asBytes(r.Values["img"]), []byte{9}) {
		t.Errorf("after-image of an update setting text and ntext: %v", r.Values)
	}
	// Update of v only: the before-image has no LOB values, the after-image has them.
	if r := rows[0]; r.Values["doc"] != nil || r.Values["bin"] != nil || r.Values["old"] != nil || r.Values["v"] != int64(1) {
		t.Errorf("before-image of an update not touching the LOBs: %v", r.Values)
	}
	if r := rows[1]; r.Values["doc"] != "hello" || !bytes.Equal(asBytes(r.Values["bin"]), []byte{1, 2}) || r.Values["old"] != "legacy" {
		t.Errorf("after-image: %v", r.Values)
	}
	// Update setting doc: its before-image holds doc's old value, not bin's nor old's.
	if r := rows[2]; r.Values["doc"] != "hello" || r.Values["bin"] != nil || r.Values["old"] != nil {
		t.Errorf("before-image of an update setting doc: %v", r.Values)
	}
	// Delete: the (max) values are there, ntext is NULL.
	if r := rows[6]; r.Values["doc"] != "world" || !bytes.Equal(asBytes(r.Values["bin"]), []byte{1, 2}) || r.Values["old"] != nil {
		t.Errorf("delete: %v", r.Values)
	}
}

func asBytes(v any) []byte {
	b, _ := v.([]byte)
	return b
}

// sp_cdc_cleanup_change_table takes as its low water mark only the start_lsn of an entry
// of cdc.lsn_time_mapping (docs/reference/sqlserver-cdc.md §5.3): another LSN is refused
// and min_lsn stays.
func testCleanupMarkIsAMappingEntry(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 2, "v": 2})))
	l := lastCommit(ctx, t, env, ci, lsn.Zero)
	min0, err := env.Source().MinLSN(ctx, ci)
	must(t, err)
	if err := env.Cleanup(ctx, ci, l.Prev()); err == nil {
		t.Fatalf("cleanup at %s (no commit's LSN) was accepted", l.Prev())
	}
	if m, err := env.Source().MinLSN(ctx, ci); err != nil || m != min0 {
		t.Fatalf("min_lsn %s after a refused cleanup, want %s (%v)", m, min0, err)
	}
	must(t, env.Cleanup(ctx, ci, l))
}

// Cleanup at a low water mark can leave min_lsn below it: at the first mapping entry that
// shares the mark's tran_end_time, a datetime of 1/300 s (docs/reference/lab-findings.md §10,
// docs/reference/sqlserver-cdc.md §5.1). Two commits made back to back usually share
// that time; the expectation is computed from the commit times the source reports, so the
// test holds whether or not they do on a given server.
func testCleanupStopsAtFirstEntryOfSameTime(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	must(t, env.Sleep(ctx, time.Second))
	first := maxLSN(ctx, t, env.Source())
	for id := 2; id <= 3; id++ {
		tx, err := env.Begin(ctx)
		must(t, err)
		must(t, tx.Exec(ctx, Insert(tbl, map[string]any{"id": id, "v": id})))
		must(t, tx.Commit(ctx))
	}
	must(t, env.WaitCaptured(ctx))
	rows := ReadChanges(ctx, t, env.Source(), ci, first.Next(), maxLSN(ctx, t, env.Source()))
	if len(rows) != 2 || rows[0].Start == rows[1].Start {
		t.Fatalf("want two commits after %s, got %d change rows", first, len(rows))
	}
	a, b := rows[0].Start, rows[1].Start
	ta, ok, err := env.Source().CommitTime(ctx, a)
	must(t, err)
	tb, okb, err := env.Source().CommitTime(ctx, b)
	must(t, err)
	if !ok || !okb {
		t.Fatalf("commit times of %s, %s: found %v, %v", a, b, ok, okb)
	}
	want := b
	if ta.Equal(tb) {
		want = a
	}
	must(t, env.Cleanup(ctx, ci, b))
	m, err := env.Source().MinLSN(ctx, ci)
	must(t, err)
	if m != want {
		t.Fatalf("min_lsn %s after cleanup at %s, want %s (commit times %s, %s)", m, b, want, ta, tb)
	}
	left := ReadChanges(ctx, t, env.Source(), ci, lsn.Zero.Next(), maxLSN(ctx, t, env.Source()))
	wantLeft := 1
	if want == a {
		wantLeft = 2
	}
	if len(left) != wantLeft {
		t.Fatalf("%d change rows left after cleanup, want %d", len(left), wantLeft)
	}
}

// The database's default collation is case-insensitive (SQL Server's default
// installation): a varchar key created without COLLATE reports that collation, and 'a' and
// 'A' are the same key.
func testDefaultCollationCaseInsensitive(ctx context.Context, t *testing.T, env Env) {
	must(t, env.CreateTable(ctx, Table{Name: "words", Columns: [][2]string{{"w", "varchar(10)"}, {"v", "int"}}, Key: []string{"w"}, Instance: "words_ci"}))
	cols := capturedNamed(ctx, t, env, "words_ci", "w")
	if cols[0].Collation == "" {
		t.Fatalf("varchar column without a collation: %+v", cols[0])
	}
	must(t, env.Exec(ctx, Insert("words", map[string]any{"w": "a", "v": 1})))
	if err := env.Exec(ctx, Insert("words", map[string]any{"w": "A", "v": 2})); err == nil {
		t.Fatalf("'A' inserted next to 'a' under collation %s: want a duplicate key", cols[0].Collation)
	}
	// A key column described without its collation is refused, on every backend.
	bare := cols[0]
	bare.Collation = ""
	_, _, err := env.Source().KeyMax(ctx, source.Table{Schema: "dbo", Name: env.Name("words")}, []source.Column{bare})
	var ia *source.InvalidArgumentError
	if !errors.As(err, &ia) {
		t.Fatalf("KeyMax on a varchar key without its collation: %v, want *InvalidArgumentError", err)
	}
}
