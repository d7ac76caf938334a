package deltalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
)

// BenchmarkThirtyDays runs one table's Delta side of a stream for 30 simulated days at one
// batch a minute, with the scheduled maintenance of docs/operations.md § Maintenance every
// hour, in compressed time (a clock the tables, the store and every retention use):
//
//   - each batch appends one small file to bronze (5 rows) through a Table that keeps its
//     snapshot across batches, as a warm stream Lambda does, with txn(stream, n), and
//     every 10th batch one file of 10 rows to the table's own facts table (decision 0013);
//     a checkpoint every 10 commits (the default interval);
//   - every 60 batches the maintain function's operations run on both tables from their
//     own Tables (another process): Compact (128 MiB target), a checkpoint of the newest
//     version, log clean-up (30 days) and VACUUM (7 days), orphaned temporary files.
//
// It reports, for the first and the last day, each the mean over that day (the same
// workload, maintenance included from day 1): the store requests of a bronze batch (the
// log store commits through the same store, with conditional puts), its CPU and
// allocation (the CPU includes the garbage collector, whose work grows with the in-memory
// store's heap: several GB of log by day 30, which a Lambda does not hold), and the cold
// open of bronze once an hour, before maintenance runs (a new Table: Snapshot and the file
// list, as a Lambda cold start does; the fastest of three, wall time, and the requests and
// allocation of one); bronze's live files and tombstones at the day's last open. For the
// facts table's side alone (issue 13: is it as cheap on day 30 as on day 1?) it reports
// per facts commit its store requests (the facts file and the commit, as the stream writes
// them), its CPU (process CPU around the facts write only, as for a batch; the garbage
// collector's included) and allocation, the wall time of its Commit call (on the in-memory
// store: the log's own work, not S3's latency) and the commits the writer lost to another
// writer (lost PutIfAbsent races on a commit file, each a retry); the facts requests and
// CPU also per bronze batch (a tenth of a facts commit each). The per-day table is logged
// with -v. Each table is independent of the others (a facts table per source table), so
// one stands for each of a hundred (BenchmarkFactsConcurrent; BenchmarkFactsFleet
// runs a hundred facts tables on the S3 emulator); the CDC read of a batch
// does not depend on the table's history and is left out. The store is in memory
// (orderedStore), counted. It takes 7–11 minutes on 2 loaded cores, past go test's
// default 10-minute timeout.
//
//	go test ./deltalog -run '^$' -bench ThirtyDays -benchtime 1x -timeout 30m -v
//
// MSSQLCDC_BENCH_DAYS and MSSQLCDC_BENCH_BATCHES_PER_DAY shorten it (a quick look);
// MSSQLCDC_BENCH_TOMBSTONE_RETENTION sets both tables' delta.deletedFileRetentionDuration
// ("interval 1 day"), which bounds the tombstones every checkpoint carries.
func BenchmarkThirtyDays(b *testing.B) {
	days := envInt(b, "MSSQLCDC_BENCH_DAYS", 30)
	perDay := envInt(b, "MSSQLCDC_BENCH_BATCHES_PER_DAY", 1440)
	for range b.N {
		stats := runDays(b, days, perDay)
		first, last := stats[0], stats[len(stats)-1]
		for _, m := range []struct {
			name string
			s    dayStats
		}{{"day1-", first}, {fmt.Sprintf("day%d-", days), last}} {
			b.ReportMetric(m.s.reqPerBatch(), m.name+"req/batch")
			f := m.s.facts
			b.ReportMetric(f.perCommit(float64(f.requests)), m.name+"facts-req/commit")
			b.ReportMetric(float64(f.requests)/float64(m.s.batches), m.name+"facts-req/batch")
			b.ReportMetric(f.perCommit(float64(f.cpu.Microseconds())), m.name+"facts-cpu-us/commit")
			b.ReportMetric(float64(f.cpu.Microseconds())/float64(m.s.batches), m.name+"facts-cpu-us/batch")
			b.ReportMetric(f.perCommit(float64(f.alloc)/1024), m.name+"facts-alloc-KB/commit")
			b.ReportMetric(f.perCommit(float64(f.commitWall.Microseconds())), m.name+"facts-commit-us")
			b.ReportMetric(f.perCommit(float64(f.lost)), m.name+"facts-retries/commit")
			b.ReportMetric(m.s.cpuPerBatch(), m.name+"cpu-us/batch")
			b.ReportMetric(m.s.allocPerBatch(), m.name+"alloc-KB/batch")
			b.ReportMetric(m.s.openReqs(), m.name+"open-req")
			b.ReportMetric(m.s.openMs(), m.name+"open-ms")
			b.ReportMetric(m.s.openKB(), m.name+"open-alloc-KB")
			b.ReportMetric(float64(m.s.liveFiles), m.name+"live-files")
			b.ReportMetric(float64(m.s.tombstones), m.name+"tombstones")
		}
	}
}

// BenchmarkFactsConcurrent commits facts from several source tables' streams at once, as
// a hundred tables' stream Lambdas do: MSSQLCDC_BENCH_FACTS_WRITERS writers (default 8),
// each committing 100 facts files (10 rows) back to back from a warm Table of its own,
// all started together. With "own-tables" each writes its own facts table (decision
// 0013: one per source table, each on its own log), with "shared-table" all write one
// facts table (txn ids per writer). It reports per commit the store requests, the
// commits lost to another writer (retries, lostRaceStore) and the wall time of the
// Commit call (in-memory store), and the commits that failed (CommitAttemptsError after
// DefaultMaxCommitAttempts lost races). Back-to-back commits are the worst case for the
// shared table: a hundred tables at one batch a minute make ten facts commits a minute.
//
//	go test ./deltalog -run '^$' -bench FactsConcurrent -benchtime 1x -v
func BenchmarkFactsConcurrent(b *testing.B) {
	writers := envInt(b, "MSSQLCDC_BENCH_FACTS_WRITERS", 8)
	const commits = 100
	for _, shared := range []bool{false, true} {
		name := "own-tables"
		if shared {
			name = "shared-table"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				c := &clock{t: longRunStart}
				tmp := b.TempDir()
				tables := make([]*longRunTable, writers)
				streams := make([]*Table, writers)
				for w := range writers {
					if !shared || w == 0 {
						tables[w] = newLongRunTable(b, c, 10, nil)
					} else {
						tables[w] = tables[0]
					}
					streams[w] = tables[w].open()
					snapshotB(b, streams[w]) // warm: the stream Lambda has its snapshot
				}
				var counters []*longRunTable
				for w, t := range tables {
					if w == 0 || !shared {
						counters = append(counters, t)
					}
				}
				req0, lost0 := 0, int64(0)
				for _, t := range counters {
					req0 += t.counter.Total()
					lost0 += t.lost.Load()
				}
				var wall atomic.Int64
				var failed atomic.Int64
				var wg sync.WaitGroup
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						app := fmt.Sprintf("stream-%d", w)
						for n := range int64(commits) {
							el, err := writeBatch(tables[w].counted, streams[w], tmp, app, n+1, 10)
							wall.Add(int64(el))
							var attempts *CommitAttemptsError
							if errors.As(err, &attempts) {
								failed.Add(1)
							} else if err != nil {
								panic(err) // not the benchmark's goroutine: b.Fatal may not be called
							}
						}
					}()
				}
				wg.Wait()
				req, lost := -req0, -lost0
				for _, t := range counters {
					req += t.counter.Total()
					lost += t.lost.Load()
				}
				total := float64(writers * commits)
				b.ReportMetric(float64(req)/total, "req/commit")
				b.ReportMetric(float64(lost)/total, "retries/commit")
				b.ReportMetric(float64(time.Duration(wall.Load()).Microseconds())/total, "commit-us")
				b.ReportMetric(float64(failed.Load()), "failed-commits")
			}
		})
	}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// dayStats is one simulated day of the bronze table.
type dayStats struct {
	batches, requests int
	cpu               time.Duration
	alloc             uint64 // bytes allocated by the batches
	// The cold opens of the day, one an hour before maintenance runs: their sums and
	// count; the files, tombstones and objects at the last one.
	opens, openReq        int
	open                  time.Duration
	openAlloc             uint64 // bytes allocated by the opens (one of each three)
	liveFiles, tombstones int
	logFiles, dataFiles   int
	facts                 factsStats
}

// factsStats is the facts table's side of a day: its commits and, over them, the store
// requests, process CPU and allocation of writing the facts file and committing it, the wall time of
// the Commit calls alone, and the commits lost to another writer (retries).
type factsStats struct {
	commits, requests int
	cpu, commitWall   time.Duration
	alloc             uint64 // bytes
	lost              int64
}

// perCommit is v over the day's facts commits.
func (f factsStats) perCommit(v float64) float64 { return v / float64(max(f.commits, 1)) }

// openMs and openReqs are the mean cold open of the day.
func (d dayStats) openMs() float64 {
	return float64(d.open.Microseconds()) / 1000 / float64(max(d.opens, 1))
}
func (d dayStats) openReqs() float64 { return float64(d.openReq) / float64(max(d.opens, 1)) }
func (d dayStats) openKB() float64 {
	return float64(d.openAlloc) / 1024 / float64(max(d.opens, 1))
}

func (d dayStats) reqPerBatch() float64   { return float64(d.requests) / float64(d.batches) }
func (d dayStats) allocPerBatch() float64 { return float64(d.alloc) / 1024 / float64(d.batches) }
func (d dayStats) cpuPerBatch() float64 {
	return float64(d.cpu.Microseconds()) / float64(d.batches)
}

// longRunStart is where the long runs' simulated clocks start.
var longRunStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// longRunTable is one Delta table of the run: its store (counted), the stream's Table.
type longRunTable struct {
	store   *memStore // the in-memory store under counted; nil on the S3 emulator
	counter *storagetest.Counter
	counted *storagetest.Counting
	lost    *atomic.Int64 // commit files lost to another writer (lostRaceStore)
	now     func() time.Time
	// logStore, when set, makes the log store each Table of the table commits through
	// (default: S3 conditional put on counted).
	logStore func(t *longRunTable) logstore.LogStore
	stream   *Table
	rows     int // rows per file
	next     int64
}

// lostRaceStore counts the commits its writers lost: a PutIfAbsent of a commit file
// (_delta_log/<version>.json) that another writer had created, after which Commit retries
// at a later version. Below the counted store, so it adds no request.
type lostRaceStore struct {
	storage.Store
	lost *atomic.Int64
}

func (s lostRaceStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	err := s.Store.PutIfAbsent(ctx, key, data)
	if errors.Is(err, storage.ErrExists) && strings.HasPrefix(key, LogDir) && strings.HasSuffix(key, ".json") {
		s.lost.Add(1)
	}
	return err
}

// newLongRunTable creates the table on an in-memory store (orderedStore) on c's time.
func newLongRunTable(b *testing.B, c *clock, rows int, props map[string]string) *longRunTable {
	s := newMemStore()
	s.Now = c.now
	t, err := newLongRunTableOn(&orderedStore{memStore: s}, c.now, rows, props)
	if err != nil {
		b.Fatal(err)
	}
	t.store = s
	return t
}

// newLongRunTableOn creates an empty table of scanSchema with props on base, counted, on
// the clock now; its files will have rows rows. Safe to call from several goroutines on
// stores of their own.
func newLongRunTableOn(base storage.Store, now func() time.Time, rows int, props map[string]string) (*longRunTable, error) {
	return newLongRunTableWith(base, now, rows, props, nil)
}

// newLongRunTableWith is newLongRunTableOn committing through the log stores logStore
// makes (nil: S3 conditional put).
func newLongRunTableWith(base storage.Store, now func() time.Time, rows int, props map[string]string, logStore func(t *longRunTable) logstore.LogStore) (*longRunTable, error) {
	counter := &storagetest.Counter{}
	lost := &atomic.Int64{}
	counted := storagetest.NewCounting(lostRaceStore{Store: base, lost: lost}, counter)
	t := &longRunTable{counter: counter, counted: counted, lost: lost, now: now, rows: rows, logStore: logStore}
	t.stream = t.open()
	snap, err := t.stream.Snapshot(context.Background())
	if err != nil {
		return nil, err
	}
	tx := t.stream.Begin(snap)
	if err := tx.SetSchema(scanSchema); err != nil {
		return nil, err
	}
	if props != nil {
		tx.SetProperties(props)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		return nil, err
	}
	return t, nil
}

// open is a new process's Table on the counted store, committing with S3 conditional puts
// (the log store lists the log from the newest version it knows), or through the log
// store t.logStore makes.
func (t *longRunTable) open() *Table {
	var ls logstore.LogStore = condput.New(t.counted)
	if t.logStore != nil {
		ls = t.logStore(t)
	}
	return Open(t.counted, ls, Options{Now: t.now, RetryBaseDelay: time.Microsecond})
}

func snapshotB(b *testing.B, tbl *Table) *Snapshot {
	s, err := tbl.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// appendBatch commits one file of t.rows rows as the stream does: a blind append with
// txn(stream, n) from the Table's kept snapshot. It returns the Commit call's wall time.
func (t *longRunTable) appendBatch(b *testing.B, tmp string) time.Duration {
	t.next++
	el, err := writeBatch(t.counted, t.stream, tmp, "stream", t.next, t.rows)
	if err != nil {
		b.Fatal(err)
	}
	return el
}

// writeBatch writes one Parquet file of rows rows to store and commits it through tbl
// from its current snapshot as a blind append with txn(app, n); it returns the wall time
// of the Commit call alone. Safe to call from several goroutines with their own Tables.
func writeBatch(store storage.Store, tbl *Table, tmp, app string, n int64, rows int) (time.Duration, error) {
	ctx := context.Background()
	bld := array.NewRecordBuilder(memory.DefaultAllocator, scanSchema)
	defer bld.Release()
	for j := range rows {
		bld.Field(0).(*array.StringBuilder).Append(app)
		bld.Field(1).(*array.Int32Builder).Append(2)
		bld.Field(2).(*array.Int64Builder).Append(n*int64(rows) + int64(j))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	w := parquetio.NewWriter(store, scanSchema, parquetio.WriterOptions{TempDir: tmp})
	if err := w.Write(ctx, rec); err != nil {
		return 0, err
	}
	files, err := w.Close(ctx)
	if err != nil || len(files) != 1 {
		return 0, fmt.Errorf("close: %v, %d files", err, len(files))
	}
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	tx := tbl.Begin(snap)
	tx.Add(AddFromParquet(files[0]))
	tx.SetAppTxn(app, n)
	t0 := time.Now()
	res, err := tx.Commit(ctx)
	el := time.Since(t0)
	if err != nil || res.Skipped {
		return el, fmt.Errorf("%s batch %d: %+v %w", app, n, res, err)
	}
	return el, nil
}

// maintain runs the scheduled function's operations (core/maintain.Run with All) from a
// Table of its own.
func (t *longRunTable) maintain(b *testing.B, tmp string) {
	if err := t.maintainErr(tmp); err != nil {
		b.Fatal(err)
	}
}

// maintainErr is maintain for any goroutine: it returns the first operation's error.
func (t *longRunTable) maintainErr(tmp string) error {
	ctx := context.Background()
	tbl := t.open()
	if _, err := tbl.Compact(ctx, CompactOptions{Writer: parquetio.WriterOptions{TempDir: tmp}}); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if snap.CheckpointVersion() < snap.Version() {
		if err := WriteCheckpoint(ctx, snap); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	if _, err := tbl.CleanupLog(ctx, CleanupOptions{}); err != nil {
		return fmt.Errorf("cleanup-log: %w", err)
	}
	if _, err := tbl.Vacuum(ctx, VacuumOptions{}); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	if _, err := tbl.CleanupTempFiles(ctx, TempFileOptions{}); err != nil {
		return fmt.Errorf("temp files: %w", err)
	}
	return nil
}

// coldOpen opens the table as a new process does and lists its files, adding to d the
// fastest of three opens (wall time) and the requests of one.
func (t *longRunTable) coldOpen(b *testing.B, d *dayStats) {
	var snap *Snapshot
	var fastest time.Duration
	var requests int
	var ms runtime.MemStats
	for i := range 3 {
		before := t.counter.Total()
		runtime.ReadMemStats(&ms)
		alloc0 := ms.TotalAlloc
		t0 := time.Now()
		snap = snapshotB(b, t.open())
		d.liveFiles = len(snap.Files())
		if el := time.Since(t0); i == 0 || el < fastest {
			fastest = el
		}
		runtime.ReadMemStats(&ms)
		if i == 0 {
			d.openAlloc += ms.TotalAlloc - alloc0
		}
		requests = t.counter.Total() - before
	}
	d.open += fastest
	d.openReq += requests
	d.opens++
	d.tombstones = len(tombstonesOf(b, snap))
	d.logFiles, d.dataFiles = 0, 0
	for k := range t.store.objs {
		if len(k) > len(LogDir) && k[:len(LogDir)] == LogDir {
			d.logFiles++
		} else {
			d.dataFiles++
		}
	}
}

func runDays(b *testing.B, days, perDay int) []dayStats {
	c := &clock{t: longRunStart}
	tmp := b.TempDir()
	var props map[string]string
	if r := os.Getenv("MSSQLCDC_BENCH_TOMBSTONE_RETENTION"); r != "" {
		props = map[string]string{"delta.deletedFileRetentionDuration": r}
	}
	bronze := newLongRunTable(b, c, 5, props)
	factsT := newLongRunTable(b, c, 10, props)
	minute := 24 * time.Hour / time.Duration(perDay)
	hourly := max(1, perDay/24)
	var stats []dayStats
	var ms runtime.MemStats
	for day := range days {
		var d dayStats
		for i := range perDay {
			c.t = c.t.Add(minute)
			before := bronze.counter.Total()
			runtime.ReadMemStats(&ms)
			alloc0, cpu0 := ms.TotalAlloc, benchmetrics.CPUTime()
			bronze.appendBatch(b, tmp)
			d.cpu += benchmetrics.CPUTime() - cpu0
			runtime.ReadMemStats(&ms)
			d.alloc += ms.TotalAlloc - alloc0
			d.requests += bronze.counter.Total() - before
			d.batches++
			if bronze.next%10 == 0 {
				f := &d.facts
				runtime.ReadMemStats(&ms)
				alloc0 := ms.TotalAlloc
				before, lost0, cpu0 := factsT.counter.Total(), factsT.lost.Load(), benchmetrics.CPUTime()
				f.commitWall += factsT.appendBatch(b, tmp)
				f.cpu += benchmetrics.CPUTime() - cpu0
				runtime.ReadMemStats(&ms)
				f.alloc += ms.TotalAlloc - alloc0
				f.requests += factsT.counter.Total() - before
				f.lost += factsT.lost.Load() - lost0
				f.commits++
			}
			if (i+1)%hourly == 0 {
				// A cold open each hour, before maintenance runs: the most small files
				// the schedule lets pile up, at every point of the checkpoint cycle.
				bronze.coldOpen(b, &d)
				bronze.maintain(b, tmp)
				factsT.maintain(b, tmp)
			}
		}
		stats = append(stats, d)
		f := d.facts
		b.Logf("day %2d: %5.2f req/batch, %6.0f µs CPU/batch, %5.0f KB/batch; cold open %5.2f req, %6.2f ms, %5.0f KB; %4d live files, %6d tombstones; %6d log files, %6d data files; facts: %d commits, %5.2f req, %6.0f µs CPU, %5.0f KB, %5.0f µs commit wall, %4.2f retries per commit",
			day+1, d.reqPerBatch(), d.cpuPerBatch(), d.allocPerBatch(), d.openReqs(), d.openMs(), d.openKB(), d.liveFiles, d.tombstones, d.logFiles, d.dataFiles,
			f.commits, f.perCommit(float64(f.requests)), f.perCommit(float64(f.cpu.Microseconds())), f.perCommit(float64(f.alloc)/1024), f.perCommit(float64(f.commitWall.Microseconds())), f.perCommit(float64(f.lost)))
	}
	return stats
}

// orderedStore is memStore with its keys kept in order, so that List costs what S3's
// LIST with start-after costs (the keys from there on), not a walk of every object: the
// bench's CPU figures would otherwise grow with the log files the retention keeps. Writes
// add their key to the order, deletes take it out (in maintenance, which is not timed), so
// that a write's insertion moves only the live keys after it (the data files', which
// sort after _delta_log/ and which VACUUM bounds), not every key the run ever wrote.
type orderedStore struct {
	*memStore
	keys []string // sorted
}

func (o *orderedStore) Delete(ctx context.Context, key string) error {
	if err := o.memStore.Delete(ctx, key); err != nil {
		return err
	}
	o.memStore.mu.Lock()
	defer o.memStore.mu.Unlock()
	if i, found := slices.BinarySearch(o.keys, key); found {
		o.keys = slices.Delete(o.keys, i, i+1)
	}
	return nil
}

func (o *orderedStore) add(key string) {
	o.memStore.mu.Lock()
	defer o.memStore.mu.Unlock()
	if i, found := slices.BinarySearch(o.keys, key); !found {
		o.keys = slices.Insert(o.keys, i, key)
	}
}

func (o *orderedStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := o.memStore.Put(ctx, key, r, size); err != nil {
		return err
	}
	o.add(key)
	return nil
}

func (o *orderedStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := o.memStore.PutIfAbsent(ctx, key, data); err != nil {
		return err
	}
	o.add(key)
	return nil
}

func (o *orderedStore) Copy(ctx context.Context, src, dst string) error {
	if err := o.memStore.Copy(ctx, src, dst); err != nil {
		return err
	}
	o.add(dst)
	return nil
}

func (o *orderedStore) CopyIfAbsent(ctx context.Context, src, dst string) error {
	if err := o.memStore.CopyIfAbsent(ctx, src, dst); err != nil {
		return err
	}
	o.add(dst)
	return nil
}

func (o *orderedStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	return func(yield func(storage.ObjectInfo, error) bool) {
		m := o.memStore
		m.mu.Lock()
		from, _ := slices.BinarySearch(o.keys, max(prefix, startAfter))
		var infos []storage.ObjectInfo
		for _, k := range o.keys[from:] {
			if !strings.HasPrefix(k, prefix) {
				break // sorted: past the prefix
			}
			if obj, ok := m.objs[k]; ok && k > startAfter {
				infos = append(infos, storage.ObjectInfo{Key: k, Size: int64(len(obj.data)), ModTime: obj.mod})
			}
		}
		m.mu.Unlock()
		for _, oi := range infos {
			if !yield(oi, nil) {
				return
			}
		}
	}
}

// age runs t for days simulated days on c at one minute a step: a batch every 10th minute
// (appendBatch), the maintenance every hour (maintain), the last hour's too unless
// lastMaintain is false (a benchmark that runs the maintenance cold itself).
func (t *longRunTable) age(b *testing.B, c *clock, tmp string, days int, lastMaintain bool) {
	b.Helper()
	for m := 1; m <= days*1440; m++ {
		c.t = c.t.Add(time.Minute)
		if m%10 == 0 {
			t.appendBatch(b, tmp)
		}
		if m%60 == 0 && (lastMaintain || m < days*1440) {
			t.maintain(b, tmp)
		}
	}
}
