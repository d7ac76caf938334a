package snapshot_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// Benchmarks of a full snapshot from cdcsim to committed Parquet files on local disk
// (open, plan, read of every range, one Delta commit). The metric (docs/performance.md):
//
//   - MB is the Arrow size of the rows the source's ReadTable returns (the captured
//     columns only, as read): the sum of the lengths of the records' buffers (validity
//     bitmaps, offsets, values). The snapshot stamp columns the job adds
//     (_capture_instance, _start_lsn, _snapshot, _commit_ts, ...) are not counted.
//   - MB/s divides by wall-clock time; MB/cpu-s by the process's user+system CPU time
//     (getrusage, every goroutine and the GC included) over the same interval: the rate
//     per core, which other processes on a shared machine do not distort.
//
// Variants, as for the stream's benchmarks:
//
//   - src=cdcsim: end to end;
//   - src=memory: each range's records read from cdcsim once before the timer and
//     replayed: the snapshot's own cost (stamp, encode, write, manifests, commit), with
//     the simulator still in the heap;
//   - src=replay-small-heap (1 range): the same records replayed over a simulator
//     holding one row, the full one dropped: the snapshot's own cost with a small heap;
//   - src=cdcsim-read: cdcsim's table read alone.
//
// peak-live-MB (BenchmarkSnapshotRangeHeap) is the most live heap above the stored
// database (its rows and the key order a first read builds) seen while the snapshot runs,
// sampled after a forced GC every tenth of the range (at least 100,000 rows); it stays
// flat as the range grows because rows stream into bounded row groups. Its CPU figures
// include those forced GCs and are not throughput.
//
//	go test ./core/snapshot -run '^$' -bench . -benchtime 1x

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
	every    int64 // rows between two samples
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
	m.bytes += benchmetrics.ArrowBytes(rec)
	if m.sampling && m.rows >= m.next {
		m.next += m.every
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > m.base {
			m.peak = max(m.peak, ms.HeapAlloc-m.base)
		}
	}
	return rec, nil
}

// runBenchSnapshot runs a standalone snapshot of src's bench table in ranges ranges; with
// sample > 0 it samples the live heap every sample rows read.
func runBenchSnapshot(b *testing.B, src source.Source, ranges int, sample int64) *meteredSource {
	b.Helper()
	return runBenchSnapshotIn(b, testlake.New(b, testlake.Local), src, ranges, sample)
}

// runBenchSnapshotIn is runBenchSnapshot into lake (made before a meter starts).
func runBenchSnapshotIn(b *testing.B, lake *testlake.Lake, src source.Source, ranges int, sample int64) *meteredSource {
	b.Helper()
	spec := &config.Spec{AppID: "bench", Source: config.Source{DSN: "sqlserver://sim@h?database=d", CaptureInstance: "dbo_bench"}}
	lake.Use(spec)
	spec.FactsTable = ""
	spec.Defaults()
	spec.Options.NumPartitions = ranges
	m := &meteredSource{Source: src, sampling: sample > 0, next: sample, every: sample}
	if sample > 0 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m.base = ms.HeapAlloc
	}
	d := snapshot.Deps{Spec: spec, Source: m, Bronze: lake.Table(spec.Bronze), Staging: lake.Store(spec.Checkpoint),
		Options: snapshot.Options{Standalone: true, Writer: parquetio.WriterOptions{RowGroupBytes: *rowGroupMiB << 20}}}
	if _, err := snapshot.Run(context.Background(), d); err != nil {
		b.Fatal(err)
	}
	return m
}

// rowGroupMiB overrides the writers' row group (MiB; 0: ingest.DefaultRowGroupBytes), to
// measure the default:
//
//	go test ./core/snapshot -run '^$' -bench Throughput -benchtime 1x -rowgroup 16
var rowGroupMiB = flag.Int64("rowgroup", 0, "writer row group in MiB (0: the default)")

func BenchmarkSnapshotThroughput(b *testing.B) {
	const n = 1_000_000
	b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
		db := benchTable(b, n)
		for _, ranges := range []int{1, 4} {
			b.Run(fmt.Sprintf("ranges=%d/src=cdcsim", ranges), func(b *testing.B) {
				benchSnapshot(b, db, ranges)
			})
			b.Run(fmt.Sprintf("ranges=%d/src=memory", ranges), func(b *testing.B) {
				rs := &replaySource{Source: db}
				runBenchSnapshot(b, rs, ranges, 0) // reads cdcsim once, into the replay cache
				benchSnapshot(b, rs, ranges)
			})
		}
		b.Run("ranges=1/src=cdcsim-read", func(b *testing.B) {
			var rows, bytes int64
			m := benchmetrics.Start()
			for i := 0; i < b.N; i++ {
				r, y := drainTable(b, db)
				rows, bytes = rows+r, bytes+y
			}
			m.Report(b, rows, bytes)
		})
		src := smallHeapReplay(b, db)
		db = nil // the last use: the simulator's rows are garbage from here
		b.Run("ranges=1/src=replay-small-heap", func(b *testing.B) {
			benchSnapshot(b, src, 1)
		})
	})
}

func benchSnapshot(b *testing.B, src source.Source, ranges int) {
	var rows, bytes int64
	var m benchmetrics.Meter
	for i := 0; i < b.N; i++ {
		lake := testlake.New(b, testlake.Local) // made before the meter starts
		if i == 0 {
			m = benchmetrics.Start()
		}
		ms := runBenchSnapshotIn(b, lake, src, ranges, 0)
		rows, bytes = rows+ms.rows, bytes+ms.bytes
	}
	m.Report(b, rows, bytes)
}

func BenchmarkSnapshotRangeHeap(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 5_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			db := benchTable(b, n)
			// The simulator sorts a table's rows on the first read after writes and keeps
			// that order (8 bytes a row): read once so the baseline holds it.
			readTable(b, db, func(rec arrow.RecordBatch) bool { rec.Release(); return false })
			var peak uint64
			var rows, bytes int64
			m := benchmetrics.Start()
			for b.Loop() {
				ms := runBenchSnapshot(b, db, 1, max(100_000, int64(n/10)))
				peak = max(peak, ms.peak)
				rows, bytes = rows+ms.rows, bytes+ms.bytes
			}
			m.Report(b, rows, bytes)
			b.ReportMetric(float64(peak)/1e6, "peak-live-MB")
		})
	}
}

// tableRead is the read of the whole bench table, as one snapshot range reads it.
func tableRead(ctx context.Context, b *testing.B, db source.Source) source.TableRead {
	cols, err := db.CapturedColumns(ctx, "dbo_bench")
	if err != nil {
		b.Fatal(err)
	}
	return source.TableRead{Table: source.Table{Schema: "dbo", Name: "bench"}, Columns: cols}
}

// drainTable reads the whole bench table and drops the rows; it returns rows and bytes.
func drainTable(b *testing.B, db source.Source) (rows, bytes int64) {
	readTable(b, db, func(rec arrow.RecordBatch) bool {
		rows += rec.NumRows()
		bytes += benchmetrics.ArrowBytes(rec)
		rec.Release()
		return false
	})
	return rows, bytes
}

// readTable reads the whole bench table, passing each record to keep; it returns the
// records keep kept.
func readTable(b *testing.B, db source.Source, keep func(arrow.RecordBatch) bool) []arrow.RecordBatch {
	ctx := context.Background()
	r, err := db.ReadTable(ctx, tableRead(ctx, b, db))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var out []arrow.RecordBatch
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			b.Fatal(err)
		}
		if keep(rec) {
			out = append(out, rec)
		}
	}
}

// replaySource is a Source whose table reads return records held in memory: the first
// read of a range reads it from the embedded Source and keeps its records; later reads of
// the same range replay them.
type replaySource struct {
	source.Source
	cache benchmetrics.ReplayCache
}

func (s *replaySource) ReadTable(ctx context.Context, r source.TableRead) (source.Rows, error) {
	key := fmt.Sprintf("%v|%v|%d|%d", r.Range.Lo, r.Range.Hi, r.BatchRows, r.BatchBytes)
	return s.cache.Rows(ctx, key, func() (source.Rows, error) { return s.Source.ReadTable(ctx, r) })
}

// smallHeapReplay reads the whole bench table from db and returns a Source over a
// one-row copy of the table whose table read replays them (run it with one range).
func smallHeapReplay(b *testing.B, db source.Source) source.Source {
	recs := readTable(b, db, func(arrow.RecordBatch) bool { return true })
	return &oneRangeReplay{Source: benchTable(b, 1), recs: recs}
}

type oneRangeReplay struct {
	source.Source
	recs []arrow.RecordBatch
}

// ReadTable replays every record whatever the range: the job reads one range.
func (s *oneRangeReplay) ReadTable(ctx context.Context, r source.TableRead) (source.Rows, error) {
	return benchmetrics.Replay(s.recs[0].Schema(), s.recs), nil
}
