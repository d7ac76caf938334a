package deltalog

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
)

// BenchmarkFactsAged is BenchmarkFactsFleet's control in miniature, in memory and in one
// goroutine: one facts table aged MSSQLCDC_BENCH_AGED_DAYS days (default 8: past the 7-day
// tombstone retention, so it carries a full week of tombstones, as a 30-day-old table
// does; the log's length does not reach a commit) and one created at the start of the
// measured day, each making a facts commit every 10th minute (a 10-row file, txn(stream,
// n), from a kept Table: a checkpoint every 10 versions), the two alternately in the same
// minutes, and every hour the maintain function's operations on both (not measured). Over
// MSSQLCDC_BENCH_MEASURE_DAYS days (default 1) it reports, per facts commit of each table,
// the CPU (µs; the process's, so the garbage collector's work falls on whichever commit
// runs) and allocation (KB), and per checkpoint what it encoded and copied
// (checkpointCounts): full re-encodes, tombstones encoded, remove row groups copied,
// footer bytes of carried checkpoints. The counts are deterministic; the CPU is not (run
// -count 5 and compare the cpu-old/young ratios; a collection after each hour's
// maintenance keeps its garbage off the commits' CPU). MSSQLCDC_BENCH_CPUPROFILE=FILE
// writes a CPU profile of the measured days only, the commits' samples labelled
// aged=old and aged=young (go tool pprof -tagfocus aged=old FILE).
// docs/performance.md § The facts side alone, "The aged table's checkpoint".
//
//	go test ./deltalog -run '^$' -bench FactsAged -benchtime 1x -count 3
func BenchmarkFactsAged(b *testing.B) {
	aged := envInt(b, "MSSQLCDC_BENCH_AGED_DAYS", 8)
	measured := envInt(b, "MSSQLCDC_BENCH_MEASURE_DAYS", 1)
	only := os.Getenv("MSSQLCDC_BENCH_AGED_ONLY") // "old" or "young": the other makes no commits (profiles)
	profile := os.Getenv("MSSQLCDC_BENCH_CPUPROFILE")
	for range b.N {
		b.StopTimer()
		c := &clock{t: longRunStart}
		tmp := b.TempDir()
		old := newLongRunTable(b, c, 10, nil)
		const perDay = 1440
		old.age(b, c, tmp, aged, true)
		young := newLongRunTable(b, c, 10, nil)
		var st [2]agedStats
		var ms runtime.MemStats
		stopProfile := func() {}
		if profile != "" {
			stopProfile = startCPUProfile(b, profile)
		}
		b.StartTimer()
		m := 0 // aging ended on a whole day: the order below alternates as it did from there
		for range measured * perDay {
			c.t = c.t.Add(time.Minute)
			m++
			if m%10 == 0 {
				for j := range 2 {
					i := (j + m/10) % 2 // who goes first alternates
					t := []*longRunTable{old, young}[i]
					if only != "" && only != []string{"old", "young"}[i] {
						continue
					}
					pprof.Do(context.Background(), pprof.Labels("aged", []string{"old", "young"}[i]), func(context.Context) {
						st[i].commit(b, t, tmp, &ms)
					})
				}
			}
			if m%60 == 0 {
				b.StopTimer()
				old.maintain(b, tmp)
				young.maintain(b, tmp)
				runtime.GC() // the maintenance's garbage is not the commits' to collect
				b.StartTimer()
			}
		}
		b.StopTimer()
		stopProfile()
		// The two tables' versions are not in step, so one may write a checkpoint more in
		// the day than the other: the per-commit figures are given at the checkpoint rate
		// of both together (norm-), the fair comparison.
		rate := float64(st[0].cpCommits+st[1].cpCommits) / float64(st[0].commits+st[1].commits)
		var norm [2][2]float64 // CPU µs, allocation KB
		for i, name := range []string{"old", "young"} {
			s := st[i]
			plain := float64(s.commits - s.cpCommits)
			cps := float64(s.cpCommits)
			pc, pa := float64((s.cpu-s.cpCPU).Microseconds())/plain, float64(s.alloc-s.cpAlloc)/1024/plain
			cc, ca := float64(s.cpCPU.Microseconds())/cps, float64(s.cpAlloc)/1024/cps
			norm[i] = [2]float64{pc*(1-rate) + cc*rate, pa*(1-rate) + ca*rate}
			b.ReportMetric(norm[i][0], name+"-cpu-µs/commit")
			b.ReportMetric(norm[i][1], name+"-KB/commit")
			b.Logf("%-5s: %d commits: %d without a checkpoint, %4.0f µs, %5.1f KB each; %d with one, %5.0f µs, %6.1f KB each; at the common checkpoint rate %.3f, %4.0f µs, %5.1f KB per commit",
				name, s.commits, s.commits-s.cpCommits, pc, pa, s.cpCommits, cc, ca, rate, norm[i][0], norm[i][1])
			b.Logf("%-5s: %d checkpoints: %d carried, %d full (%d past the groups, %d past the slack, %d keys), %d tombstones encoded, %d groups copied (%d dropped whole, %d merged; %d footer entries spliced as serialized before), %d footer bytes; %d tombstones at the end",
				name, s.written, s.carried, s.full, s.noGroups, s.noSlack, s.noKeys, s.encoded, s.copied, s.dropped, s.merged, s.reused, s.footer,
				len(tombstonesOf(b, snapshotB(b, []*longRunTable{old, young}[i].open()))))
		}
		b.ReportMetric(norm[0][0]/norm[1][0], "cpu-old/young")
		b.ReportMetric(norm[0][1]/norm[1][1], "alloc-old/young")
	}
}

// agedStats sums one table's facts commits in BenchmarkFactsAged.
type agedStats struct {
	commits                                 int
	cpCommits                               int           // of them, those that wrote a checkpoint
	cpCPU                                   time.Duration // their CPU
	cpAlloc                                 uint64        // their allocation
	cpu                                     time.Duration
	alloc                                   uint64
	written, carried, full, encoded, copied int64
	footer, noGroups, noSlack, noKeys       int64
	dropped, merged, reused                 int64
}

// commit makes t's facts commit, adding its CPU, allocation and checkpoint counts to s.
func (s *agedStats) commit(b *testing.B, t *longRunTable, tmp string, ms *runtime.MemStats) {
	cc := &checkpointCounts
	w0, c0, f0, e0, p0, ft0 := cc.written.Load(), cc.carried.Load(), cc.full.Load(), cc.encoded.Load(), cc.copied.Load(), cc.footer.Load()
	g0, s0, k0 := cc.noCarryGroups.Load(), cc.noCarrySlack.Load(), cc.noCarryKeys.Load()
	d0, m0, r0 := cc.dropped.Load(), cc.merged.Load(), cc.reused.Load()
	runtime.ReadMemStats(ms)
	alloc0, cpu0 := ms.TotalAlloc, benchmetrics.CPUTime()
	t.appendBatch(b, tmp)
	cpu := benchmetrics.CPUTime() - cpu0
	runtime.ReadMemStats(ms)
	alloc := ms.TotalAlloc - alloc0
	s.cpu += cpu
	s.alloc += alloc
	s.commits++
	if cc.written.Load() > w0 {
		s.cpCommits++
		s.cpCPU += cpu
		s.cpAlloc += alloc
	}
	s.written += cc.written.Load() - w0
	s.carried += cc.carried.Load() - c0
	s.full += cc.full.Load() - f0
	s.encoded += cc.encoded.Load() - e0
	s.copied += cc.copied.Load() - p0
	s.footer += cc.footer.Load() - ft0
	s.noGroups += cc.noCarryGroups.Load() - g0
	s.noSlack += cc.noCarrySlack.Load() - s0
	s.noKeys += cc.noCarryKeys.Load() - k0
	s.dropped += cc.dropped.Load() - d0
	s.merged += cc.merged.Load() - m0
	s.reused += cc.reused.Load() - r0
}

// checkpointTally is checkpointCounts at one moment (benchmarks subtract two).
type checkpointTally struct {
	written, carried, full, encoded, copied, footer, dropped, merged int64
}

func readTally() checkpointTally {
	c := &checkpointCounts
	return checkpointTally{c.written.Load(), c.carried.Load(), c.full.Load(), c.encoded.Load(), c.copied.Load(), c.footer.Load(), c.dropped.Load(), c.merged.Load()}
}

func (t checkpointTally) add(after, before checkpointTally) checkpointTally {
	return checkpointTally{
		t.written + after.written - before.written, t.carried + after.carried - before.carried,
		t.full + after.full - before.full, t.encoded + after.encoded - before.encoded,
		t.copied + after.copied - before.copied, t.footer + after.footer - before.footer,
		t.dropped + after.dropped - before.dropped, t.merged + after.merged - before.merged,
	}
}

func (t checkpointTally) String() string {
	return fmt.Sprintf("%d checkpoints (%d carried, %d encoding every tombstone), %d tombstones encoded, %d remove row groups copied (%.1f a carried checkpoint), %d dropped whole, %d merged, %.1f KB footer a carried checkpoint",
		t.written, t.carried, t.full, t.encoded, t.copied, float64(t.copied)/float64(max(t.carried, 1)), t.dropped, t.merged, float64(t.footer)/1024/float64(max(t.carried, 1)))
}
