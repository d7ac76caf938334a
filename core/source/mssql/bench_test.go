package mssql

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// BenchmarkReadChangesToArrow measures the driver-value → Arrow path of a change read
// (the scripted driver hands out values as go-mssqldb does; no network): rows/s, MB/s of
// Arrow buffers, allocations, and the peak heap over the read (peak-MB), which must not
// grow with the number of rows.
//
//	go test -run XXX -bench ReadChangesToArrow -benchmem ./core/source/mssql
func BenchmarkReadChangesToArrow(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			benchChanges(b, n)
		})
	}
}

func benchChanges(b *testing.B, n int) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	note := strings.Repeat("n", 40)
	d, _ := newScripted(b, Options{SourceTimeZone: "UTC"}, func(q string, _ []any) result {
		switch {
		case strings.HasPrefix(q, "EXEC sys.sp_cdc_get_captured_columns"):
			return result{cols: []string{"source_schema", "source_table", "column_name", "column_id", "data_type"},
				rows: [][]driver.Value{{"dbo", "orders", "id", int64(1), "bigint"}, {"dbo", "orders", "amount", int64(2), "decimal"}, {"dbo", "orders", "note", int64(3), "nvarchar"}}}
		case strings.HasPrefix(q, "SELECT c.name"):
			return result{cols: []string{"name", "column_id"}, rows: [][]driver.Value{{"id", int64(1)}, {"amount", int64(2)}, {"note", int64(3)}}}
		}
		return result{cols: []string{"_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts", "id", "amount", "note"}, n: n,
			gen: func(i int, dest []driver.Value) {
				dest[0], dest[1], dest[2], dest[3] = lsnA.String(), lsnB.String(), int64(2), int64(1)
				dest[4], dest[5], dest[6], dest[7] = ts, int64(i), []byte("1234.56"), note
			}}
	})
	cols := []source.Column{
		{Name: "id", DataType: "bigint", Present: true},
		{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Present: true},
		{Name: "note", DataType: "nvarchar", MaxLength: 40, Present: true},
	}
	b.ReportAllocs()
	b.ResetTimer()
	var bytes int64
	var peak uint64
	var ms runtime.MemStats
	for it := 0; it < b.N; it++ {
		rows, err := d.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsnA, To: lsnB, Columns: cols})
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for batch := 0; ; batch++ {
			rec, err := rows.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			got += int(rec.NumRows())
			for _, c := range rec.Columns() {
				for _, buf := range c.Data().Buffers() {
					if buf != nil {
						bytes += int64(buf.Len())
					}
				}
			}
			rec.Release()
			if batch%20 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
		}
		rows.Close()
		if got != n {
			b.Fatalf("read %d rows, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.SetBytes(bytes / int64(b.N))
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}
