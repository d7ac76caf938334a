package benchmetrics

import (
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Meter measures wall-clock time, process CPU time, heap bytes allocated and GC cycles
// from its Start.
type Meter struct {
	t0   time.Time
	cpu0 time.Duration
	ms0  runtime.MemStats
}

// Start collects the garbage of the set-up first, so its GC is not charged to the
// measured interval, then starts a Meter.
func Start() Meter {
	runtime.GC()
	m := Meter{t0: time.Now(), cpu0: CPUTime()}
	runtime.ReadMemStats(&m.ms0)
	return m
}

// Report reports on b, for rows and bytes (Arrow bytes, see ArrowBytes) moved since
// Start over b.N operations: alloc-MB/op and gc/op, rows/s, MB/s (wall-clock), MB/cpu-s
// (CPUTime), cpu-s/op; it zeroes ns/op, which the wall-clock rates replace. MB is 1e6
// bytes.
func (m Meter) Report(b *testing.B, rows, bytes int64) {
	wall, cpu := time.Since(m.t0).Seconds(), (CPUTime() - m.cpu0).Seconds()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	n := float64(b.N)
	b.ReportMetric(float64(ms.TotalAlloc-m.ms0.TotalAlloc)/1e6/n, "alloc-MB/op")
	b.ReportMetric(float64(ms.NumGC-m.ms0.NumGC)/n, "gc/op")
	b.ReportMetric(float64(rows)/wall, "rows/s")
	b.ReportMetric(float64(bytes)/1e6/wall, "MB/s")
	b.ReportMetric(float64(bytes)/1e6/cpu, "MB/cpu-s")
	b.ReportMetric(cpu/n, "cpu-s/op")
	b.ReportMetric(0, "ns/op")
}

// ArrowBytes is the sum of the lengths of a record's buffers (validity bitmaps, offsets,
// values) over its columns, as facts.BatchStats counts read_mb.
func ArrowBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				n += int64(buf.Len())
			}
		}
	}
	return n
}

// CPU is the process CPU time since Start, for a benchmark's own rates.
func (m Meter) CPU() time.Duration { return CPUTime() - m.cpu0 }

// Intervals sums the process CPU time and heap bytes allocated over the intervals between
// Resume and Pause, for a benchmark whose set-up runs between measured parts (a workload
// committed to the simulator before each batch). The zero value is paused, with nothing
// measured.
type Intervals struct {
	// CPU, Alloc and GCs (garbage collections ended) are the totals of the intervals
	// ended so far.
	CPU   time.Duration
	Alloc uint64
	GCs   uint32

	cpu0   time.Duration
	alloc0 uint64
	gcs0   uint32
}

// Resume starts an interval.
func (m *Intervals) Resume() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.alloc0, m.gcs0 = ms.TotalAlloc, ms.NumGC
	m.cpu0 = CPUTime()
}

// Pause ends the interval Resume started and adds it to the totals.
func (m *Intervals) Pause() {
	m.CPU += CPUTime() - m.cpu0
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.Alloc += ms.TotalAlloc - m.alloc0
	m.GCs += ms.NumGC - m.gcs0
}
