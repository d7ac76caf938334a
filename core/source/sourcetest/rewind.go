package sourcetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// A database restored to an earlier point: max_lsn goes below a checkpoint taken before
// the restore, and once new commits pass it the checkpoint's commit is gone or has another
// commit time. source.CheckContinuity refuses both (docs/reference/sqlserver-cdc.md
// §13).
func testRestoreRewind(ctx context.Context, t *testing.T, env Env) {
	r, ok := env.(Restorer)
	if !ok {
		t.Skip("this harness cannot back up and restore its database")
	}
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	b, err := r.Backup(ctx)
	must(t, err)
	for i := 2; i <= 4; i++ {
		must(t, env.Sleep(ctx, time.Second))
		must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": i, "v": i})))
	}
	ckpt := lastCommit(ctx, t, env, ci, lsn.Zero)
	at, ok, err := env.Source().CommitTime(ctx, ckpt)
	must(t, err)
	if !ok {
		t.Fatalf("no commit time for %s", ckpt)
	}
	must(t, source.CheckContinuity(ctx, env.Source(), ckpt, at))
	must(t, r.Restore(ctx, b))
	var rw *source.LSNRewoundError
	if err := source.CheckContinuity(ctx, env.Source(), ckpt, at); !errors.As(err, &rw) {
		t.Fatalf("after the restore: %v, want *LSNRewoundError", err)
	}
	// New commits until max_lsn passes the checkpoint: still refused.
	for i := 10; maxLSN(ctx, t, env.Source()).Compare(ckpt) <= 0; i++ {
		must(t, env.Sleep(ctx, time.Second))
		must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": i, "v": i})))
	}
	if err := source.CheckContinuity(ctx, env.Source(), ckpt, at); !errors.As(err, &rw) {
		t.Fatalf("after new commits passed the checkpoint: %v, want *LSNRewoundError", err)
	}
}

// A change read whose session is on a secondary behind the range's end is refused before
// it reads, with a transient *source.ReplicaBehindError; read on the primary it is whole.
func testLaggingReplica(ctx context.Context, t *testing.T, env Env) {
	lg := laggingOrders(ctx, t, env)
	ci, m, cols := lg.ci, lg.max, lg.cols
	_, err := env.Source().ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: lsn.Zero, To: m, Columns: cols})
	var rb *source.ReplicaBehindError
	if !errors.As(err, &rb) || !source.IsTransient(err) {
		t.Fatalf("read on a lagging secondary: %v, want a transient *ReplicaBehindError", err)
	}
	if rows := ReadChanges(ctx, t, env.Source(), ci, lsn.Zero, m); len(rows) != 2 {
		t.Fatalf("read on the primary: %d rows, want 2", len(rows))
	}
}

// A range ending past max_lsn cannot be vouched for by the reading session and is refused
// the same way: the check compares with the session's own max_lsn.
func testRangePastMaxLSN(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	m := maxLSN(ctx, t, env.Source())
	cols, err := env.Source().CapturedColumns(ctx, ci)
	must(t, err)
	_, err = env.Source().ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: lsn.Zero, To: lsn.Max, Columns: cols})
	var rb *source.ReplicaBehindError
	if !errors.As(err, &rb) || rb.MaxLSN.Less(m) {
		t.Fatalf("range to the largest LSN: %v, want *ReplicaBehindError with max_lsn at least %s", err, m)
	}
}

// Computed columns are captured but NULL in every change row (Microsoft's documentation
// of cdc.<capture_instance>_CT); ReadTable reads them as NULL too, so that a snapshot and
// the stream agree on every row (docs/types.md "Computed columns").
func testComputedColumns(ctx context.Context, t *testing.T, env Env) {
	must(t, env.CreateTable(ctx, Table{Name: "calc", Columns: [][2]string{{"id", "int"}, {"v", "int"}}, Key: []string{"id"}, Instance: "calc_ci",
		Computed: [][2]string{{"twice", "[v] * 2"}}}))
	ci := env.Name("calc_ci")
	must(t, env.Exec(ctx, Insert("calc", map[string]any{"id": 1, "v": 21})))
	must(t, env.Exec(ctx, Update("calc", []any{1}, map[string]any{"v": 5})))
	cols, err := env.Source().CapturedColumns(ctx, ci)
	must(t, err)
	var twice *source.Column
	for i := range cols {
		if cols[i].Name == "twice" {
			twice = &cols[i]
		}
	}
	if twice == nil || !twice.Computed || !twice.Present {
		t.Fatalf("captured columns %+v: want twice, computed and present", cols)
	}
	for _, r := range ReadChanges(ctx, t, env.Source(), ci, lsn.Zero, maxLSN(ctx, t, env.Source())) {
		if r.Values["twice"] != nil {
			t.Fatalf("change row %+v: the computed column is not NULL", r)
		}
	}
	rows, err := env.Source().ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: env.Name("calc")}, Columns: cols})
	must(t, err)
	got := Drain(ctx, t, rows)
	if len(got) != 1 || got[0]["v"] != int64(5) || got[0]["twice"] != nil {
		t.Fatalf("table rows %v: want v 5 and twice NULL", got)
	}
}

// A table read at a snapshot's stamp on a secondary whose redo is behind the stamp would
// return a table state older than the snapshot claims; the session checks its own max_lsn
// first (TableRead.AtLeast) and refuses with a transient *ReplicaBehindError.
func testLaggingReplicaTableRead(ctx context.Context, t *testing.T, env Env) {
	lg := laggingOrders(ctx, t, env)
	s := lg.max
	read := source.TableRead{Table: source.Table{Schema: "dbo", Name: env.Name(lg.table)}, Columns: lg.cols, AtLeast: s}
	_, err := env.Source().ReadTable(ctx, read)
	var rb *source.ReplicaBehindError
	if !errors.As(err, &rb) || !source.IsTransient(err) || rb.To != s {
		t.Fatalf("table read at %s on a lagging secondary: %v, want a transient *ReplicaBehindError", s, err)
	}
	rows, err := env.Source().ReadTable(ctx, read)
	must(t, err)
	if got := Drain(ctx, t, rows); len(got) != 2 {
		t.Fatalf("table read on the primary: %d rows, want 2", len(got))
	}
}

// lagged is the orders table with two commits, the next read routed to a secondary that
// has only the first: max is the primary's max_lsn, cols the captured columns.
type lagged struct {
	table, ci string
	max       lsn.LSN
	cols      []source.Column
}

// laggingOrders makes lagged, or skips when the harness cannot route a read to a lagging
// secondary.
func laggingOrders(ctx context.Context, t *testing.T, env Env) lagged {
	t.Helper()
	lag, ok := env.(ReplicaLagger)
	if !ok {
		t.Skip("this harness cannot route a read to a lagging secondary")
	}
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	first := maxLSN(ctx, t, env.Source())
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 2, "v": 2})))
	out := lagged{table: tbl, ci: ci, max: maxLSN(ctx, t, env.Source())}
	var err error
	out.cols, err = env.Source().CapturedColumns(ctx, ci)
	must(t, err)
	must(t, lag.LagReplica(ctx, first, 1))
	return out
}
