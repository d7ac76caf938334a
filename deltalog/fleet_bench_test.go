package deltalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/ddbcount"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// BenchmarkFactsFleet runs the facts side of MSSQLCDC_BENCH_TABLES source tables'
// streams (default 100) for MSSQLCDC_BENCH_DAYS simulated days (default 30) at one batch a
// minute on the S3 emulator (gofakes3, in a child process on the simulated clock,
// internal/emulators.StartS3ProcessClock, set each simulated minute), each
// table's facts table in a bucket of its own committing with S3 conditional puts
// (decision 0013: a facts table per source table, facts rows committed every 10th batch),
// in compressed time: one simulated clock that the Tables, the emulator's object times and
// every retention read, advanced a minute at a time. The work is real, through the
// deltalog code and the emulator's HTTP API: every facts commit the days call for (one
// file of 10 rows with txn(stream, n), from a Table that keeps its snapshot as a warm
// stream Lambda does, a checkpoint every 10 commits), 144 a day per table, and every
// hour, for every table, the maintain function's operations from a Table of its own
// (BenchmarkThirtyDays's maintain: Compact, a checkpoint, log clean-up at 30 days, VACUUM
// at 7 days, temporary files).
//
// The tables' 10th batches are staggered: each simulated minute the tenth of the tables
// whose turn it is commit at once, each from its own goroutine (ten commits in flight at
// 100 tables), as their stream Lambdas would; the maintenance runs between two minutes,
// two tables at a time, and is not measured. The bronze side and the CDC read are left
// out (BenchmarkThirtyDays measures bronze's).
//
// Per facts commit, for each day and over all tables, it logs (-v) and reports for the
// first and last day and the first and last five days: the store requests (the facts
// file, the LIST for others' commits, the commit, a tenth of a checkpoint's; with
// DynamoDB its requests too), the commits
// lost to another writer (each a retry), the process CPU and allocation over the minute's
// commits divided by them (the client side only, what a stream Lambda pays, the garbage
// collector's work on its heap included: the emulator runs in its own process, whose CPU
// and memory are not counted), and the wall time of the Commit call; and the commits that
// failed (CommitAttemptsError), which must be 0. The CPU, allocation and wall figures are
// those of ten concurrent commits on a shared machine: compare days, not absolute values.
// Table 0's objects, live files and tombstones at each day's end are logged.
//
// The default is the whole claim: 432,000 facts commits and 72,000 maintenance runs; in
// this process 199 CPU-seconds for day 1 and 331–374 for days 29–30 on 2 loaded cores
// (2026-12-02), so 2–3 CPU-hours, the emulator's process besides (3–4 GB resident from
// day 29 on: it keeps every object):
//
//	go test ./deltalog -run '^$' -bench FactsFleet -benchtime 1x -timeout 6h -v
//
// MSSQLCDC_BENCH_COARSE_DAYS ("2-28") runs those days at a coarser step (coarseDays:
// MSSQLCDC_BENCH_COARSE_FACTOR, default 60, times fewer batches, each that many minutes
// long; the same operations in the same order, on a faster clock), so that the first and
// last days run at the full step on tables that have lived 30 simulated days; the metrics
// then cover the full-step days at each end only. MSSQLCDC_BENCH_TABLES,
// MSSQLCDC_BENCH_DAYS and MSSQLCDC_BENCH_BATCHES_PER_DAY shorten it (a quick look).
// MSSQLCDC_BENCH_S3_IN_PROCESS=1 runs the emulator in the benchmark's process instead
// (internal/emulators.StartS3Clock; no go build; its CPU, allocation and heap then inside
// every figure, as in the first runs of docs/performance.md). MSSQLCDC_BENCH_CPUPROFILE=DIR
// writes a CPU profile of each full-step day to DIR/dayNN.pprof, the facts commits'
// samples labelled fleet=commit and the maintenance's fleet=maintain (go tool pprof
// -tagfocus fleet=commit; not with -cpuprofile). MSSQLCDC_BENCH_CONTROL=1 adds a control on the last day (at the
// full step): as many tables again, created that morning, whose facts commits (and hourly
// maintenance) run in the same minutes as the old tables', just before or after them in
// turn, so that a day-1 table and a day-N one are compared under the same machine load
// (logged as "control", reported as dayN-control-*; profile label fleet=commit-young).
// MSSQLCDC_BENCH_LOGSTORE=dynamodb commits through the DynamoDB
// log store instead (decision 0013's other choice: one log table on dynalite for all the
// tables, each Table's LogStore on the simulated clock, its DynamoDB requests counted with
// the S3 ones); it needs dynalite:
//
//	MSSQLCDC_BENCH_LOGSTORE=dynamodb MSSQLCDC_BENCH_TABLES=10 MSSQLCDC_BENCH_COARSE_DAYS=2-28 \
//	  scripts/with-dynalite.sh go test ./deltalog -run '^$' -bench FactsFleet -benchtime 1x -timeout 3h -v
func BenchmarkFactsFleet(b *testing.B) {
	tables := envInt(b, "MSSQLCDC_BENCH_TABLES", 100)
	days := envInt(b, "MSSQLCDC_BENCH_DAYS", 30)
	perDay := envInt(b, "MSSQLCDC_BENCH_BATCHES_PER_DAY", 1440)
	for range b.N {
		coarse := coarseFromEnv(b, days)
		stats, control := runFleet(b, tables, days, perDay, coarse)
		var failed int64
		for _, d := range stats {
			failed += d.failed
		}
		if control != nil {
			failed += control.failed
		}
		// The first and last five days at the full step (fewer when coarse days are
		// nearer the ends).
		lead, trail := days, days
		if coarse.first > 0 {
			lead, trail = coarse.first-1, days-coarse.last
		}
		lead, trail = min(5, lead), min(5, trail)
		for _, m := range []struct {
			name string
			f    factsStats
		}{
			{"day1-", stats[0].factsStats},
			{fmt.Sprintf("day%d-", days), stats[days-1].factsStats},
			{fmt.Sprintf("days1-%d-", lead), sumFacts(stats[:lead])},
			{fmt.Sprintf("days%d-%d-", days-trail+1, days), sumFacts(stats[days-trail:])},
			{controlName(control != nil, days), controlFacts(control)},
		} {
			if m.name == "" {
				continue
			}
			f := m.f
			b.ReportMetric(f.perCommit(float64(f.requests)), m.name+"req/commit")
			b.ReportMetric(f.perCommit(float64(f.lost)), m.name+"retries/commit")
			b.ReportMetric(f.perCommit(float64(f.cpu.Microseconds())), m.name+"cpu-us/commit")
			b.ReportMetric(f.perCommit(float64(f.alloc)/1024), m.name+"alloc-KB/commit")
			b.ReportMetric(f.perCommit(float64(f.commitWall.Microseconds())), m.name+"commit-us")
		}
		b.ReportMetric(float64(failed), "failed-commits")
	}
}

// controlName is the metrics' prefix of the control fleet on day days, "" without one.
func controlName(ok bool, days int) string {
	if !ok {
		return ""
	}
	return fmt.Sprintf("day%d-control-", days)
}

// controlFacts is the control fleet's figures (zero without one).
func controlFacts(c *fleetDay) factsStats {
	if c == nil {
		return factsStats{}
	}
	return c.factsStats
}

// fleetDay is one simulated day of the fleet's facts side, over all tables: its facts
// commits, those that failed, and the objects of table 0 at the day's end.
type fleetDay struct {
	factsStats
	coarse                bool // run at the coarse step
	failed                int64
	ddbRequests           int // the DynamoDB log store's, among factsStats.requests
	logFiles, dataFiles   int
	liveFiles, tombstones int // in table 0's snapshot at the day's end
	// checkpoints is what the commits' checkpoints encoded and copied (the commits of a
	// minute run together, the control's apart from the old tables').
	checkpoints checkpointTally
	// The minutes whose commits wrote a checkpoint: their commits, CPU and allocation
	// (with 10 tables a minute has one commit, so these are the checkpointing commits).
	cpCommits int
	cpCPU     time.Duration
	cpAlloc   uint64
}

// atRate is d's CPU (µs) and allocation (KB) per facts commit had a fraction rate of its
// commits written a checkpoint: the old tables' versions and the control's are not in
// step, so on a given day one fleet may write a checkpoint more per table than the other
// (15 against 14), which alone moves the per-commit figures by several per cent.
func (d *fleetDay) atRate(rate float64) (cpu, allocKB float64) {
	plain := float64(max(d.commits-d.cpCommits, 1))
	cps := float64(max(d.cpCommits, 1))
	cpu = float64((d.cpu-d.cpCPU).Microseconds())/plain*(1-rate) + float64(d.cpCPU.Microseconds())/cps*rate
	allocKB = float64(d.alloc-d.cpAlloc)/1024/plain*(1-rate) + float64(d.cpAlloc)/1024/cps*rate
	return cpu, allocKB
}

// sumFacts adds up days' facts figures.
func sumFacts(days []fleetDay) factsStats {
	var s factsStats
	for _, d := range days {
		s.commits += d.commits
		s.requests += d.requests
		s.cpu += d.cpu
		s.commitWall += d.commitWall
		s.alloc += d.alloc
		s.lost += d.lost
	}
	return s
}

// atomicClock is a simulated clock that goroutines (the emulator's among them) may read
// while one goroutine advances it.
type atomicClock struct{ ns atomic.Int64 }

func (c *atomicClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *atomicClock) set(t time.Time)         { c.ns.Store(t.UnixNano()) }
func (c *atomicClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// runFleet runs the fleet (BenchmarkFactsFleet) and returns its days.
func runFleet(b *testing.B, tables, days, perDay int, coarse coarseDays) (stats []fleetDay, control *fleetDay) {
	c := &atomicClock{}
	c.set(longRunStart)
	var srv *emulators.S3Server
	// setClock moves the emulator's clock to c's (a no-op in process, where it reads c).
	setClock := func() {}
	if os.Getenv("MSSQLCDC_BENCH_S3_IN_PROCESS") == "1" {
		srv = emulators.StartS3Clock(b, c.now)
	} else {
		srv = emulators.StartS3ProcessClock(b, c.now())
		setClock = func() {
			if err := srv.SetClock(b.Context(), c.now()); err != nil {
				b.Fatal(err)
			}
		}
	}
	profDir := os.Getenv("MSSQLCDC_BENCH_CPUPROFILE")
	newLogStore, err := fleetLogStore(b, c.now)
	if err != nil {
		b.Fatal(err)
	}
	client := srv.Client()
	tmp := b.TempDir()
	newFleet := func() []*longRunTable {
		fleet := make([]*longRunTable, tables)
		for i := range fleet {
			t, err := newLongRunTableWith(s3store.New(client, srv.Bucket(b), "facts/"), c.now, 10, nil, newLogStore)
			if err != nil {
				b.Fatal(err)
			}
			fleet[i] = t
		}
		return fleet
	}
	fleet := newFleet()
	var young []*longRunTable // the control fleet, on the last day
	hourly := max(1, perDay/24)
	start, cpuStart := time.Now(), benchmetrics.CPUTime()
	var ms runtime.MemStats
	m := 0 // the batches of each table so far
	for day := range days {
		d := fleetDay{coarse: coarse.has(day + 1)}
		batches := perDay
		if d.coarse {
			batches = max(1, perDay/coarse.factor)
		}
		minute := 24 * time.Hour / time.Duration(batches)
		stopProfile := func() {}
		if profDir != "" && !d.coarse {
			stopProfile = startCPUProfile(b, filepath.Join(profDir, fmt.Sprintf("day%02d.pprof", day+1)))
		}
		if day == days-1 && !d.coarse && os.Getenv("MSSQLCDC_BENCH_CONTROL") == "1" {
			young, control = newFleet(), &fleetDay{}
		}
		for range batches {
			c.advance(minute)
			setClock()
			m++
			var due, youngDue []*longRunTable
			for t, tbl := range fleet {
				if (m+t)%10 == 0 { // the table's 10th batch: its facts commit
					due = append(due, tbl)
					if young != nil {
						youngDue = append(youngDue, young[t])
					}
				}
			}
			if len(due) > 0 {
				// The control's commits right before or after the old tables', in turn.
				if len(youngDue) > 0 && m%2 == 0 {
					control.commitMinute(b, youngDue, tmp, &ms, "commit-young")
				}
				d.commitMinute(b, due, tmp, &ms, "commit")
				if len(youngDue) > 0 && m%2 == 1 {
					control.commitMinute(b, youngDue, tmp, &ms, "commit-young")
				}
			}
			if m%hourly == 0 {
				maintainFleet(b, fleet, tmp)
				if young != nil {
					maintainFleet(b, young, tmp)
				}
			}
		}
		stopProfile()
		d.logFiles, d.dataFiles = tableObjects(b, fleet[0])
		snap := snapshotB(b, fleet[0].open())
		d.liveFiles, d.tombstones = len(snap.Files()), len(tombstonesOf(b, snap))
		stats = append(stats, d)
		f := d.factsStats
		step := ""
		if d.coarse {
			step = fmt.Sprintf(" (coarse: %d batches)", batches)
		}
		runtime.ReadMemStats(&ms)
		b.Logf("day %2d%s: %d facts commits, %5.3f req (%5.3f DynamoDB), %5.3f retries, %6.0f µs CPU, %5.0f KB, %6.0f µs commit wall per commit; %d failed; table 0: %d log files, %d data files, %d live files, %d tombstones; heap %d MB; %v wall, %v CPU since the start",
			day+1, step, f.commits, f.perCommit(float64(f.requests)), f.perCommit(float64(d.ddbRequests)), f.perCommit(float64(f.lost)), f.perCommit(float64(f.cpu.Microseconds())),
			f.perCommit(float64(f.alloc)/1024), f.perCommit(float64(f.commitWall.Microseconds())), d.failed, d.logFiles, d.dataFiles, d.liveFiles, d.tombstones, ms.HeapAlloc>>20, time.Since(start).Round(time.Second), (benchmetrics.CPUTime() - cpuStart).Round(time.Second))
		if !d.coarse {
			b.Logf("day %2d: the commits' %v", day+1, d.checkpoints)
		}
		if control != nil {
			b.Logf("day %2d control: the commits' %v", day+1, control.checkpoints)
			rate := float64(d.cpCommits+control.cpCommits) / float64(d.commits+control.commits)
			oc, oa := d.atRate(rate)
			cc, ca := control.atRate(rate)
			b.Logf("day %2d at the common rate of checkpointing commits %.4f (old %d, control %d of %d): old %6.0f µs CPU, %5.0f KB; control %6.0f µs CPU, %5.0f KB per commit; old/control CPU %.3f, allocation %.3f",
				day+1, rate, d.cpCommits, control.cpCommits, d.commits, oc, oa, cc, ca, oc/cc, oa/ca)
			f := control.factsStats
			b.Logf("day %2d control (%d tables created this day, committing in the same minutes): %d facts commits, %5.3f req (%5.3f DynamoDB), %5.3f retries, %6.0f µs CPU, %5.0f KB, %6.0f µs commit wall per commit; %d failed",
				day+1, len(young), f.commits, f.perCommit(float64(f.requests)), f.perCommit(float64(control.ddbRequests)), f.perCommit(float64(f.lost)), f.perCommit(float64(f.cpu.Microseconds())),
				f.perCommit(float64(f.alloc)/1024), f.perCommit(float64(f.commitWall.Microseconds())), control.failed)
		}
	}
	return stats, control
}

// commitMinute makes the facts commits of one simulated minute, one goroutine per table
// due, and adds their requests, retries, wall times, and the process CPU and allocation
// over all of them to d. A commit that fails with CommitAttemptsError is counted in
// d.failed; any other error stops the benchmark.
func (d *fleetDay) commitMinute(b *testing.B, due []*longRunTable, tmp string, ms *runtime.MemStats, label string) {
	before, ddb0 := make([]int, len(due)), make([]int, len(due))
	lost0 := make([]int64, len(due))
	for j, t := range due {
		t.next++
		before[j], ddb0[j], lost0[j] = t.counter.Total(), ddbCount(t.counter), t.lost.Load()
	}
	walls := make([]time.Duration, len(due))
	errs := make([]error, len(due))
	tally0 := readTally()
	runtime.ReadMemStats(ms)
	alloc0, cpu0 := ms.TotalAlloc, benchmetrics.CPUTime()
	var wg sync.WaitGroup
	for j, t := range due {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pprof.Do(context.Background(), pprof.Labels("fleet", label), func(context.Context) {
				walls[j], errs[j] = writeBatch(t.counted, t.stream, tmp, "stream", t.next, t.rows)
			})
		}()
	}
	wg.Wait()
	cpu := benchmetrics.CPUTime() - cpu0
	runtime.ReadMemStats(ms)
	alloc := ms.TotalAlloc - alloc0
	d.cpu += cpu
	d.alloc += alloc
	tally := readTally()
	d.checkpoints = d.checkpoints.add(tally, tally0)
	if tally.written > tally0.written {
		d.cpCommits += len(due)
		d.cpCPU += cpu
		d.cpAlloc += alloc
	}
	for j, t := range due {
		var attempts *CommitAttemptsError
		if errors.As(errs[j], &attempts) {
			d.failed++
		} else if errs[j] != nil {
			b.Fatal(errs[j])
		}
		d.requests += t.counter.Total() - before[j]
		d.ddbRequests += ddbCount(t.counter) - ddb0[j]
		d.lost += t.lost.Load() - lost0[j]
		d.commitWall += walls[j]
		d.commits++
	}
}

// fleetLogStore returns the log stores the fleet's tables commit through:
// MSSQLCDC_BENCH_LOGSTORE unset or "condput", nil (newLongRunTableWith's S3 conditional
// put); "dynamodb", a DynamoDB LogStore per Table on a log table it creates on dynalite
// (emulators.DynamoDB; the benchmark is skipped without it), on the clock now, whose
// requests the table's Counter counts as "ddb.<Op>".
func fleetLogStore(b *testing.B, now func() time.Time) (func(t *longRunTable) logstore.LogStore, error) {
	switch v := os.Getenv("MSSQLCDC_BENCH_LOGSTORE"); v {
	case "", "condput":
		return nil, nil
	case "dynamodb":
	default:
		return nil, fmt.Errorf("MSSQLCDC_BENCH_LOGSTORE=%q: want condput or dynamodb", v)
	}
	ddb := emulators.DynamoDB(b)
	table := emulators.UniqueName("delta_log_")
	ctx, cancel := context.WithTimeout(b.Context(), 30*time.Second)
	defer cancel()
	if err := dynamo.CreateTable(ctx, ddb, table, dynamo.SetupOptions{SkipTTL: true, PollInterval: 20 * time.Millisecond}); err != nil {
		return nil, err
	}
	return func(t *longRunTable) logstore.LogStore {
		l, err := dynamo.New(ddbcount.Counting(ddb, t.counter), t.counted, dynamo.Options{Table: table, Scheme: "s3a", Now: now})
		if err != nil {
			panic(err) // only for bad options, which these are not
		}
		return l
	}, nil
}

// ddbCount is the DynamoDB requests c counted (ddbcount.Counting).
func ddbCount(c *storagetest.Counter) int {
	n := 0
	for op, k := range c.Counts() {
		if strings.HasPrefix(op, "ddb.") {
			n += k
		}
	}
	return n
}

// startCPUProfile starts the process's CPU profile into the file at path, and returns
// the function that stops it and closes the file; it is also called at b's cleanup, if
// the run stops first, and does nothing after the first call.
func startCPUProfile(b *testing.B, path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatal(err)
	}
	stop = sync.OnceFunc(func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	})
	b.Cleanup(stop)
	return stop
}

// maintainFleet runs the hour's maintenance on every table, two at a time.
func maintainFleet(b *testing.B, fleet []*longRunTable, tmp string) {
	next := atomic.Int64{}
	errs := make([]error, len(fleet))
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pprof.Do(context.Background(), pprof.Labels("fleet", "maintain"), func(context.Context) {
				for {
					i := int(next.Add(1)) - 1
					if i >= len(fleet) {
						return
					}
					errs[i] = fleet[i].maintainErr(tmp)
				}
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
}

// tableObjects lists t's objects (not counted): its log's files and the others.
func tableObjects(b *testing.B, t *longRunTable) (logFiles, dataFiles int) {
	for oi, err := range t.counted.Store.List(b.Context(), "", "") {
		if err != nil {
			b.Fatal(err)
		}
		if strings.HasPrefix(oi.Key, LogDir) {
			logFiles++
		} else {
			dataFiles++
		}
	}
	return logFiles, dataFiles
}

// coarseDays are the simulated days run at a coarser step: days first to last (1-based,
// inclusive; none when first is 0) make factor times fewer batches, each taking factor
// minutes of the simulated clock. Everything else is as on the other days, counted in
// batches: a facts commit every 10th batch, maintenance every 60th, a checkpoint every 10
// commits. The tables do in one coarse day what they do in 24h/factor at the full step.
type coarseDays struct{ first, last, factor int }

func (c coarseDays) has(day int) bool { return c.first > 0 && day >= c.first && day <= c.last }

// coarseFromEnv reads MSSQLCDC_BENCH_COARSE_DAYS ("6-18": those days at the coarse step;
// unset: none) and MSSQLCDC_BENCH_COARSE_FACTOR (default 60).
func coarseFromEnv(b *testing.B, days int) coarseDays {
	v := os.Getenv("MSSQLCDC_BENCH_COARSE_DAYS")
	if v == "" {
		return coarseDays{}
	}
	c := coarseDays{factor: envInt(b, "MSSQLCDC_BENCH_COARSE_FACTOR", 60)}
	if _, err := fmt.Sscanf(v, "%d-%d", &c.first, &c.last); err != nil || c.first < 2 || c.last < c.first || c.last >= days {
		b.Fatalf("MSSQLCDC_BENCH_COARSE_DAYS=%q: want first-last, 1 < first <= last < %d", v, days)
	}
	return c
}
