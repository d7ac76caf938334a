package snapshot_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// Benchmarks of a full snapshot from cdcsim to committed Parquet files on local disk
// (open, plan, read of every range, one Delta commit), reporting rows/s, MB/s (Arrow bytes
// read from the source) and peak-live-MB: the most live heap above the stored database
// seen while the snapshot runs (sampled after a forced GC every 100,000 rows read), which
// stays flat as the range grows because rows stream into bounded Parquet row groups.
//
//	go test ./core/snapshot -run '^$' -bench . -benchmem

// benchTable holds n rows in dbo.bench(id bigint, v int, s nvarchar(32), amount decimal(18,2)).
func benchTable(b *testing.B, n int) *cdcsim.DB {
	b.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 1})
	cols := []source.Column{{Name: "id", DataType: "bigint"}, {Name: "v", DataType: "int", Nullable: true},
		{Name: "s", DataType: "nvarchar", MaxLength: 32, Nullable: true}, {Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Nullable: true}}
	if err := db.CreateTable(cdcsim.TableSpec{Name: "bench", Columns: cols, Key: []string{"id"}}); err != nil {
		b.Fatal(err)
	}
	for done := 0; done < n; {
		k := min(5000, n-done)
		if _, err := db.Exec(func(tx *cdcsim.Txn) error {
			for i := done; i < done+k; i++ {
				if _, err := tx.Insert("bench", cdcsim.Row{"id": int64(i), "v": i % 1000, "s": fmt.Sprintf("row %d of the benchmark", i), "amount": fmt.Sprintf("%d.%02d", i%100000, i%100)}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		done += k
	}
	if _, err := db.EnableCapture("bench", cdcsim.CaptureOptions{}); err != nil {
		b.Fatal(err)
	}
	db.Idle()
	return db
}

// meteredSource counts the Arrow bytes a read returns and samples the live heap.
type meteredSource struct {
	source.Source
	mu       sync.Mutex
	rows     int64
	bytes    int64
	next     int64
	base     uint64
	peak     uint64
	sampling bool
}

func (m *meteredSource) ReadTable(ctx context.Context, r source.TableRead) (source.Rows, error) {
	rows, err := m.Source.ReadTable(ctx, r)
	if err != nil {
		return nil, err
	}
	return &meteredRows{Rows: rows, m: m}, nil
}

type meteredRows struct {
	source.Rows
	m *meteredSource
}

func (r *meteredRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := r.Rows.Next(ctx)
	if err != nil {
		return rec, err
	}
	m := r.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows += rec.NumRows()
	for _, c := range rec.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				m.bytes += int64(buf.Len())
			}
		}
	}
	if m.sampling && m.rows >= m.next {
		m.next += 100_000
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > m.base {
			m.peak = max(m.peak, ms.HeapAlloc-m.base)
		}
	}
	return rec, nil
}

func runBenchSnapshot(b *testing.B, db *cdcsim.DB, ranges int, sample bool) *meteredSource {
	b.Helper()
	dir := b.TempDir()
	spec := &config.Spec{AppID: "bench", Source: config.Source{DSN: "sqlserver://sim@h?database=d", CaptureInstance: "dbo_bench"},
		Bronze: filepath.Join(dir, "bronze"), Checkpoint: filepath.Join(dir, "cp")}
	spec.Defaults()
	spec.Options.NumPartitions = ranges
	table := func(d string) *deltalog.Table {
		st, err := localstore.New(d)
		if err != nil {
			b.Fatal(err)
		}
		ls, err := localfs.New(d)
		if err != nil {
			b.Fatal(err)
		}
		return deltalog.Open(st, ls, deltalog.Options{})
	}
	cp, err := localstore.New(spec.Checkpoint)
	if err != nil {
		b.Fatal(err)
	}
	m := &meteredSource{Source: db, sampling: sample, next: 100_000}
	if sample {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m.base = ms.HeapAlloc
	}
	j := snapshot.FromSpec(spec, m, snapshot.Tables{Bronze: table(spec.Bronze), Checkpoint: cp})
	j.Standalone = true
	if _, err := j.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	return m
}

func BenchmarkSnapshotThroughput(b *testing.B) {
	const n = 1_000_000
	db := benchTable(b, n)
	for _, ranges := range []int{1, 4} {
		b.Run(fmt.Sprintf("rows=%d/ranges=%d", n, ranges), func(b *testing.B) {
			var rows, bytes int64
			for b.Loop() {
				m := runBenchSnapshot(b, db, ranges, false)
				rows += m.rows
				bytes += m.bytes
			}
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(rows)/s, "rows/s")
			b.ReportMetric(float64(bytes)/1e6/s, "MB/s")
		})
	}
}

func BenchmarkSnapshotRangeHeap(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 5_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			db := benchTable(b, n)
			var peak uint64
			for b.Loop() {
				m := runBenchSnapshot(b, db, 1, true)
				peak = max(peak, m.peak)
			}
			b.ReportMetric(float64(peak)/1e6, "peak-live-MB")
		})
	}
}
