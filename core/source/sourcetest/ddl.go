package sourcetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Real DDL on a captured table (docs/reference/sqlserver-cdc.md §6): ADD COLUMN leaves the
// instance as it is, DROP COLUMN keeps the column captured (NULL from then on, not present
// in the table), ALTER COLUMN is recorded with required_column_update; DDLHistory lists
// the three in order within the range asked.
func testDDLHistory(ctx context.Context, t *testing.T, env Env) {
	d, ok := env.(DDLer)
	if !ok {
		t.Skip("this harness cannot run DDL")
	}
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1, "note": "a"})))
	before := maxLSN(ctx, t, env.Source())
	must(t, d.Alter(ctx, env.Name(tbl), "ADD extra int"))
	must(t, d.Alter(ctx, env.Name(tbl), "DROP COLUMN note"))
	must(t, d.Alter(ctx, env.Name(tbl), "ALTER COLUMN v bigint"))
	must(t, env.Exec(ctx, Update(tbl, []any{1}, map[string]any{"v": 7})))
	ddl, err := env.Source().DDLHistory(ctx, ci, before, maxLSN(ctx, t, env.Source()))
	must(t, err)
	if len(ddl) != 3 {
		t.Fatalf("%d DDL events, want 3: %+v", len(ddl), ddl)
	}
	for i, want := range []string{"add", "drop", "alter"} {
		if !strings.Contains(strings.ToLower(ddl[i].Command), want) {
			t.Errorf("event %d %q, want %s", i, ddl[i].Command, want)
		}
		if i > 0 && !ddl[i-1].LSN.Less(ddl[i].LSN) {
			t.Errorf("events out of order: %+v", ddl)
		}
	}
	if !ddl[2].RequiredColumnUpdate {
		t.Errorf("ALTER COLUMN without required_column_update: %+v", ddl[2])
	}
	cols, err := env.Source().CapturedColumns(ctx, ci)
	must(t, err)
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
		if strings.EqualFold(c.Name, "note") && c.Present {
			t.Errorf("dropped column still present: %+v", c)
		}
	}
	if strings.Contains(strings.Join(names, ","), "extra") {
		t.Errorf("an added column joined the capture instance: %v", names)
	}
	rows := ReadChanges(ctx, t, env.Source(), ci, before.Next(), maxLSN(ctx, t, env.Source()))
	if len(rows) != 2 || rows[1].Values["v"] != int64(7) || rows[1].Values["note"] != nil {
		t.Fatalf("update after the DDL: %+v", rows)
	}
}

// A capture-instance switch: commits on both sides of the new instance's start_lsn S are
// in the old instance; only those from S on are in the new one; once the old instance is
// disabled it is gone at once (docs/reference/sqlserver-cdc.md §4.4–§4.6).
func testInstanceSwitch(ctx context.Context, t *testing.T, env Env) {
	d, ok := env.(DDLer)
	if !ok {
		t.Skip("this harness cannot disable a capture instance")
	}
	tbl, ci1 := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1})))
	must(t, env.EnableCapture(ctx, tbl, "orders_v2"))
	ci2 := env.Name("orders_v2")
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 2, "v": 2})))
	list, err := env.Source().CaptureInstances(ctx)
	must(t, err)
	v2, err := source.Resolve(list, ci2)
	must(t, err)
	m := maxLSN(ctx, t, env.Source())
	old := ReadChanges(ctx, t, env.Source(), ci1, lsn.Zero, m)
	newer := ReadChanges(ctx, t, env.Source(), ci2, lsn.Zero, m)
	if len(old) != 2 || len(newer) != 1 || newer[0].Values["id"] != int64(2) {
		t.Fatalf("old instance %d rows, new %d rows %+v: want 2 and the one after S", len(old), len(newer), newer)
	}
	if old[0].Start.Compare(v2.StartLSN) >= 0 || newer[0].Start.Compare(v2.StartLSN) < 0 {
		t.Fatalf("S %s: old commit %s, new commit %s", v2.StartLSN, old[0].Start, newer[0].Start)
	}
	must(t, d.DisableCapture(ctx, env.Name(tbl), ci1))
	var nf *source.CaptureInstanceNotFoundError
	if _, err := env.Source().MinLSN(ctx, ci1); !errors.As(err, &nf) {
		t.Fatalf("MinLSN of the disabled instance: %v", err)
	}
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 3, "v": 3})))
	if rows := ReadChanges(ctx, t, env.Source(), ci2, lsn.Zero, maxLSN(ctx, t, env.Source())); len(rows) != 2 {
		t.Fatalf("new instance after the switch: %d rows, want 2", len(rows))
	}
}
