package mssql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// The diagnostics of docs/reference/sqlserver-cdc.md §11: the round trip and the
// session's network wait that the facts row's source_rtt_ms and network_wait_ms report.

// sqlPing is the round trip Ping times.
const sqlPing = "SELECT 1"

// sqlNetworkWait is the session's accumulated ASYNC_NETWORK_IO wait in milliseconds: the
// time SQL Server waited for the client to consume result rows. A session sees its own row
// of sys.dm_exec_session_wait_stats without VIEW SERVER STATE; no row (the session never
// waited) reads as 0 through SUM/ISNULL, so the statement always returns one row.
const sqlNetworkWait = "SELECT CAST(ISNULL(SUM(wait_time_ms), 0) AS bigint) AS wait_time_ms " +
	"FROM sys.dm_exec_session_wait_stats WHERE session_id = @@SPID AND wait_type = N'ASYNC_NETWORK_IO'"

// Ping times one SELECT 1 on a connection of its own (source.Source). Acquiring the
// connection, which may log in, is not timed. No retries: a retried round trip would not
// measure one.
func (d *DB) Ping(ctx context.Context) (time.Duration, error) {
	if d.closed.Load() {
		return 0, source.ErrClosed
	}
	ec := d.ec("ping")
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return 0, mapError(err, ec)
	}
	defer conn.Close()
	var one int64
	t0 := time.Now()
	err = conn.QueryRowContext(ctx, sqlPing).Scan(&one)
	rtt := time.Since(t0)
	if err != nil {
		return 0, mapError(err, ec)
	}
	if rtt <= 0 {
		rtt = time.Nanosecond // a coarse clock; the contract promises a positive duration
	}
	return rtt, nil
}

// sessionWait reads the ASYNC_NETWORK_IO wait of conn's session, in milliseconds.
func sessionWait(ctx context.Context, conn *sql.Conn) (int64, error) {
	var ms sql.NullInt64
	if err := conn.QueryRowContext(ctx, sqlNetworkWait).Scan(&ms); err != nil {
		return 0, fmt.Errorf("read network wait: %w", err)
	}
	return ms.Int64, nil
}

// netWait is a change read's network wait: the session's wait before the read and, once
// measured at the end of the read, the growth. ok is false until then and when a reading
// failed.
type netWait struct {
	before   int64
	beforeOK bool
	measured bool
	growth   int64
	ok       bool
}

// finish reads the wait after the read on conn, once. A failed reading leaves ok false; a
// counter that went backwards (a reset session) counts as 0.
func (w *netWait) finish(ctx context.Context, conn *sql.Conn) {
	if w == nil || w.measured {
		return
	}
	w.measured = true
	if !w.beforeOK || conn == nil {
		return
	}
	after, err := sessionWait(ctx, conn)
	if err != nil {
		return
	}
	w.growth, w.ok = max(after-w.before, 0), true
}

// abandon gives up the measurement of a read that failed: its wait stays unknown.
func (w *netWait) abandon() {
	if w != nil {
		w.measured = true
	}
}

// NetworkWait implements source.NetworkWaiter: the ASYNC_NETWORK_IO growth of the read's
// session, valid once the rows are drained or closed.
func (r *arrowRows) NetworkWait() (time.Duration, bool) {
	if r.wait == nil || !r.wait.ok {
		return 0, false
	}
	return time.Duration(r.wait.growth) * time.Millisecond, true
}
