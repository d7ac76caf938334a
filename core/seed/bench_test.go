package seed_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/testfiles"
)

// Benchmarks of the seed's conversion: a copy's Parquet files to bronze Parquet files on
// local disk (Convert of one file group: read, cast, stamp, encode, write, stage). The
// copy is COVID-19_NYT (testdata/delta: 8 files, 6.19 MB of Snappy Parquet, 1,111,930
// rows of date as text, county, state, fips, cases, deaths), mapped onto
// dbo.covid(date date, county nvarchar(100), state nvarchar(50), fips int, cases int,
// deaths int): the date texts are parsed, the rest kept.
//
//   - copy-MB is the copy's Parquet bytes on disk (what a user's copy measures); MB the
//     Arrow size of its captured columns as read (docs/performance.md's MB). Both per
//     CPU-second of the process (user + system, every goroutine and the GC).
//   - impl=seed converts as the seed does: the chunks bronze can take as they are copied
//     (county, state, fips, cases, deaths), the date texts decoded as their dictionaries;
//     impl=seed-decode-all decodes and encodes every column (Options.DecodeAll, the
//     conversion before chunks were copied). bronze-MB is the bronze file written.
//   - impl=pqarrow-rewrite is the peer: the same files read with pqarrow and written again
//     with pqarrow (Snappy), no casts, no stamp columns, no Delta: what reading and
//     rewriting Parquet costs at all.
//
// BenchmarkSeedConvertHeap converts copies of 1, 4 and 16 times the data (the files
// repeated under other names, one group) and reports peak-live-MB: the most live heap
// above the baseline, sampled after a forced GC at every read of the copy's storage.
//
//	go test ./core/seed -run '^$' -bench Seed -benchtime 3x -count 2

// covidColumns are dbo.covid's captured columns.
var covidColumns = []source.Column{
	{Name: "date", DataType: "date", Nullable: true}, {Name: "county", DataType: "nvarchar", MaxLength: 100, Nullable: true},
	{Name: "state", DataType: "nvarchar", MaxLength: 50, Nullable: true}, {Name: "fips", DataType: "int", Nullable: true},
	{Name: "cases", DataType: "int", Nullable: true}, {Name: "deaths", DataType: "int", Nullable: true},
}

// benchDeps are the seed's connections for dbo.covid in dir; open opens the copy's store
// (wrapped, for the heap benchmark).
func benchDeps(b testing.TB, dir string, wrap func(storage.Store) storage.Store) seed.Deps {
	b.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 1})
	if err := db.CreateTable(cdcsim.TableSpec{Name: "covid", Columns: covidColumns}); err != nil {
		b.Fatal(err)
	}
	if _, err := db.EnableCapture("covid", cdcsim.CaptureOptions{}); err != nil {
		b.Fatal(err)
	}
	db.Idle()
	spec := &config.Spec{AppID: "covid", Source: config.Source{DSN: "sqlserver://sim@x?database=sim", CaptureInstance: "dbo_covid"},
		Bronze: filepath.Join(dir, "bronze"), Checkpoint: filepath.Join(dir, "checkpoint")}
	spec.Defaults()
	return seed.Deps{Spec: spec, Source: db, Bronze: localTable(b, spec.Bronze, nil), Staging: localTable(b, spec.Checkpoint, nil).Store(),
		Options:  seed.Options{GroupBytes: 1 << 40},
		OpenCopy: func(_ context.Context, url string) (*deltalog.Table, error) { return localTable(b, url, wrap), nil }}
}

func localTable(b testing.TB, dir string, wrap func(storage.Store) storage.Store) *deltalog.Table {
	l, err := localfs.New(dir)
	if err != nil {
		b.Fatal(err)
	}
	var st storage.Store = l.Store()
	if wrap != nil {
		st = wrap(st)
	}
	return deltalog.Open(st, l, deltalog.Options{})
}

// covidArrowBytes is the Arrow size of the copy's columns as deltalog's scan reads them.
func covidArrowBytes(b *testing.B, dir string) (rows, n int64) {
	b.Helper()
	ctx := context.Background()
	snap, err := localTable(b, dir, nil).Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, n
		}
		if err != nil {
			b.Fatal(err)
		}
		rows += rec.NumRows()
		n += benchmetrics.ArrowBytes(rec)
		rec.Release()
	}
}

func BenchmarkSeedConvert(b *testing.B) {
	ctx := context.Background()
	copyDir := testfiles.DeltaTable(b, "COVID-19_NYT")
	rows, arrowBytes := covidArrowBytes(b, copyDir)
	for _, impl := range []string{"seed", "seed-decode-all"} {
		b.Run("impl="+impl, func(b *testing.B) {
			d := benchDeps(b, b.TempDir(), nil)
			d.Options.DecodeAll = impl == "seed-decode-all"
			plan, err := seed.Plan(ctx, d, seed.Request{Copy: copyDir, AsOf: mustMax(b, d.Source).String()})
			if err != nil {
				b.Fatal(err)
			}
			var bronzeBytes int64
			m := benchmetrics.Start()
			for b.Loop() {
				r, err := seed.Convert(ctx, d, plan.Seed, plan.Plan, plan.Groups[0])
				if err != nil || r.Rows != rows {
					b.Fatalf("convert: %+v %v", r, err)
				}
				bronzeBytes = r.Bytes
			}
			report(b, m, rows, arrowBytes, plan.Bytes)
			b.ReportMetric(float64(bronzeBytes)/1e6, "bronze-MB")
		})
	}
	b.Run("impl=pqarrow-rewrite", func(b *testing.B) {
		files, err := filepath.Glob(filepath.Join(copyDir, "*.parquet"))
		if err != nil || len(files) != 8 {
			b.Fatalf("%v %v", files, err)
		}
		var copyBytes int64
		for _, f := range files {
			fi, _ := os.Stat(f)
			copyBytes += fi.Size()
		}
		out := b.TempDir()
		m := benchmetrics.Start()
		for b.Loop() {
			var n int64
			for i, f := range files {
				n += rewrite(b, f, filepath.Join(out, fmt.Sprintf("%d.parquet", i)))
			}
			if n != rows {
				b.Fatalf("rewrote %d rows", n)
			}
		}
		report(b, m, rows, arrowBytes, copyBytes)
	})
}

// report is Meter.Report plus copy-MB/cpu-s, the rate in the copy's own Parquet bytes.
func report(b *testing.B, m benchmetrics.Meter, rows, arrowBytes, copyBytes int64) {
	cpu := m.CPU().Seconds()
	n := int64(b.N)
	m.Report(b, rows*n, arrowBytes*n)
	b.ReportMetric(float64(copyBytes*n)/1e6/cpu, "copy-MB/cpu-s")
}

// rewrite reads the Parquet file src with pqarrow and writes its records to dst, Snappy,
// as the peer of a conversion that casts nothing; it returns the rows.
func rewrite(b *testing.B, src, dst string) int64 {
	ctx := context.Background()
	f, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		b.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 16 << 10}, memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rr.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rr.Schema(), &buf, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy)),
		pqarrow.DefaultWriterProps())
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for rr.Next() {
		rec := rr.RecordBatch()
		n += rec.NumRows()
		if err := w.WriteBuffered(rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return n
}

func mustMax(b testing.TB, src source.Source) interface{ String() string } {
	l, err := src.MaxLSN(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func BenchmarkSeedConvertHeap(b *testing.B) {
	ctx := context.Background()
	copyDir := testfiles.DeltaTable(b, "COVID-19_NYT")
	files, err := filepath.Glob(filepath.Join(copyDir, "*.parquet"))
	if err != nil {
		b.Fatal(err)
	}
	rows, arrowBytes := covidArrowBytes(b, copyDir)
	for _, times := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("copy=%dx", times), func(b *testing.B) {
			// A Parquet folder of the copy's files, times times under other names.
			dir := b.TempDir()
			cp := filepath.Join(dir, "copy")
			if err := os.MkdirAll(cp, 0o755); err != nil {
				b.Fatal(err)
			}
			var copyBytes int64
			for k := range times {
				for i, f := range files {
					data, err := os.ReadFile(f)
					if err != nil {
						b.Fatal(err)
					}
					copyBytes += int64(len(data))
					if err := os.WriteFile(filepath.Join(cp, fmt.Sprintf("part-%03d-%d.parquet", k, i)), data, 0o644); err != nil {
						b.Fatal(err)
					}
				}
			}
			var peak heapPeak
			d := benchDeps(b, dir, peak.wrap)
			plan, err := seed.Plan(ctx, d, seed.Request{Copy: cp, AsOf: mustMax(b, d.Source).String()})
			if err != nil || len(plan.Groups) != 1 {
				b.Fatalf("plan %+v %v", plan, err)
			}
			m := benchmetrics.Start()
			for b.Loop() {
				peak.start()
				r, err := seed.Convert(ctx, d, plan.Seed, plan.Plan, plan.Groups[0])
				if err != nil || r.Rows != rows*int64(times) {
					b.Fatalf("convert: %+v %v", r, err)
				}
			}
			report(b, m, rows*int64(times), arrowBytes*int64(times), copyBytes)
			b.ReportMetric(float64(peak.max)/1e6, "peak-live-MB")
		})
	}
}

// heapPeak samples the live heap (after a forced GC) at every ranged read of the copy and
// keeps the most above the baseline taken at start.
type heapPeak struct {
	mu        sync.Mutex
	base, max uint64
}

func (h *heapPeak) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.base = liveHeap()
}

func (h *heapPeak) sample() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := liveHeap(); l > h.base && l-h.base > h.max {
		h.max = l - h.base
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func (h *heapPeak) wrap(st storage.Store) storage.Store { return &sampledStore{Store: st, h: h} }

// sampledStore samples the heap before each ranged read: the reads come as the
// conversion moves from column chunk to column chunk.
type sampledStore struct {
	storage.Store
	h *heapPeak
}

func (s *sampledStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	s.h.sample()
	return s.Store.GetRange(ctx, key, off, n)
}
