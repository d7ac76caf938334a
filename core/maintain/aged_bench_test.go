package maintain_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mssqlcdc/mssqlcdc/core/maintain"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// BenchmarkMaintainAged measures the scheduled maintenance (Run with All: compaction, a
// checkpoint, log clean-up, VACUUM, temporary files) of a table MSSQLCDC_BENCH_DAYS old
// (default 30) against one created that day, side by side on the same day. Both are facts
// tables on the S3 emulator (internal/emulators.StartS3Clock, in process, on a simulated
// clock that every retention and object time reads), each in its own bucket: a 10-row
// facts file committed every 10 minutes by a Table that keeps its snapshot (a checkpoint
// every 10 commits), so 144 commits a day. While the old table ages, maintenance runs
// every MSSQLCDC_BENCH_AGING_HOURS hours (default 6, to make the run shorter; it does what
// the hourly runs do, in fewer steps); on the last day both tables run it hourly, and each
// of those 24 runs is measured: the HTTP requests of the table's S3 client by kind (a LIST
// is one request per page of up to 1000 keys) and the process CPU of the run, which
// includes the in-process emulator's side of every request, and the bytes the process
// allocated during the run (likewise). Reported per run: requests, LIST pages, CPU
// milliseconds and KB allocated, for the young and the old table, and the old table's
// objects at the end.
//
//	go test ./core/maintain -run '^$' -bench MaintainAged -benchtime 1x -v
func BenchmarkMaintainAged(b *testing.B) {
	days := benchEnvInt(b, "MSSQLCDC_BENCH_DAYS", 30)
	agingHours := benchEnvInt(b, "MSSQLCDC_BENCH_AGING_HOURS", 6)
	for range b.N {
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		c := &benchClock{t: start}
		srv := emulators.StartS3Clock(b, c.now)
		tmp := b.TempDir()
		old := newAgedTable(b, srv, c, tmp)
		steps := 6 // commits an hour
		for h := range (days - 1) * 24 {
			for range steps {
				c.advance(10 * time.Minute)
				old.commit(b)
			}
			if (h+1)%agingHours == 0 {
				old.maintain(b, nil)
			}
		}
		young := newAgedTable(b, srv, c, tmp)
		var ys, os agedStats
		for range 24 {
			for range steps {
				c.advance(10 * time.Minute)
				old.commit(b)
				young.commit(b)
			}
			old.maintain(b, &os)
			young.maintain(b, &ys)
		}
		logFiles, dataFiles := old.objects(b)
		b.Logf("old table (day %d): %d log files, %d data files", days, logFiles, dataFiles)
		for _, m := range []struct {
			name string
			s    agedStats
		}{{"day1-", ys}, {fmt.Sprintf("day%d-", days), os}} {
			b.Logf("%s per run: %.1f requests (%s), %.1f CPU ms, %.0f KB allocated", strings.TrimSuffix(m.name, "-"), m.s.per(m.s.requests), m.s.kinds(), m.s.per(float64(m.s.cpu.Microseconds())/1000), m.s.per(float64(m.s.alloc)/1024))
			b.ReportMetric(m.s.per(m.s.requests), m.name+"req/run")
			b.ReportMetric(m.s.per(float64(m.s.byKind["LIST"])), m.name+"list/run")
			b.ReportMetric(m.s.per(float64(m.s.cpu.Microseconds())/1000), m.name+"cpu-ms/run")
			b.ReportMetric(m.s.per(float64(m.s.alloc)/1024), m.name+"alloc-KB/run")
		}
	}
}

func benchEnvInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// benchClock is the simulated time of the tables and the emulator; safe for the
// emulator's goroutines.
type benchClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *benchClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *benchClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// countingHTTP counts the requests of one S3 client by kind: LIST (a ListObjectsV2 page),
// GET, HEAD, PUT, DELETE, POST.
type countingHTTP struct {
	next s3.HTTPClient
	mu   sync.Mutex
	n    map[string]int
}

func (c *countingHTTP) Do(r *http.Request) (*http.Response, error) {
	kind := r.Method
	if r.Method == http.MethodGet && r.URL.Query().Has("list-type") {
		kind = "LIST"
	}
	c.mu.Lock()
	c.n[kind]++
	c.mu.Unlock()
	return c.next.Do(r)
}

func (c *countingHTTP) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// agedTable is one facts table in a bucket of its own, with the stream's kept Table.
type agedTable struct {
	store  *s3store.Store
	http   *countingHTTP
	now    func() time.Time
	tmp    string
	stream *deltalog.Table
	next   int64
}

var agedSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

func newAgedTable(b *testing.B, srv *emulators.S3Server, c *benchClock, tmp string) *agedTable {
	hc := &countingHTTP{n: map[string]int{}}
	client := s3.New(srv.Client().Options(), func(o *s3.Options) {
		hc.next = o.HTTPClient
		o.HTTPClient = hc
	})
	t := &agedTable{store: s3store.New(client, srv.Bucket(b), "facts/"), http: hc, now: c.now, tmp: tmp}
	t.stream = t.open()
	return t
}

func (t *agedTable) open() *deltalog.Table {
	return deltalog.Open(t.store, condput.New(t.store), deltalog.Options{Now: t.now, RetryBaseDelay: time.Microsecond})
}

// commit writes one facts file of 10 rows and commits it as a blind append.
func (t *agedTable) commit(b *testing.B) {
	ctx := context.Background()
	t.next++
	bld := array.NewInt64Builder(memory.DefaultAllocator)
	for j := range 10 {
		bld.Append(10*t.next + int64(j))
	}
	rec := array.NewRecordBatch(agedSchema, []arrow.Array{bld.NewArray()}, 10)
	defer rec.Release()
	w := parquetio.NewWriter(t.store, agedSchema, parquetio.WriterOptions{TempDir: t.tmp})
	if err := w.Write(ctx, rec); err != nil {
		b.Fatal(err)
	}
	files, err := w.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	snap, err := t.stream.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tx := t.stream.Begin(snap)
	if snap.Version() < 0 {
		if err := tx.SetSchema(agedSchema); err != nil {
			b.Fatal(err)
		}
	}
	tx.Add(deltalog.AddFromParquet(files[0]))
	tx.SetAppTxn("stream", t.next)
	if _, err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}

// agedStats adds up measured maintenance runs.
type agedStats struct {
	runs     int
	requests float64
	byKind   map[string]int
	cpu      time.Duration
	alloc    uint64 // bytes allocated by the process (the in-process emulator's side included)
}

func (s agedStats) per(v float64) float64 { return v / float64(max(s.runs, 1)) }

func (s agedStats) kinds() string {
	var ks []string
	for k := range s.byKind {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, s.per(float64(s.byKind[k]))))
	}
	return strings.Join(parts, ", ")
}

// maintain runs the scheduled function's operations from a Table of its own (another
// process), adding the run's requests and CPU to s when s is not nil.
func (t *agedTable) maintain(b *testing.B, s *agedStats) {
	o := maintain.All()
	o.Compaction.Writer.TempDir = t.tmp
	before := t.http.snapshot()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := benchmetrics.CPUTime()
	if _, err := maintain.Run(context.Background(), t.open(), o); err != nil {
		b.Fatal(err)
	}
	cpu := benchmetrics.CPUTime() - cpu0
	runtime.ReadMemStats(&m1)
	if s == nil {
		return
	}
	if s.byKind == nil {
		s.byKind = map[string]int{}
	}
	s.runs++
	s.cpu += cpu
	s.alloc += m1.TotalAlloc - m0.TotalAlloc
	for k, v := range t.http.snapshot() {
		s.byKind[k] += v - before[k]
		s.requests += float64(v - before[k])
	}
}

// objects counts the table's log and data files (not counted as requests of a run).
func (t *agedTable) objects(b *testing.B) (logFiles, dataFiles int) {
	for oi, err := range t.store.List(context.Background(), "", "") {
		if err != nil {
			b.Fatal(err)
		}
		if strings.HasPrefix(oi.Key, deltalog.LogDir) {
			logFiles++
		} else {
			dataFiles++
		}
	}
	return logFiles, dataFiles
}
