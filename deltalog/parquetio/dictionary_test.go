package parquetio

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// TestChooseEncoding: parquet-mr's rule on a sample decides plain, arrow-go's dictionary
// or the writer's own dictionary.
func TestChooseEncoding(t *testing.T) {
	mem := memory.DefaultAllocator
	strs := func(f func(i int) *string) arrow.Array {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		for i := range 1000 {
			if v := f(i); v != nil {
				b.Append(*v)
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	}
	ints := func(f func(i int) int64) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i := range 1000 {
			b.Append(f(i))
		}
		return b.NewArray()
	}
	p := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		a    arrow.Array
		want colEncoding
	}{
		{"unique strings", strs(func(i int) *string { return p(fmt.Sprintf("0x%020X", i)) }), encPlain},
		{"constant string", strs(func(int) *string { return p("dbo_orders") }), encOwnDict},
		{"few strings with NULLs", strs(func(i int) *string {
			if i%5 == 0 {
				return nil
			}
			return p([]string{"open", "shipped"}[i%2])
		}), encOwnDict},
		{"only NULLs", strs(func(int) *string { return nil }), encPlain},
		{"unique ints", ints(func(i int) int64 { return int64(i) * 7919 }), encPlain},
		{"few ints", ints(func(i int) int64 { return int64(i % 4) }), encDict},
	} {
		if got := chooseEncoding(tc.a); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
		tc.a.Release()
	}
}

// TestChooseEncodingsAllocations: counting distinct values does not allocate per value
// (fixed-width values are keyed as integers, strings and binaries in place), and the
// decisions on integer, decimal, binary and timestamp columns are parquet-mr's.
func TestChooseEncodingsAllocations(t *testing.T) {
	mem := memory.DefaultAllocator
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "few", Type: arrow.PrimitiveTypes.Int32},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}},
		{Name: "few_amounts", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}},
		{Name: "lsn", Type: arrow.BinaryTypes.Binary},
		{Name: "op", Type: arrow.BinaryTypes.Binary},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	const n = 4000
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 7919)
		b.Field(1).(*array.Int32Builder).Append(int32(i % 3))
		b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i) * 101))
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i % 5)))
		b.Field(4).(*array.BinaryBuilder).Append([]byte(fmt.Sprintf("%020d", i)))
		b.Field(5).(*array.BinaryBuilder).Append([]byte{byte(i % 2)})
		if i%10 == 0 {
			b.Field(6).(*array.TimestampBuilder).AppendNull()
		} else {
			b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(i / 4))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	want := []colEncoding{encPlain, encDict, encPlain, encDict, encPlain, encOwnDict, encDict}
	if got := chooseEncodings(rec); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("encodings %v, want %v", got, want)
	}
	// The sets grow a few times per column: far below one allocation per value.
	if allocs := testing.AllocsPerRun(5, func() { chooseEncodings(rec) }); allocs > n/10 {
		t.Errorf("chooseEncodings allocates %.0f times for %d rows of %d columns", allocs, n, len(want))
	}
}

// TestOwnDictionaries: string and binary columns of few values are written with the
// writer's own dictionaries (a dictionary page in every row group, statistics that match
// the values), across record slices, NULLs and row groups; a column that looked
// repetitive in the first rows and is not falls back to plain; everything reads back.
func TestOwnDictionaries(t *testing.T) {
	ctx := context.Background()
	st, dir := newStore(t)
	s := arrow.NewSchema([]arrow.Field{
		{Name: "few_s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "few_b", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "constant", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "turns_unique", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	const n, batch = 120_000, 7_001
	w := NewWriter(st, s, WriterOptions{RowGroupBytes: 1 << 20})
	var recs []arrow.RecordBatch
	for lo := 0; lo < n; lo += batch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		for i := lo; i < min(lo+batch, n); i++ {
			if i%7 == 3 {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.StringBuilder).Append([]string{"Alabama", "Ohio", "Wyoming", "Utah"}[i%4])
			}
			if i%11 == 5 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.BinaryBuilder).Append([]byte{byte(i % 3), 0xff})
			}
			b.Field(2).(*array.StringBuilder).Append("0x0000002A000001F00003")
			if i < 5000 {
				b.Field(3).(*array.StringBuilder).Append("same")
			} else {
				b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("value %d", i))
			}
			b.Field(4).(*array.Int64Builder).Append(int64(i))
		}
		rec := b.NewRecordBatch()
		b.Release()
		recs = append(recs, rec)
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	files, err := w.Close(ctx)
	if err != nil || len(files) != 1 {
		t.Fatalf("%v %v", files, err)
	}
	r, err := file.OpenParquetFile(filepath.Join(dir, files[0].Path), false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NumRowGroups() < 3 {
		t.Fatalf("%d row groups, want several", r.NumRowGroups())
	}
	var first int64
	for g := range r.NumRowGroups() {
		rg := r.MetaData().RowGroup(g)
		rows := rg.NumRows()
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			name := cc.PathInSchema().String()
			switch name {
			case "few_s", "few_b", "constant":
				if !cc.HasDictionaryPage() {
					t.Errorf("row group %d, %s: no dictionary page (encodings %v)", g, name, cc.Encodings())
				}
				checkChunkStats(t, g, name, cc, recs, first, first+rows)
			case "turns_unique":
				if g > 0 && cc.HasDictionaryPage() {
					t.Errorf("row group %d, %s: a dictionary page for unique values", g, name)
				}
			}
		}
		first += rows
	}
	// The Delta statistics of the dictionary columns come from the dictionaries (and from
	// the pieces for a row group whose dictionary did not pay): the same as the values'.
	var stats struct {
		NumRecords int64
		MinValues  map[string]any
		MaxValues  map[string]any
		NullCount  map[string]int64
	}
	if err := json.Unmarshal([]byte(files[0].Stats), &stats); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		min, max string
		nulls    int64
	}{
		{"few_s", "Alabama", "Wyoming", n/7 + 1},
		{"constant", "0x0000002A000001F00003", "0x0000002A000001F00003", 0},
		{"turns_unique", "same", "value 99999", 0},
	} {
		if stats.MinValues[c.name] != c.min || stats.MaxValues[c.name] != c.max || stats.NullCount[c.name] != c.nulls {
			t.Errorf("%s: Delta stats min %v max %v nulls %d, want %q %q %d", c.name, stats.MinValues[c.name], stats.MaxValues[c.name],
				stats.NullCount[c.name], c.min, c.max, c.nulls)
		}
	}
	back := readAll(t, st, files[0].Path, nil)
	defer back.Release()
	tbl := array.NewTableFromRecords(s, recs)
	defer tbl.Release()
	want := concatTable(t, tbl)
	defer want.Release()
	if !array.RecordEqual(want, back) {
		t.Fatal("the file does not read back as written")
	}
}

// checkChunkStats compares a column chunk's Parquet min, max and null count with the
// values of rows [lo, hi) of recs.
func checkChunkStats(t *testing.T, g int, name string, cc *metadata.ColumnChunkMetaData, recs []arrow.RecordBatch, lo, hi int64) {
	t.Helper()
	var minV, maxV string
	var nulls int64
	seen := false
	var pos int64
	for _, r := range recs {
		col := r.Column(r.Schema().FieldIndices(name)[0])
		for i := 0; i < col.Len(); i++ {
			if pos >= lo && pos < hi {
				if col.IsNull(i) {
					nulls++
				} else {
					v := col.ValueStr(i)
					if b, ok := col.(*array.Binary); ok {
						v = string(b.Value(i))
					}
					if !seen || v < minV {
						minV = v
					}
					if !seen || v > maxV {
						maxV = v
					}
					seen = true
				}
			}
			pos++
		}
	}
	stats, err := cc.Statistics()
	if err != nil || stats == nil || !stats.HasMinMax() {
		t.Fatalf("row group %d, %s: no statistics (%v)", g, name, err)
	}
	enc := stats.(*metadata.ByteArrayStatistics)
	if got := string(enc.Min()); got != minV {
		t.Errorf("row group %d, %s: min %q, want %q", g, name, got, minV)
	}
	if got := string(enc.Max()); got != maxV {
		t.Errorf("row group %d, %s: max %q, want %q", g, name, got, maxV)
	}
	if stats.NullCount() != nulls {
		t.Errorf("row group %d, %s: %d NULLs, want %d", g, name, stats.NullCount(), nulls)
	}
}

// concatTable is tbl's rows as one record.
func concatTable(t *testing.T, tbl arrow.Table) arrow.RecordBatch {
	t.Helper()
	cols := make([]arrow.Array, tbl.NumCols())
	for i := range cols {
		a, err := array.Concatenate(tbl.Column(i).Data().Chunks(), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		cols[i] = a
	}
	rec := array.NewRecordBatch(tbl.Schema(), cols, tbl.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// TestOwnDictionaryArray: ownDictionary turns slices with NULLs into one dictionary array
// of the same values, and refuses a dictionary that does not pay.
func TestOwnDictionaryArray(t *testing.T) {
	mem := memory.DefaultAllocator
	b := array.NewStringBuilder(mem)
	for i := range 3000 {
		if i%9 == 4 {
			b.AppendNull()
		} else {
			b.Append([]string{"a", "bb", "ccc"}[i%3])
		}
	}
	whole := b.NewArray()
	b.Release()
	defer whole.Release()
	pieces := []arrow.Array{array.NewSlice(whole, 0, 1001), array.NewSlice(whole, 1001, 1003), array.NewSlice(whole, 1003, 3000)}
	defer func() {
		for _, p := range pieces {
			p.Release()
		}
	}()
	d, ok := ownDictionary(arrow.BinaryTypes.String, pieces)
	if !ok {
		t.Fatal("no dictionary for three values")
	}
	defer d.Release()
	dict := d.(*array.Dictionary)
	if dict.Dictionary().Len() != 3 || d.Len() != 3000 || d.NullN() != whole.NullN() {
		t.Fatalf("dictionary of %d, %d rows, %d NULLs", dict.Dictionary().Len(), d.Len(), d.NullN())
	}
	values := dict.Dictionary().(*array.String)
	for i := range 3000 {
		if whole.IsNull(i) != d.IsNull(i) {
			t.Fatalf("row %d: NULL %v, want %v", i, d.IsNull(i), whole.IsNull(i))
		}
		if whole.IsValid(i) && values.Value(dict.GetValueIndex(i)) != whole.(*array.String).Value(i) {
			t.Fatalf("row %d: %q, want %q", i, values.Value(dict.GetValueIndex(i)), whole.(*array.String).Value(i))
		}
	}
	ub := array.NewStringBuilder(mem)
	for i := range 3000 {
		ub.Append(fmt.Sprintf("unique %d", i))
	}
	unique := ub.NewArray()
	ub.Release()
	defer unique.Release()
	if d, ok := ownDictionary(arrow.BinaryTypes.String, []arrow.Array{unique}); ok {
		d.Release()
		t.Fatal("a dictionary of unique values")
	}
}
