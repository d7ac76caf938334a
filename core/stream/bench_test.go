package stream

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// BenchmarkStreamBatch streams one batch of n change rows of the workload's orders table
// (int, nvarchar, decimal, varchar, datetime2) from cdcsim to committed bronze on local
// disk: rows/s and MB/s of change data (the Arrow size of the rows read), wall clock.
// The simulator keeps every row in the Go heap, so its GC cost is part of the numbers.
// MB/cpu-s divides by the process's CPU time (all cores) instead of wall time: the
// per-core rate, including the simulator's reading.
//
//	go test ./core/stream -run '^$' -bench StreamBatch -benchtime 1x
func BenchmarkStreamBatch(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			db := ordersDB(b, n, 10_000)
			var rows, bytes int64
			var elapsed time.Duration
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				res, rep, d, _ := streamOnce(b, db, 0)
				rows, bytes, elapsed = rows+res.Rows, bytes+rep.Bytes, elapsed+d
			}
			report(b, rows, bytes, elapsed, -1)
			b.ReportMetric(float64(bytes)/1e6/(cpuTime()-cpu0).Seconds(), "MB/cpu-s")
		})
	}
}

// BenchmarkStreamHeap streams one batch of n generated change rows (synthSource: the
// orders columns, nothing stored) and reports, besides the throughput, peak-heap-MB: the
// most the live heap (runtime/metrics /gc/heap/live:bytes, at each GC, GOGC=20) grew above
// its level before the batch. It should not grow with n: one range is read by one writer
// holding one row group (RowGroupBytes of Arrow data) plus its encoders' state.
//
//	go test ./core/stream -run '^$' -bench StreamHeap -benchtime 1x
func BenchmarkStreamHeap(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 3_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			src := &synthSource{Source: ordersDB(b, 1, 1), n: n}
			var rows, bytes int64
			var elapsed time.Duration
			var peak uint64
			for i := 0; i < b.N; i++ {
				res, rep, d, p := streamOnce(b, src, 20)
				rows, bytes, elapsed, peak = rows+res.Rows, bytes+rep.Bytes, elapsed+d, max(peak, p)
			}
			report(b, rows, bytes, elapsed, int64(peak))
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

func report(b *testing.B, rows, bytes int64, elapsed time.Duration, peak int64) {
	s := elapsed.Seconds()
	b.ReportMetric(float64(rows)/s, "rows/s")
	b.ReportMetric(float64(bytes)/1e6/s, "MB/s")
	if peak >= 0 {
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	}
	b.ReportMetric(0, "ns/op")
}

// streamOnce streams src into fresh tables in one batch; with gogc > 0 it samples the live
// heap under that GOGC and returns its peak growth.
func streamOnce(b *testing.B, src source.Source, gogc int) (Result, BatchReport, time.Duration, uint64) {
	dir := b.TempDir()
	spec := &config.Spec{AppID: "bench", Source: config.Source{DSN: "sqlserver://b@h", CaptureInstance: "dbo_orders"},
		Bronze: filepath.Join(dir, "bronze"), Checkpoint: filepath.Join(dir, "cp"), FactsTable: filepath.Join(dir, "facts")}
	spec.Defaults()
	open := func(d string) *deltalog.Table {
		st, _ := localstore.New(d)
		ls, _ := localfs.New(d)
		return deltalog.Open(st, ls, deltalog.Options{})
	}
	cp, _ := localstore.New(spec.Checkpoint)
	deps := Deps{Source: src, Bronze: open(spec.Bronze), Facts: open(spec.FactsTable), Checkpoint: checkpoint.New(cp, "bench")}

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
		OnBatch: func(r BatchReport) { rep = r }})
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
