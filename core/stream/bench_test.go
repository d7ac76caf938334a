package stream

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// Throughput benchmarks of one stream batch of the workload's orders table (int,
// nvarchar, decimal, varchar, datetime2) into committed bronze on local disk. The metric
// (docs/performance.md):
//
//   - MB is the Arrow size of the change rows as the source returns them (the change
//     schema: _start_lsn, _seqval, _operation, _command_id, _commit_ts and the captured
//     columns): the sum of the lengths of the records' buffers (validity bitmaps, offsets,
//     values), what the facts row records as read_mb. The bronze columns the stream adds
//     (_capture_instance, _batch_id, _snapshot, _chunk) are not counted.
//   - MB/s divides by wall-clock time; MB/cpu-s by the process's user+system CPU time
//     (getrusage, every goroutine and the GC included) over the same interval: the rate
//     per core, which other processes on a shared machine do not distort.
//
// Four variants separate the source's cost from the stream's own:
//
//   - src=cdcsim: end to end, cdcsim reading its stored rows into Arrow, then the stream
//     (assemble, encode, write, commit, facts, checkpoint). The batch is read as
//     numPartitions (4) ranges by as many writers.
//   - src=memory: the same, with each range's change records read from cdcsim once
//     before the timer and replayed from memory: the stream's own cost. The simulator
//     stays in the heap (it answers the metadata calls).
//   - src=replay-small-heap: the same records replayed as one range over a one-row
//     simulator, the full one dropped: the stream's own cost with a live heap as small as
//     a Lambda's. The simulator keeps every row as Go values, so each GC cycle in the
//     other variants marks hundreds of MB of pointers; gc/op shows how many ran.
//   - src=cdcsim-read: cdcsim's reads alone, drained and dropped.
//
// CPU-seconds add: 1/e2e ≈ 1/memory + 1/read (in cpu-s per MB), give or take GC cycles.
//
//	go test ./core/stream -run '^$' -bench StreamBatch -benchtime 1x
func BenchmarkStreamBatch(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			db := ordersDB(b, n, 10_000)
			b.Run("src=cdcsim", func(b *testing.B) {
				benchStream(b, db)
			})
			b.Run("src=memory", func(b *testing.B) {
				rs := &replaySource{Source: db}
				streamOnce(b, rs, 0) // reads cdcsim once, into the replay cache
				benchStream(b, rs)
			})
			b.Run("src=cdcsim-read", func(b *testing.B) {
				var rows, bytes int64
				m := benchmetrics.Start()
				for i := 0; i < b.N; i++ {
					r, y := drainChanges(b, db)
					rows, bytes = rows+r, bytes+y
				}
				m.Report(b, rows, bytes)
			})
			src := smallHeapReplay(b, db)
			db = nil // the last use: the simulator's rows are garbage from here
			b.Run("src=replay-small-heap", func(b *testing.B) {
				benchStream(b, src)
			})
		})
	}
}

func benchStream(b *testing.B, src source.Source) {
	var rows, bytes int64
	var m benchmetrics.Meter
	for i := 0; i < b.N; i++ {
		lake := testlake.New(b, testlake.Local) // made before the meter starts
		if i == 0 {
			m = benchmetrics.Start()
		}
		res, rep, _, _ := streamIn(b, lake, src, 0)
		rows, bytes = rows+res.Rows, bytes+rep.Bytes
	}
	m.Report(b, rows, bytes)
}

// BenchmarkStreamHeap streams one batch of n generated change rows (synthSource: the
// orders columns, nothing stored) and reports, besides the throughput, peak-heap-MB: the
// most the live heap (runtime/metrics /gc/heap/live:bytes, at each GC, GOGC=20) grew above
// its level before the batch. It should not grow with n: one range is read by one writer
// holding one row group (RowGroupBytes of Arrow data) plus its encoders' state. The
// generator's cost (fmt.Sprintf per row) is in the CPU figures.
//
//	go test ./core/stream -run '^$' -bench StreamHeap -benchtime 1x
func BenchmarkStreamHeap(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 3_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			src := &synthSource{Source: ordersDB(b, 1, 1), n: n}
			var rows, bytes int64
			var peak uint64
			m := benchmetrics.Start()
			for i := 0; i < b.N; i++ {
				res, rep, _, p := streamOnce(b, src, 20)
				rows, bytes, peak = rows+res.Rows, bytes+rep.Bytes, max(peak, p)
			}
			m.Report(b, rows, bytes)
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}

func ordersDB(b *testing.B, n, txn int) *cdcsim.DB {
	db := cdcsim.New(cdcsim.Config{Seed: 1})
	g := workload.New(db, workload.Config{Seed: 1})
	if err := g.Create(workload.Orders()); err != nil {
		b.Fatal(err)
	}
	if err := g.Load("orders", n, txn); err != nil {
		b.Fatal(err)
	}
	return db
}

// streamOnce streams src into fresh tables in one batch; with gogc > 0 it samples the live
// heap under that GOGC and returns its peak growth.
func streamOnce(b *testing.B, src source.Source, gogc int) (Result, BatchReport, time.Duration, uint64) {
	return streamIn(b, testlake.New(b, testlake.Local), src, gogc)
}

// rowGroupMiB overrides the writers' row group (MiB; 0: ingest.DefaultRowGroupBytes), to
// measure the default:
//
//	go test ./core/stream -run '^$' -bench StreamHeap -benchtime 1x -rowgroup 16
var rowGroupMiB = flag.Int64("rowgroup", 0, "writer row group in MiB (0: the default)")

func streamIn(b *testing.B, lake *testlake.Lake, src source.Source, gogc int) (Result, BatchReport, time.Duration, uint64) {
	spec := &config.Spec{AppID: "bench", Source: config.Source{DSN: "sqlserver://b@h", CaptureInstance: "dbo_orders"}}
	lake.Use(spec)
	spec.Defaults()
	deps := Deps{Source: src, Bronze: lake.Table(spec.Bronze), Facts: lake.Table(spec.FactsTable),
		Checkpoint: checkpoint.New(lake.Store(spec.Checkpoint), "bench")}

	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if gogc > 0 {
		runtime.GC()
		base := liveHeap()
		old := debug.SetGCPercent(gogc)
		defer debug.SetGCPercent(old)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				if l := liveHeap(); l > base && l-base > peak.Load() {
					peak.Store(l - base)
				}
			}
		}()
	}
	var rep BatchReport
	t0 := time.Now()
	res, err := Run(context.Background(), spec, deps, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Writer: parquetio.WriterOptions{RowGroupBytes: *rowGroupMiB << 20}, OnBatch: func(r BatchReport) { rep = r }})
	d := time.Since(t0)
	close(stop)
	wg.Wait()
	if err != nil || res.Batches != 1 || res.Rows == 0 {
		b.Fatalf("run: %+v %v", res, err)
	}
	return res, rep, d, peak.Load()
}

// liveHeap is the live heap as of the last GC.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// drainChanges reads every change row of dbo_orders from db, as the stream's one range
// would, and drops them; it returns rows and Arrow bytes.
func drainChanges(b *testing.B, db *cdcsim.DB) (rows, bytes int64) {
	ctx := context.Background()
	hi, err := db.MaxLSN(ctx)
	if err != nil {
		b.Fatal(err)
	}
	lo, err := db.MinLSN(ctx, "dbo_orders")
	if err != nil {
		b.Fatal(err)
	}
	cols, err := db.CapturedColumns(ctx, "dbo_orders")
	if err != nil {
		b.Fatal(err)
	}
	r, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lo, To: hi, Columns: cols})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, bytes
		}
		if err != nil {
			b.Fatal(err)
		}
		rows += rec.NumRows()
		bytes += benchmetrics.ArrowBytes(rec)
		rec.Release()
	}
}

// replaySource is a Source whose change reads return records held in memory: the first
// read of a range reads it from the embedded Source and keeps its records; later reads of
// the same range replay them. It measures the stream without the source's cost.
type replaySource struct {
	source.Source
	cache benchmetrics.ReplayCache
}

func (s *replaySource) ReadChanges(ctx context.Context, r source.ChangeRead) (source.Rows, error) {
	key := fmt.Sprintf("%s|%s|%s|%d|%d", r.CaptureInstance, r.From, r.To, r.BatchRows, r.BatchBytes)
	return s.cache.Rows(ctx, key, func() (source.Rows, error) { return s.Source.ReadChanges(ctx, r) })
}

// smallHeapReplay reads every change row of db (as one range) and returns a Source over a
// one-row simulator whose one-range change read replays them. Their LSNs are the big
// database's: the batch's facts show them, nothing else reads them.
func smallHeapReplay(b *testing.B, db *cdcsim.DB) source.Source {
	ctx := context.Background()
	hi, _ := db.MaxLSN(ctx)
	lo, _ := db.MinLSN(ctx, "dbo_orders")
	cols, _ := db.CapturedColumns(ctx, "dbo_orders")
	r, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lo, To: hi, Columns: cols})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	recs, err := benchmetrics.Collect(ctx, r)
	if err != nil {
		b.Fatal(err)
	}
	return &oneRangeReplay{Source: ordersDB(b, 1, 1), recs: recs}
}

// oneRangeReplay plans every batch as one range and replays recs for it.
type oneRangeReplay struct {
	source.Source
	recs []arrow.RecordBatch
}

func (s *oneRangeReplay) SplitChanges(ctx context.Context, ci string, from, to lsn.LSN, n int) ([]source.Tile, error) {
	var rows int64
	for _, r := range s.recs {
		rows += r.NumRows()
	}
	return []source.Tile{{Last: to, Next: to.Next(), Rows: rows}}, nil
}

func (s *oneRangeReplay) ReadChanges(ctx context.Context, r source.ChangeRead) (source.Rows, error) {
	if len(s.recs) == 0 {
		return nil, fmt.Errorf("nothing to replay")
	}
	return benchmetrics.Replay(s.recs[0].Schema(), s.recs), nil
}
