package deltalog

import (
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
// allocation of one);
// bronze's live files and tombstones at the day's last open. The per-day table is logged
// with -v. Each table is independent of the
// others (a facts table per source table), so one stands for each of a hundred; the CDC
// read of a batch does not depend on the table's history and is left out. The store is
// in memory (orderedStore), counted.
//
//	go test ./deltalog -run '^$' -bench ThirtyDays -benchtime 1x -v
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
}

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

// longRunTable is one Delta table of the run: its store (counted), the stream's Table.
type longRunTable struct {
	store   *memStore
	counter *storagetest.Counter
	counted *storagetest.Counting
	stream  *Table
	rows    int // rows per file
	next    int64
}

func newLongRunTable(b *testing.B, c *clock, rows int, props map[string]string) *longRunTable {
	s := newMemStore()
	s.Now = c.now
	counter := &storagetest.Counter{}
	counted := storagetest.NewCounting(&orderedStore{memStore: s}, counter)
	t := &longRunTable{store: s, counter: counter, counted: counted, rows: rows}
	t.stream = t.open(c)
	tx := t.stream.Begin(snapshotB(b, t.stream))
	if err := tx.SetSchema(scanSchema); err != nil {
		b.Fatal(err)
	}
	if props != nil {
		tx.SetProperties(props)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		b.Fatal(err)
	}
	return t
}

// open is a new process's Table on the counted store, committing with S3 conditional puts
// (the log store lists the log from the newest version it knows).
func (t *longRunTable) open(c *clock) *Table {
	return Open(t.counted, condput.New(t.counted), Options{Now: c.now, RetryBaseDelay: time.Microsecond})
}

func snapshotB(b *testing.B, tbl *Table) *Snapshot {
	s, err := tbl.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// appendBatch commits one file of t.rows rows as the stream does: a blind append with
// txn(stream, n) from the Table's kept snapshot.
func (t *longRunTable) appendBatch(b *testing.B, tmp string) {
	ctx := context.Background()
	bld := array.NewRecordBuilder(memory.DefaultAllocator, scanSchema)
	defer bld.Release()
	for j := range t.rows {
		bld.Field(0).(*array.StringBuilder).Append("stream")
		bld.Field(1).(*array.Int32Builder).Append(2)
		bld.Field(2).(*array.Int64Builder).Append(t.next*int64(t.rows) + int64(j))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	w := parquetio.NewWriter(t.counted, scanSchema, parquetio.WriterOptions{TempDir: tmp})
	if err := w.Write(ctx, rec); err != nil {
		b.Fatal(err)
	}
	files, err := w.Close(ctx)
	if err != nil || len(files) != 1 {
		b.Fatalf("close: %v, %d files", err, len(files))
	}
	tx := t.stream.Begin(snapshotB(b, t.stream))
	tx.Add(AddFromParquet(files[0]))
	t.next++
	tx.SetAppTxn("stream", t.next)
	if res, err := tx.Commit(ctx); err != nil || res.Skipped {
		b.Fatalf("batch %d: %+v %v", t.next, res, err)
	}
}

// maintain runs the scheduled function's operations (core/maintain.Run with All) from a
// Table of its own.
func (t *longRunTable) maintain(b *testing.B, c *clock, tmp string) {
	ctx := context.Background()
	tbl := t.open(c)
	if _, err := tbl.Compact(ctx, CompactOptions{Writer: parquetio.WriterOptions{TempDir: tmp}}); err != nil {
		b.Fatalf("compact: %v", err)
	}
	snap := snapshotB(b, tbl)
	if snap.CheckpointVersion() < snap.Version() {
		if err := WriteCheckpoint(ctx, snap); err != nil {
			b.Fatalf("checkpoint: %v", err)
		}
	}
	if _, err := tbl.CleanupLog(ctx, CleanupOptions{}); err != nil {
		b.Fatalf("cleanup-log: %v", err)
	}
	if _, err := tbl.Vacuum(ctx, VacuumOptions{}); err != nil {
		b.Fatalf("vacuum: %v", err)
	}
	if _, err := tbl.CleanupTempFiles(ctx, TempFileOptions{}); err != nil {
		b.Fatalf("temp files: %v", err)
	}
}

// coldOpen opens the table as a new process does and lists its files, adding to d the
// fastest of three opens (wall time) and the requests of one.
func (t *longRunTable) coldOpen(b *testing.B, c *clock, d *dayStats) {
	var snap *Snapshot
	var fastest time.Duration
	var requests int
	var ms runtime.MemStats
	for i := range 3 {
		before := t.counter.Total()
		runtime.ReadMemStats(&ms)
		alloc0 := ms.TotalAlloc
		t0 := time.Now()
		snap = snapshotB(b, t.open(c))
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
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
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
				factsT.appendBatch(b, tmp)
			}
			if (i+1)%hourly == 0 {
				// A cold open each hour, before maintenance runs: the most small files
				// the schedule lets pile up, at every point of the checkpoint cycle.
				bronze.coldOpen(b, c, &d)
				bronze.maintain(b, c, tmp)
				factsT.maintain(b, c, tmp)
			}
		}
		stats = append(stats, d)
		b.Logf("day %2d: %5.2f req/batch, %6.0f µs CPU/batch, %5.0f KB/batch; cold open %5.2f req, %6.2f ms, %5.0f KB; %4d live files, %6d tombstones; %6d log files, %6d data files",
			day+1, d.reqPerBatch(), d.cpuPerBatch(), d.allocPerBatch(), d.openReqs(), d.openMs(), d.openKB(), d.liveFiles, d.tombstones, d.logFiles, d.dataFiles)
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
