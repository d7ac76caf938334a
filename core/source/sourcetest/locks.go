package sourcetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// A READ COMMITTED source-table read blocked by a writer's uncommitted row fails with
// *source.LockTimeoutError once lockTimeoutMs passes (error 1222); a SNAPSHOT read of the
// same range does not wait and sees the last committed version (docs/reference/sqlserver-cdc.md
// §8.1, §8.2). The snapshot half needs ALLOW_SNAPSHOT_ISOLATION on the database.
func testLockTimeoutAndSnapshot(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	cols, err := env.Source().CapturedColumns(ctx, ci)
	must(t, err)
	tx, err := env.Begin(ctx)
	must(t, err)
	must(t, tx.Exec(ctx, Update(tbl, []any{1}, map[string]any{"v": 2})))
	defer func() { must(t, tx.Commit(ctx)) }()
	timeout := 200 * time.Millisecond
	st := source.Table{Schema: "dbo", Name: env.Name(tbl), LockTimeout: &timeout}
	rows, err := env.Source().ReadTable(ctx, source.TableRead{Table: st, Columns: cols})
	if err == nil {
		_, err = rows.Next(ctx)
		rows.Close()
	}
	var lt *source.LockTimeoutError
	if !errors.As(err, &lt) {
		t.Fatalf("READ COMMITTED read behind an open writer: %v, want *LockTimeoutError", err)
	}
	st.Isolation = source.Snapshot
	rows, err = env.Source().ReadTable(ctx, source.TableRead{Table: st, Columns: cols})
	must(t, err)
	got := Drain(ctx, t, rows)
	if len(got) != 1 || got[0]["v"] != int64(1) {
		t.Fatalf("SNAPSHOT read: %v, want the committed v=1", got)
	}
}

// An update of the key is recorded either as a delete and an insert (1, 2) or as an
// update pair (3, 4) whose images carry the old and the new key; both shapes are SQL
// Server's to choose (docs/reference/sqlserver-cdc.md §3.4), and readers must take either.
func testKeyUpdateShapes(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	before := maxLSN(ctx, t, env.Source())
	must(t, env.Exec(ctx, Update(tbl, []any{1}, map[string]any{"id": 5})))
	rows := ReadChanges(ctx, t, env.Source(), ci, before.Next(), maxLSN(ctx, t, env.Source()))
	if len(rows) != 2 {
		t.Fatalf("%d rows for a key update, want 2", len(rows))
	}
	shape := [2]int{rows[0].Op, rows[1].Op}
	if shape != [2]int{1, 2} && shape != [2]int{3, 4} {
		t.Fatalf("operations %v, want 1,2 or 3,4", shape)
	}
	if rows[0].Start != rows[1].Start || rows[0].Seqval != rows[1].Seqval {
		t.Fatalf("a one-row key update: %s/%s then %s/%s, want one start LSN and one seqval (one row)", rows[0].Start, rows[0].Seqval, rows[1].Start, rows[1].Seqval)
	}
	if rows[0].Values["id"] != int64(1) || rows[1].Values["id"] != int64(5) || rows[1].Values["v"] != int64(1) {
		t.Fatalf("images %v then %v, want the old key then the new", rows[0].Values, rows[1].Values)
	}
}
