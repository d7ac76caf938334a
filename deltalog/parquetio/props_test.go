package parquetio

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestWriterPropertiesCache: the kept properties are those of an equal schema (another
// *arrow.Schema with the same fields gets them), never of a schema that differs in a
// field's name, type or nullability, nor of other encodings or another codec.
func TestWriterPropertiesCache(t *testing.T) {
	field := func(name string, dt arrow.DataType, nullable bool) *arrow.Schema {
		return arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: name, Type: dt, Nullable: nullable},
		}, nil)
	}
	base := field("v", arrow.BinaryTypes.String, true)
	encs := []colEncoding{encPlain, encOwnDict}
	props := func(s *arrow.Schema, codec Codec, encs []colEncoding) any {
		t.Helper()
		p, err := writerProperties(s, codec, encs)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := props(base, Snappy, encs)
	if got := props(field("v", arrow.BinaryTypes.String, true), Snappy, []colEncoding{encPlain, encOwnDict}); got != first {
		t.Error("an equal schema and encodings did not get the kept properties")
	}
	for name, other := range map[string]any{
		"another name":        props(field("w", arrow.BinaryTypes.String, true), Snappy, encs),
		"another type":        props(field("v", arrow.BinaryTypes.Binary, true), Snappy, encs),
		"another nullability": props(field("v", arrow.BinaryTypes.String, false), Snappy, encs),
		"another encoding":    props(base, Snappy, []colEncoding{encPlain, encPlain}),
		"another codec":       props(base, Zstd, encs),
	} {
		if other == first {
			t.Errorf("%s got the properties kept for the first schema", name)
		}
	}
	// More combinations than are kept: the first is built again, and still right.
	for i := range propsCacheSize + 2 {
		props(field(fmt.Sprintf("f%d", i), arrow.PrimitiveTypes.Int32, true), Snappy, encs)
	}
	if props(base, Snappy, encs) == first {
		t.Error("the cache kept more than propsCacheSize combinations")
	}
}

// TestSameNamesOtherTypesReadBack: files of two schemas with the same column names and
// different types, written one after the other (the second after the first's properties
// were kept), each read back with its own types and values.
func TestSameNamesOtherTypesReadBack(t *testing.T) {
	st, _ := newStore(t)
	mem := memory.DefaultAllocator
	for _, tc := range []struct {
		dt   arrow.DataType
		fill func(b array.Builder, i int)
	}{
		{arrow.PrimitiveTypes.Int64, func(b array.Builder, i int) { b.(*array.Int64Builder).Append(int64(i) << 40) }},
		{arrow.PrimitiveTypes.Int32, func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(i % 3)) }},
		{arrow.BinaryTypes.String, func(b array.Builder, i int) { b.(*array.StringBuilder).Append(fmt.Sprint("s", i%2)) }},
	} {
		s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: tc.dt, Nullable: true}}, nil)
		b := array.NewRecordBuilder(mem, s)
		for i := range 50 {
			tc.fill(b.Field(0), i)
		}
		rec := b.NewRecordBatch()
		b.Release()
		f := writeOne(t, st, s, rec)
		got := readAll(t, st, f.Path, nil)
		if !arrow.TypeEqual(got.Column(0).DataType(), tc.dt) || !array.Equal(got.Column(0), rec.Column(0)) {
			t.Errorf("%s: read back %s %v, want %v", tc.dt, got.Column(0).DataType(), got.Column(0), rec.Column(0))
		}
		got.Release()
		rec.Release()
	}
}

// TestConsecutiveSmallFilesReadBack: files written one after the other by new Writers, as
// a stream batch writes them (the kept properties, the pooled distinct sets and
// dictionary builders, the in-memory file buffers reused), each read back exactly: no
// value of one file shows in the next.
func TestConsecutiveSmallFilesReadBack(t *testing.T) {
	st, _ := newStore(t)
	s := mustSchema(t, benchColumns)
	var paths []string
	var recs []arrow.RecordBatch
	for i, n := range []int{1000, 3, 1000, 1} {
		rec := bronzeRecordFrom(memory.DefaultAllocator, s, i*7919, n, i == 1)
		defer rec.Release()
		f := writeOne(t, st, s, rec)
		paths = append(paths, f.Path)
		recs = append(recs, rec)
	}
	for i, p := range paths {
		got := readAll(t, st, p, nil)
		if !array.RecordEqual(got, recs[i]) {
			t.Errorf("file %d does not read back as written", i)
		}
		got.Release()
	}
}
