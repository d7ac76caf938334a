package parquetio

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/klauspost/compress/snappy"
)

// TestDictionaryFallsBackOnUniqueColumns: a column of unique values is written plain
// (no dictionary page), a column of a few repeated values keeps its dictionary, and
// both read back.
func TestDictionaryFallsBackOnUniqueColumns(t *testing.T) {
	st, dir := newStore(t)
	s := arrow.NewSchema([]arrow.Field{
		{Name: "unique_s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "unique_i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "few_s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "few_i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	const n = 50_000
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("0x%020X", i*7919))
		b.Field(1).(*array.Int64Builder).Append(int64(i) * 1_000_003)
		b.Field(2).(*array.StringBuilder).Append([]string{"open", "shipped", "closed"}[i%3])
		b.Field(3).(*array.Int32Builder).Append(int32(i % 4))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f := writeOne(t, st, s, rec)
	r, err := file.OpenParquetFile(filepath.Join(dir, f.Path), false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := map[string]bool{"unique_s": false, "unique_i": false, "few_s": true, "few_i": true}
	rg := r.MetaData().RowGroup(0)
	for c := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		name := cc.PathInSchema().String()
		if got := cc.HasDictionaryPage(); got != want[name] {
			t.Errorf("%s: dictionary page %v, want %v (encodings %v)", name, got, want[name], cc.Encodings())
		}
	}
	back := readAll(t, st, f.Path, nil)
	defer back.Release()
	if !array.RecordEqual(rec, back) {
		t.Fatal("the file does not read back as written")
	}
}

// TestSnappyCodecIsStandardSnappy: the process's Snappy codec is the fast encoder and its
// blocks decode with the reference Snappy decoder.
func TestSnappyCodecIsStandardSnappy(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Snappy)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(fastSnappy); !ok {
		t.Fatalf("snappy codec is %T, want fastSnappy", c)
	}
	src := bytes.Repeat([]byte("0x0000000000000000A1B2 customer-0001234 shipped "), 2000)
	enc := c.Encode(nil, src)
	if len(enc) >= len(src)/4 {
		t.Errorf("encoded %d bytes of %d: not compressed", len(enc), len(src))
	}
	dec, err := snappy.Decode(nil, enc)
	if err != nil || !bytes.Equal(dec, src) {
		t.Fatalf("reference decoder: %v, equal %v", err, bytes.Equal(dec, src))
	}
	if dec2 := c.Decode(nil, enc); !bytes.Equal(dec2, src) {
		t.Fatal("codec does not decode its own output")
	}
}
