package cdcsim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

func TestPingModelledAndFaults(t *testing.T) {
	ctx := context.Background()
	db := New(Config{})
	if rtt, err := db.Ping(ctx); err != nil || rtt != DefaultRTT {
		t.Errorf("default ping %v %v, want %v", rtt, err, DefaultRTT)
	}
	db.SetNetwork(Network{RTT: 3500 * time.Microsecond})
	if rtt, err := db.Ping(ctx); err != nil || rtt != 3500*time.Microsecond {
		t.Errorf("ping %v %v, want 3.5ms", rtt, err)
	}
	db.Inject(Fault{Method: "Ping"})
	var te *source.TransientError
	if _, err := db.Ping(ctx); !errors.As(err, &te) {
		t.Errorf("injected ping fault: %v", err)
	}
	db.Close()
	if _, err := db.Ping(ctx); !errors.Is(err, source.ErrClosed) {
		t.Errorf("ping after close: %v", err)
	}
}

func TestChangeReadNetworkWait(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{})
	insert(t, db, 1, 2, 3, 4, 5)
	cols, err := db.CapturedColumns(ctx, "dbo_orders")
	mustT(t, err)
	read := func() source.NetworkWaiter {
		r, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsn.Zero, To: maxOf(ctx, t, db),
			Columns: cols, ReadOptions: source.ReadOptions{BatchRows: 2}})
		mustT(t, err)
		w := r.(source.NetworkWaiter)
		if _, ok := w.NetworkWait(); ok {
			t.Error("wait reported before the read ended")
		}
		if got := readAll(t, r); len(got) != 5 {
			t.Fatalf("rows %d", len(got))
		}
		return w
	}
	if d, ok := read().NetworkWait(); !ok || d != 0 {
		t.Errorf("default wait %v %v, want 0 true", d, ok)
	}
	db.SetNetwork(Network{WaitPerRow: 2500 * time.Microsecond})
	if d, ok := read().NetworkWait(); !ok || d != 12*time.Millisecond {
		t.Errorf("wait %v %v, want 12ms (5 rows × 2.5ms, whole ms) true", d, ok)
	}
	db.SetNetwork(Network{WaitPerRow: time.Millisecond, NoWaitStats: true})
	if d, ok := read().NetworkWait(); ok {
		t.Errorf("wait %v reported without wait stats", d)
	}

	// A read that breaks reports no wait.
	db.SetNetwork(Network{WaitPerRow: time.Millisecond})
	db.Inject(Fault{Method: "ReadChanges", Kind: FaultLostConnection, AfterBatches: 1})
	r, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsn.Zero, To: maxOf(ctx, t, db),
		Columns: cols, ReadOptions: source.ReadOptions{BatchRows: 2}})
	mustT(t, err)
	for {
		rec, err := r.Next(ctx)
		if err != nil {
			break
		}
		rec.Release()
	}
	r.Close()
	if d, ok := r.(source.NetworkWaiter).NetworkWait(); ok {
		t.Errorf("broken read reported wait %v", d)
	}
}
