package parquetio

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// A row group spliced from a chunk copied out of another file (gzip, its own dictionary)
// and chunks encoded here (a dictionary array of one value, a plain column) reads back
// value for value, keeps each chunk's codec, carries the Parquet statistics, and gets the
// Delta statistics of the values given; a chunk of another physical type is refused.
func TestSpliceWriterMixesCopiedAndEncodedChunks(t *testing.T) {
	ctx := context.Background()
	mem := memory.DefaultAllocator
	const rows = 1000
	// The "other file": one int64 column n, gzip, two row groups.
	nb := array.NewInt64Builder(mem)
	for i := range rows {
		if i%10 == 9 {
			nb.AppendNull()
		} else {
			nb.Append(int64(i % 37))
		}
	}
	n := nb.NewArray()
	nb.Release()
	defer n.Release()
	other := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	rec := array.NewRecordBatch(other, []arrow.Array{n}, rows)
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(other, &buf, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Gzip), parquet.WithMaxRowGroupLength(rows)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	st, _ := newStore(t)
	if err := st.Put(ctx, "other.parquet", bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		t.Fatal(err)
	}
	src, err := OpenSource(ctx, st, "other.parquet", -1)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m, err := src.MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	data, start, err := src.ChunkBytes(m)
	if err != nil {
		t.Fatal(err)
	}

	// The new file: s (a constant, as a dictionary array), n (copied), v (encoded plain).
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	sb := array.NewStringBuilder(mem)
	sb.Append("only")
	dict := sb.NewArray()
	sb.Release()
	defer dict.Release()
	idx := array.NewInt32Builder(mem)
	for range rows {
		idx.Append(0)
	}
	ia := idx.NewArray()
	idx.Release()
	defer ia.Release()
	s := array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, ia, dict)
	defer s.Release()
	vb := array.NewInt32Builder(mem)
	for i := range rows {
		vb.Append(int32(rows - i))
	}
	v := vb.NewArray()
	vb.Release()
	defer v.Release()
	enc, err := EncodeChunks([]arrow.Field{schema.Field(0), schema.Field(2)}, [][]arrow.Array{{s}, {v}}, rows, Snappy)
	if err != nil {
		t.Fatal(err)
	}
	defer ReleaseChunks(enc)
	minMax := array.NewInt64Builder(mem)
	minMax.AppendValues([]int64{0, 36}, nil)
	mm := minMax.NewArray()
	minMax.Release()
	defer mm.Release()
	copied := Chunk{Data: data, Meta: m, Start: start, Values: []arrow.Array{mm}, Nulls: int64(n.NullN())}

	w := NewSpliceWriter(st, schema, WriterOptions{TempDir: t.TempDir()})
	var te *ChunkTypeError
	if err := w.WriteRowGroup(ctx, rows, []Chunk{enc[0], enc[1], copied}); !errors.As(err, &te) {
		t.Fatalf("chunks out of order: %v, want *ChunkTypeError", err)
	}
	for range 2 {
		if err := w.WriteRowGroup(ctx, rows, []Chunk{enc[0], copied, enc[1]}); err != nil {
			t.Fatal(err)
		}
	}
	files, err := w.Close(ctx)
	if err != nil || len(files) != 1 || files[0].NumRecords != 2*rows {
		t.Fatalf("files %+v, %v", files, err)
	}
	wantStats := `{"numRecords":2000,"minValues":{"s":"only","n":0,"v":1},"maxValues":{"s":"only","n":36,"v":1000},"nullCount":{"s":0,"n":200,"v":0}}`
	if files[0].Stats != wantStats {
		t.Fatalf("stats %s\nwant  %s", files[0].Stats, wantStats)
	}
	got := readAll(t, st, files[0].Path, nil)
	defer got.Release()
	if got.NumRows() != 2*rows {
		t.Fatalf("read %d rows", got.NumRows())
	}
	for i := range 2 * rows {
		j := i % rows
		if sv := got.Column(0).ValueStr(i); sv != "only" {
			t.Fatalf("row %d: s %q", i, sv)
		}
		if got.Column(1).ValueStr(i) != n.ValueStr(j) || got.Column(2).ValueStr(i) != v.ValueStr(j) {
			t.Fatalf("row %d: n %s v %s, want %s %s", i, got.Column(1).ValueStr(i), got.Column(2).ValueStr(i), n.ValueStr(j), v.ValueStr(j))
		}
	}
	out, err := OpenSource(ctx, st, files[0].Path, files[0].Size)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for g := range 2 {
		for c, want := range []compress.Compression{compress.Codecs.Snappy, compress.Codecs.Gzip, compress.Codecs.Snappy} {
			cm, err := out.MetaData().RowGroup(g).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if cm.Compression() != want {
				t.Errorf("row group %d column %d: %s, want %s", g, c, cm.Compression(), want)
			}
			ps, err := cm.Statistics()
			if err != nil || ps == nil || !ps.HasMinMax() {
				t.Fatalf("row group %d column %d: no statistics (%v)", g, c, err)
			}
			if c == 0 && (string(ps.EncodeMin()) != "only" || string(ps.EncodeMax()) != "only" || ps.NullCount() != 0) {
				t.Errorf("s statistics %q..%q nulls %d", ps.EncodeMin(), ps.EncodeMax(), ps.NullCount())
			}
			if c == 1 && ps.NullCount() != 100 {
				t.Errorf("n statistics: %d nulls", ps.NullCount())
			}
		}
	}
}

// A chunk of a file read by ranges (over SmallFileBytes) is read once: its pages are
// walked (ChunkPages) in the bytes ChunkBytes returned.
func TestChunkPagesReadNoMore(t *testing.T) {
	ctx := context.Background()
	mem := memory.DefaultAllocator
	const rows = 700_000
	sb, nb := array.NewStringBuilder(mem), array.NewInt64Builder(mem)
	for i := range rows {
		sb.Append([]string{"alpha", "beta", "gamma"}[i%3])
		nb.Append(int64(uint64(i) * 0x9E3779B97F4A7C15)) // incompressible: the file exceeds SmallFileBytes
	}
	s, n := sb.NewArray(), nb.NewArray()
	sb.Release()
	nb.Release()
	defer s.Release()
	defer n.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{s, n}, rows)
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rows)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() <= SmallFileBytes {
		t.Fatalf("file of %d bytes, want more than %d", buf.Len(), SmallFileBytes)
	}
	local, _ := newStore(t)
	if err := local.Put(ctx, "big.parquet", bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		t.Fatal(err)
	}
	st := &countingStore{Store: local}
	src, err := OpenSource(ctx, st, "big.parquet", int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m, err := src.MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	before := st.gets.Load()
	data, start, err := src.ChunkBytes(m)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := src.ChunkPages(0, 0, data, start)
	if err != nil {
		t.Fatal(err)
	}
	var pages, values int
	for pr.Next() {
		pages++
		values += int(pr.Page().NumValues())
	}
	if err := pr.Err(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	if got := st.gets.Load() - before; got != 1 {
		t.Fatalf("%d ranged reads for the chunk, want 1", got)
	}
	if pages < 2 || values != rows+3 { // the dictionary page's 3 values and every row's index
		t.Fatalf("%d pages, %d values", pages, values)
	}
}
