package parquetio

import (
	"context"
	"flag"
	"fmt"
	"io"
	"iter"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pgo "github.com/parquet-go/parquet-go"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// The benchmarks write a bronze-like stream (benchColumns behind the bronze metadata
// columns: 19 columns, about 190 bytes of Arrow data a row) in record batches of
// benchBatchRows rows, cycling through benchDistinct pre-built batches so that building
// the input costs nothing. Rows per op are set by the sub-benchmark name; 10M rows run
// only with -parquetio.10m (see docs/decisions/0003-parquet-library.md):
//
//	go test -run '^$' -bench Write -benchtime=1x -cpu 1 ./deltalog/parquetio/ -parquetio.10m
//
// MB/s is Arrow input bytes per wall-clock second with -cpu 1; MB/cpu-s is per second of
// the process's CPU time (user+system, GC included), the rate per core that does not
// depend on other load on the machine. peak-heap-MiB is the
// largest HeapInuse sampled every 5 ms during the op, minus HeapInuse before it (the
// input batches are excluded).

var bench10M = flag.Bool("parquetio.10m", false, "run the 10M-row write benchmarks (use with -benchtime=1x)")

const (
	benchBatchRows = 10_000
	benchDistinct  = 10
)

type benchInput struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	bytes   int64 // Arrow bytes of one batch, averaged
}

var (
	benchOnce sync.Once
	benchIn   benchInput
)

func loadBenchInput(b *testing.B) benchInput {
	benchOnce.Do(func() {
		s := mustSchema(b, benchColumns)
		var total int64
		for i := range benchDistinct {
			rec := bronzeRecordFrom(memory.DefaultAllocator, s, i*benchBatchRows, benchBatchRows, false)
			total += RecordBytes(rec)
			benchIn.batches = append(benchIn.batches, rec)
		}
		benchIn.schema = s
		benchIn.bytes = total / benchDistinct
	})
	return benchIn
}

// cpuSeconds is the process's user and system CPU time: MB per CPU second is the write
// rate per core even on a machine whose cores other processes share.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// heapPeak samples HeapInuse until stop is closed and returns the peak above the
// level at start.
func heapPeak(stop <-chan struct{}) func() float64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		<-done
		p := peak.Load()
		if p < base {
			return 0
		}
		return float64(p-base) / (1 << 20)
	}
}

var benchSizes = []struct {
	name string
	rows int
}{
	{"rows=100k", 100_000},
	{"rows=1M", 1_000_000},
	{"rows=10M", 10_000_000},
}

// BenchmarkWrite compares arrow-go pqarrow and parquet-go encoding the same Arrow
// batches into Snappy Parquet with row groups of DefaultRowGroupBytes, written to io.Discard.
func BenchmarkWrite(b *testing.B) {
	for _, lib := range []struct {
		name  string
		write func(b *testing.B, in benchInput, rows int, out io.Writer) error
	}{
		{"pqarrow", writePqarrow},
		{"pqarrow-serial", writePqarrowSerial},
		{"parquet-go", writeParquetGo},
	} {
		for _, sz := range benchSizes {
			b.Run(lib.name+"/"+sz.name, func(b *testing.B) {
				runWriteBench(b, sz.rows, lib.write)
			})
		}
	}
}

// BenchmarkWriter is this package's Writer end to end: encode, statistics, temporary
// file and upload to a store that discards. Each batch is a fresh copy that the caller
// releases after Write, so the batches the writer holds for its row group count in its
// heap.
func BenchmarkWriter(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			runWriteBench(b, sz.rows, func(b *testing.B, in benchInput, rows int, out io.Writer) error {
				ctx := context.Background()
				w := NewWriter(discardStore{out}, in.schema, WriterOptions{TempDir: b.TempDir()})
				for i := 0; i < rows/benchBatchRows; i++ {
					// A fresh copy, as a batch from the source: what the writer holds
					// of it counts in its heap.
					rec := copyRecord(in.batches[i%benchDistinct])
					err := w.Write(ctx, rec)
					rec.Release()
					if err != nil {
						return err
					}
				}
				_, err := w.Close(ctx)
				return err
			})
		})
	}
}

func runWriteBench(b *testing.B, rows int, write func(*testing.B, benchInput, int, io.Writer) error) {
	if rows > 1_000_000 && !*bench10M {
		b.Skip("10M rows: run with -parquetio.10m -benchtime=1x")
	}
	in := loadBenchInput(b)
	b.SetBytes(in.bytes * int64(rows/benchBatchRows))
	b.ReportAllocs()
	var peak float64
	out := &countingWriter{w: io.Discard}
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for range b.N {
		stop := make(chan struct{})
		result := heapPeak(stop)
		if err := write(b, in, rows, out); err != nil {
			b.Fatal(err)
		}
		close(stop)
		peak = max(peak, result())
	}
	b.StopTimer()
	if cpu := cpuSeconds() - cpu0; cpu > 0 {
		b.ReportMetric(float64(in.bytes*int64(rows/benchBatchRows)*int64(b.N))/1e6/cpu, "MB/cpu-s")
	}
	b.ReportMetric(peak, "peak-heap-MiB")
	b.ReportMetric(float64(out.n)/float64(b.N)/(1<<20), "file-MiB/op")
}

func writePqarrow(b *testing.B, in benchInput, rows int, out io.Writer) error {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithStoreDecimalAsInteger(true),
		parquet.WithDataPageVersion(parquet.DataPageV1),
	)
	fw, err := pqarrow.NewFileWriter(in.schema, out, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	var group int64
	for i := 0; i < rows/benchBatchRows; i++ {
		rec := in.batches[i%benchDistinct]
		if err := fw.WriteBuffered(rec); err != nil {
			return err
		}
		if group += in.bytes; group >= DefaultRowGroupBytes {
			if err := fw.NewBufferedRowGroupChecked(); err != nil {
				return err
			}
			group = 0
		}
	}
	return fw.Close()
}

// writePqarrowSerial keeps the batches of a row group and writes them as one row group,
// column after column.
func writePqarrowSerial(b *testing.B, in benchInput, rows int, out io.Writer) error {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithStoreDecimalAsInteger(true),
		parquet.WithDataPageVersion(parquet.DataPageV1),
	)
	fw, err := pqarrow.NewFileWriter(in.schema, out, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	var group int64
	var held []arrow.RecordBatch
	flush := func() error {
		tbl := array.NewTableFromRecords(in.schema, held)
		defer tbl.Release()
		for _, r := range held {
			r.Release()
		}
		held = held[:0]
		group = 0
		return fw.WriteTable(tbl, tbl.NumRows())
	}
	for i := 0; i < rows/benchBatchRows; i++ {
		held = append(held, copyRecord(in.batches[i%benchDistinct]))
		if group += in.bytes; group >= DefaultRowGroupBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(held) > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	return fw.Close()
}

// copyRecord deep-copies a record, standing for a batch that arrives from the source and
// that only the writer keeps alive.
func copyRecord(rec arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	for i, c := range rec.Columns() {
		cp, err := array.Concatenate([]arrow.Array{c}, memory.DefaultAllocator)
		if err != nil {
			panic(err)
		}
		cols[i] = cp
	}
	out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// writeParquetGo converts each Arrow batch to parquet-go rows (our data arrives as Arrow,
// and the bronze schema is only known at run time, so parquet-go's struct-based
// GenericWriter does not apply) and writes them.
func writeParquetGo(b *testing.B, in benchInput, rows int, out io.Writer) error {
	sc, order := parquetGoSchema(in.schema)
	w := pgo.NewWriter(out, sc, pgo.Compression(&pgo.Snappy))
	buf := make([]pgo.Row, benchBatchRows)
	var group int64
	for i := 0; i < rows/benchBatchRows; i++ {
		rec := in.batches[i%benchDistinct]
		toParquetGoRows(rec, order, buf)
		if _, err := w.WriteRows(buf[:rec.NumRows()]); err != nil {
			return err
		}
		if group += in.bytes; group >= DefaultRowGroupBytes {
			if err := w.Flush(); err != nil {
				return err
			}
			group = 0
		}
	}
	return w.Close()
}

// parquetGoSchema maps the bronze Arrow schema to a parquet-go schema, and returns for each
// parquet-go leaf column (sorted by name, as parquet-go orders a Group) the Arrow column
// index.
func parquetGoSchema(s *arrow.Schema) (*pgo.Schema, []int) {
	g := pgo.Group{}
	for _, f := range s.Fields() {
		var n pgo.Node
		switch t := f.Type.(type) {
		case *arrow.BooleanType:
			n = pgo.Leaf(pgo.BooleanType)
		case *arrow.Int16Type:
			n = pgo.Int(16)
		case *arrow.Int32Type:
			n = pgo.Int(32)
		case *arrow.Int64Type:
			n = pgo.Int(64)
		case *arrow.Decimal128Type:
			n = pgo.Decimal(int(t.Scale), int(t.Precision), pgo.Int64Type)
		case *arrow.TimestampType:
			n = pgo.TimestampAdjusted(pgo.Microsecond, t.TimeZone != "")
		case *arrow.StringType:
			n = pgo.String()
		case *arrow.BinaryType:
			n = pgo.Leaf(pgo.ByteArrayType)
		default:
			panic(fmt.Sprintf("bench schema: %s", t))
		}
		g[f.Name] = pgo.Optional(n)
	}
	sc := pgo.NewSchema("bronze", g)
	var order []int
	for _, path := range sc.Columns() {
		order = append(order, s.FieldIndices(path[0])[0])
	}
	return sc, order
}

func toParquetGoRows(rec arrow.RecordBatch, order []int, rows []pgo.Row) {
	n := int(rec.NumRows())
	for r := range n {
		rows[r] = rows[r][:0]
	}
	for leaf, ci := range order {
		col := rec.Column(ci)
		for r := range n {
			var v pgo.Value
			if !col.IsNull(r) {
				switch a := col.(type) {
				case *array.Boolean:
					v = pgo.BooleanValue(a.Value(r))
				case *array.Int16:
					v = pgo.Int32Value(int32(a.Value(r)))
				case *array.Int32:
					v = pgo.Int32Value(a.Value(r))
				case *array.Int64:
					v = pgo.Int64Value(a.Value(r))
				case *array.Decimal128:
					v = pgo.Int64Value(int64(a.Value(r).LowBits()))
				case *array.Timestamp:
					v = pgo.Int64Value(int64(a.Value(r)))
				case *array.String:
					v = pgo.ByteArrayValue([]byte(a.Value(r)))
				case *array.Binary:
					v = pgo.ByteArrayValue(a.Value(r))
				}
				v = v.Level(0, 1, leaf)
			} else {
				v = pgo.NullValue().Level(0, 0, leaf)
			}
			rows[r] = append(rows[r], v)
		}
	}
}

// discardStore takes uploads and drops them into w.
type discardStore struct{ w io.Writer }

func (d discardStore) Put(_ context.Context, _ string, r io.Reader, _ int64) error {
	_, err := io.Copy(d.w, r)
	return err
}

func (discardStore) URL() string { return "discard://" }
func (discardStore) Get(context.Context, string) (io.ReadCloser, error) {
	return nil, storage.ErrNotFound
}
func (discardStore) GetRange(context.Context, string, int64, int64) ([]byte, error) {
	return nil, storage.ErrNotFound
}
func (discardStore) Head(context.Context, string) (storage.ObjectInfo, error) {
	return storage.ObjectInfo{}, storage.ErrNotFound
}
func (discardStore) PutIfAbsent(context.Context, string, []byte) error  { return nil }
func (discardStore) Copy(context.Context, string, string) error         { return storage.ErrNotFound }
func (discardStore) CopyIfAbsent(context.Context, string, string) error { return storage.ErrNotFound }
func (discardStore) List(context.Context, string, string) iter.Seq2[storage.ObjectInfo, error] {
	return func(func(storage.ObjectInfo, error) bool) {}
}
func (discardStore) Delete(context.Context, string) error { return nil }

func TestParquetGoBenchWriterReadsBack(t *testing.T) {
	// The parquet-go side of the benchmark must write the same rows, or its numbers mean
	// nothing: write 1 batch and count the rows back.
	s := mustSchema(t, benchColumns)
	rec := bronzeRecord(memory.DefaultAllocator, s, 100, true)
	defer rec.Release()
	sc, order := parquetGoSchema(s)
	var buf writerBuffer
	w := pgo.NewWriter(&buf, sc, pgo.Compression(&pgo.Snappy))
	rows := make([]pgo.Row, 100)
	toParquetGoRows(rec, order, rows)
	if _, err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := pgo.OpenFile(&buf, int64(len(buf.b)))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != 100 {
		t.Errorf("%d rows", f.NumRows())
	}
}

type writerBuffer struct{ b []byte }

func (w *writerBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
func (w *writerBuffer) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(w.b)) {
		return 0, io.EOF
	}
	n := copy(p, w.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
