package sourcetest

import (
	"context"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// testPingAndNetworkWait: Ping is a positive round trip, and a drained change read whose
// Rows implement source.NetworkWaiter reports a wait of at least 0 — the inputs of the
// facts row's source_rtt_ms and network_wait_ms (docs/reference/sqlserver-cdc.md §11). A
// server that does not expose the session wait stats may report none (ok false).
func testPingAndNetworkWait(ctx context.Context, t *testing.T, env Env) {
	src := env.Source()
	rtt, err := src.Ping(ctx)
	must(t, err)
	if rtt <= 0 {
		t.Errorf("Ping = %v, want a positive duration", rtt)
	}
	tbl, ci := ordersTable(ctx, t, env)
	before := maxLSN(ctx, t, src)
	for i := range 3 {
		must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": i + 1, "v": i})))
	}
	cols, err := src.CapturedColumns(ctx, ci)
	must(t, err)
	rows, err := src.ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: before.Next(),
		To: maxLSN(ctx, t, src), Columns: cols, ReadOptions: source.ReadOptions{BatchRows: 2}})
	must(t, err)
	if got := Drain(ctx, t, rows); len(got) != 3 {
		t.Fatalf("read %d rows, want 3", len(got))
	}
	w, ok := rows.(source.NetworkWaiter)
	if !ok {
		t.Logf("%T does not report a network wait", rows)
		return
	}
	if d, ok := w.NetworkWait(); ok && d < 0 {
		t.Errorf("NetworkWait = %v, want >= 0", d)
	} else if !ok {
		t.Logf("the server reports no network wait for this session")
	}
}
