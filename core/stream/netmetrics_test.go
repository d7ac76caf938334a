package stream

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// netEnv is a stream over 12 change rows (six commits of two inserts) read in 3 ranges,
// with the simulator's network model n.
func netEnv(t *testing.T, n cdcsim.Network) *env {
	e := newEnv(t, cdcsim.Config{Seed: 41})
	e.spec.Options.NumPartitions = 3
	e.db.SetNetwork(n)
	for c := range 6 {
		e.exec(func(tx *cdcsim.Txn) error {
			if err := insert(2*c+1, c)(tx); err != nil {
				return err
			}
			return insert(2*c+2, c)(tx)
		})
	}
	return e
}

// batchRow drains the stream and returns its one micro-batch facts row with rows.
func batchRow(t *testing.T, e *env) facts.Row {
	t.Helper()
	if res := e.mustDrain(Options{MinRowsPerRange: 1}); res.Rows != 12 {
		t.Fatalf("%+v: want 12 rows", res)
	}
	var out []facts.Row
	for _, r := range e.factsRows() {
		if r.Event == "" && r.Rows != nil && *r.Rows > 0 {
			out = append(out, r)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d facts rows with rows, want 1", len(out))
	}
	if reads := e.db.Calls("ReadChanges"); reads < 2 {
		t.Fatalf("%d change reads, want the batch read in several ranges", reads)
	}
	return out[0]
}

// source_rtt_ms is the median of the ranges' modelled SELECT 1 round trips rounded to
// 1 dp, and network_wait_ms the sum of their modelled waits
// (docs/reference/original-library.md §6.4): 12 rows × 1.5 ms.
func TestFactsRowNetworkMetricsFromSource(t *testing.T) {
	e := netEnv(t, cdcsim.Network{RTT: 1260 * time.Microsecond, WaitPerRow: 1500 * time.Microsecond})
	r := batchRow(t, e)
	if pings, reads := e.db.Calls("Ping"), e.db.Calls("ReadChanges"); pings != reads {
		t.Errorf("%d pings for %d change reads, want one per read", pings, reads)
	}
	if r.SourceRTTMs == nil || *r.SourceRTTMs != 1.3 {
		t.Errorf("source_rtt_ms %v, want 1.3", fp(r.SourceRTTMs))
	}
	if r.NetworkWaitMs == nil || *r.NetworkWaitMs != 18 {
		t.Errorf("network_wait_ms %v, want 18", ip(r.NetworkWaitMs))
	}
}

// A server that does not expose the session wait stats leaves network_wait_ms NULL; a
// failing ping leaves source_rtt_ms NULL; neither fails the read.
func TestFactsRowNetworkMetricsUnavailable(t *testing.T) {
	e := netEnv(t, cdcsim.Network{RTT: 2 * time.Millisecond, WaitPerRow: time.Millisecond, NoWaitStats: true})
	e.db.Inject(cdcsim.Fault{Method: "Ping", Times: 1000})
	r := batchRow(t, e)
	if r.NetworkWaitMs != nil || r.SourceRTTMs != nil {
		t.Errorf("network_wait_ms %v source_rtt_ms %v, want NULL NULL", ip(r.NetworkWaitMs), fp(r.SourceRTTMs))
	}
}

// One range whose read reports no wait makes the batch's network_wait_ms NULL
// (docs/reference/original-library.md §6.4: NULL if any read reported none); the round
// trip stays.
func TestFactsRowNetworkWaitNullWhenOneRangeLacksIt(t *testing.T) {
	e := netEnv(t, cdcsim.Network{RTT: 2 * time.Millisecond, WaitPerRow: time.Millisecond})
	e.lake.WrapSource = func(s source.Source) source.Source { return &blindSecondRead{Source: s} }
	r := batchRow(t, e)
	if r.NetworkWaitMs != nil {
		t.Errorf("network_wait_ms %v, want NULL", *r.NetworkWaitMs)
	}
	if r.SourceRTTMs == nil || *r.SourceRTTMs != 2 {
		t.Errorf("source_rtt_ms %v, want 2", fp(r.SourceRTTMs))
	}
}

// blindSecondRead hides the network wait of its second change read.
type blindSecondRead struct {
	source.Source
	n atomic.Int64
}

func (b *blindSecondRead) ReadChanges(ctx context.Context, r source.ChangeRead) (source.Rows, error) {
	rows, err := b.Source.ReadChanges(ctx, r)
	if err != nil || b.n.Add(1) != 2 {
		return rows, err
	}
	return struct{ source.Rows }{rows}, nil
}

func TestNetMetricsFold(t *testing.T) {
	var m netMetrics
	var row facts.Row
	m.fill(&row)
	if row.SourceRTTMs != nil || row.NetworkWaitMs != nil {
		t.Errorf("no ranges: %v %v, want NULL NULL", fp(row.SourceRTTMs), ip(row.NetworkWaitMs))
	}
	for _, c := range []struct {
		rtt  time.Duration
		wait time.Duration
	}{{3 * time.Millisecond, 4 * time.Millisecond}, {1 * time.Millisecond, 0}, {1250 * time.Microsecond, 7 * time.Millisecond}, {9 * time.Millisecond, 1 * time.Millisecond}} {
		m.add(c.rtt, true, c.wait, true)
	}
	m.add(0, false, 5*time.Millisecond, true) // a failed ping is left out of the median
	m.fill(&row)
	// rtts 1, 1.25, 3, 9: median (1.25+3)/2 = 2.125 → 2.1; waits 4+0+7+1+5.
	if row.SourceRTTMs == nil || *row.SourceRTTMs != 2.1 || row.NetworkWaitMs == nil || *row.NetworkWaitMs != 17 {
		t.Errorf("fold %v %v, want 2.1 17", fp(row.SourceRTTMs), ip(row.NetworkWaitMs))
	}
	m.add(time.Millisecond, true, 0, false)
	row = facts.Row{}
	m.fill(&row)
	if row.NetworkWaitMs != nil || row.SourceRTTMs == nil || *row.SourceRTTMs != 1.3 {
		t.Errorf("one wait missing: %v %v, want 1.3 NULL", fp(row.SourceRTTMs), ip(row.NetworkWaitMs))
	}
}

func fp(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func ip(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
