package stream

import (
	"math"
	"slices"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// netMetrics collects the network measurements of a batch's read ranges and folds them
// into the facts row (docs/reference/original-library.md §4, §6.4).
type netMetrics struct {
	// rttMs holds one SELECT 1 round trip per range whose Ping succeeded, in ms.
	rttMs []float64
	// waitMs sums the ranges' ASYNC_NETWORK_IO growth; waitMissing counts the ranges that
	// could not report it.
	waitMs      int64
	waitMissing int
	ranges      int
}

// add records one range's measurements: its round trip (rttOK false when Ping failed) and
// its read's network wait (waitOK false when the source did not report one).
func (m *netMetrics) add(rtt time.Duration, rttOK bool, wait time.Duration, waitOK bool) {
	m.ranges++
	if rttOK {
		m.rttMs = append(m.rttMs, float64(rtt)/float64(time.Millisecond))
	}
	if waitOK {
		m.waitMs += wait.Milliseconds()
	} else {
		m.waitMissing++
	}
}

// fill sets source_rtt_ms to the median round trip rounded to 1 dp (NULL when no range
// pinged) and network_wait_ms to the summed wait (NULL when no range was read or any range
// lacks its wait), per the folding rules of docs/reference/original-library.md §6.4.
func (m *netMetrics) fill(row *facts.Row) {
	if med, ok := median(m.rttMs); ok {
		row.SourceRTTMs = facts.Float64(math.Round(med*10) / 10)
	}
	if m.ranges > 0 && m.waitMissing == 0 {
		row.NetworkWaitMs = facts.Int64(m.waitMs)
	}
}

// median is the middle value, or the mean of the two middle values of an even count.
func median(v []float64) (float64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], true
	}
	return (s[n/2-1] + s[n/2]) / 2, true
}

// networkWait is the wait a drained or closed change read reports, if its Rows can.
func networkWait(rows source.Rows) (time.Duration, bool) {
	if w, ok := rows.(source.NetworkWaiter); ok {
		return w.NetworkWait()
	}
	return 0, false
}
