package cdcsim

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// DefaultRTT is what Ping reports unless SetNetwork sets another round trip.
const DefaultRTT = time.Millisecond

// Network models the diagnostics of docs/reference/sqlserver-cdc.md §11: the
// SELECT 1 round trip Ping reports and the ASYNC_NETWORK_IO wait change reads report
// (source.NetworkWaiter). The zero value pings in DefaultRTT and reads without waiting.
type Network struct {
	// RTT is the round trip Ping reports; DefaultRTT when zero or negative.
	RTT time.Duration
	// WaitPerRow is the wait a change read accrues per row it hands out; the reported
	// wait is rows × WaitPerRow truncated to whole milliseconds, like wait_time_ms.
	WaitPerRow time.Duration
	// NoWaitStats makes change reads report no wait (ok false), like a server that does
	// not expose sys.dm_exec_session_wait_stats: the facts column is then NULL.
	NoWaitStats bool
}

// SetNetwork sets the network model for the calls that follow.
func (db *DB) SetNetwork(n Network) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.net = n
}

// Ping implements source.Source: the modelled round trip. Faults armed for "Ping" fail it.
func (db *DB) Ping(ctx context.Context) (time.Duration, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	f, err := db.enter("Ping")
	if err != nil {
		return 0, err
	}
	if err := f.callError("Ping", "", false); err != nil {
		return 0, err
	}
	if db.net.RTT <= 0 {
		return DefaultRTT, nil
	}
	return db.net.RTT, nil
}

// withWait wraps a change read's rows so that they report the modelled network wait.
// db.mu is held.
func (db *DB) withWait(r source.Rows) *waitRows {
	return &waitRows{Rows: r, perRow: db.net.WaitPerRow, avail: !db.net.NoWaitStats}
}

// waitRows counts the rows a change read hands out and reports the modelled wait once
// the read is drained or closed (source.NetworkWaiter).
type waitRows struct {
	source.Rows
	perRow time.Duration
	avail  bool
	n      int64
	end    bool
	failed bool // a Next failed: the wait of a broken read is unknown
}

func (w *waitRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := w.Rows.Next(ctx)
	if rec != nil {
		w.n += rec.NumRows()
	}
	switch {
	case errors.Is(err, io.EOF):
		w.end = true
	case err != nil && !errors.Is(err, source.ErrClosed):
		w.failed = true
	}
	return rec, err
}

func (w *waitRows) Close() error {
	w.end = true
	return w.Rows.Close()
}

// NetworkWait implements source.NetworkWaiter.
func (w *waitRows) NetworkWait() (time.Duration, bool) {
	if !w.end || !w.avail || w.failed {
		return 0, false
	}
	return (time.Duration(w.n) * w.perRow).Truncate(time.Millisecond), true
}
