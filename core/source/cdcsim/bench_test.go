package cdcsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
)

// Benchmarks of reading a change range and a key range into Arrow record batches, with
// 100k and 5M rows. Besides ns/op, B/op and allocs/op (-benchmem) they report rows/s,
// MB/s (Arrow bytes), allocs/row and peak-live-MB: the most live heap above the stored
// database seen while one read runs (sampled after a forced GC every tenth of the read),
// which stays flat as the range grows because batches are built lazily.
//
//	go test ./core/source/cdcsim -run '^$' -bench . -benchmem

var benchSizes = []int{100_000, 5_000_000}

// benchDB holds n rows in table bench(id bigint, v int, s nvarchar(32)), inserted in
// transactions of 1000 rows, so the change table holds n inserts.
func benchDB(b *testing.B, n int) *DB {
	b.Helper()
	db := New(Config{Seed: 1})
	err := db.CreateTable(TableSpec{Name: "bench", Key: []string{"id"}, Columns: []source.Column{
		{Name: "id", DataType: "bigint"},
		{Name: "v", DataType: "int", Nullable: true},
		{Name: "s", DataType: "nvarchar", MaxLength: 32, Nullable: true},
	}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.EnableCapture("bench", CaptureOptions{}); err != nil {
		b.Fatal(err)
	}
	for done := 0; done < n; {
		k := min(1000, n-done)
		if _, err := db.Exec(func(tx *Txn) error {
			for i := done; i < done+k; i++ {
				if _, err := tx.Insert("bench", Row{"id": int64(i), "v": i % 1000, "s": fmt.Sprintf("row %d", i)}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		done += k
	}
	return db
}

// drain reads rows to the end and returns rows and Arrow bytes; with sample > 0 it forces a
// GC every sample rows and returns the highest live heap seen.
func drain(b *testing.B, r source.Rows, sample int) (rows, bytes int64, peak uint64) {
	ctx := context.Background()
	defer r.Close()
	next := int64(sample)
	var ms runtime.MemStats
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, bytes, peak
		}
		if err != nil {
			b.Fatal(err)
		}
		rows += rec.NumRows()
		bytes += benchmetrics.ArrowBytes(rec)
		if sample > 0 && rows >= next {
			next += int64(sample)
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		rec.Release()
	}
}

func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func benchRead(b *testing.B, n int, open func() source.Rows) {
	b.Helper()
	// Opening a read once builds what the database keeps anyway (a table's key order is
	// built lazily on the first read after writes), so the baseline holds it.
	warm := open()
	warm.Close()
	base := liveHeap()
	_, _, peak := drain(b, open(), n/10)
	var rows, bytes int64
	b.ReportAllocs()
	b.ResetTimer()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		rows, bytes, _ = drain(b, open(), 0)
	}
	runtime.ReadMemStats(&after)
	b.StopTimer()
	if rows != int64(n) {
		b.Fatalf("read %d rows, want %d", rows, n)
	}
	b.SetBytes(bytes)
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(rows)/float64(b.N), "allocs/row")
	b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "peak-live-MB")
}

func BenchmarkReadChanges(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			db := benchDB(b, n)
			ctx := context.Background()
			cols, err := db.CapturedColumns(ctx, "dbo_bench")
			if err != nil {
				b.Fatal(err)
			}
			open := func() source.Rows {
				r, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_bench", From: lsn.Zero, To: maxOf(ctx, b, db), Columns: cols})
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
			benchRead(b, n, open)
		})
	}
}

func BenchmarkReadTableKeyRange(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			db := benchDB(b, n)
			ctx := context.Background()
			cols, err := db.CapturedColumns(ctx, "dbo_bench")
			if err != nil {
				b.Fatal(err)
			}
			// The key range [0, n): every row, through the index.
			r := source.KeyRange{Lo: source.Key{int64(0)}, Hi: source.Key{int64(n)}}
			open := func() source.Rows {
				rows, err := db.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: "bench"}, Columns: cols, Keys: cols[:1], Range: r})
				if err != nil {
					b.Fatal(err)
				}
				return rows
			}
			benchRead(b, n, open)
		})
	}
}
