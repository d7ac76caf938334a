package parquetio

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// chunkDiff describes where two Parquet files differ, column chunk by column chunk: the
// first chunk whose footer entry (offsets, sizes, encodings, statistics) or bytes differ,
// for a failing byte comparison to say which column and what.
func chunkDiff(got, want []byte) string {
	gr, err := file.NewParquetReader(bytes.NewReader(got))
	if err != nil {
		return "ours unreadable: " + err.Error()
	}
	wr, err := file.NewParquetReader(bytes.NewReader(want))
	if err != nil {
		return "pqarrow's unreadable: " + err.Error()
	}
	if gr.NumRowGroups() != wr.NumRowGroups() {
		return fmt.Sprintf("%d row groups, pqarrow %d", gr.NumRowGroups(), wr.NumRowGroups())
	}
	for rg := range gr.NumRowGroups() {
		g, w := gr.MetaData().RowGroup(rg), wr.MetaData().RowGroup(rg)
		for c := range g.NumColumns() {
			gc, _ := g.ColumnChunk(c)
			wc, _ := w.ColumnChunk(c)
			desc := func(cc interface {
				DataPageOffset() int64
				TotalCompressedSize() int64
				TotalUncompressedSize() int64
				NumValues() int64
			}) string {
				return fmt.Sprintf("data@%d comp %d uncomp %d values %d", cc.DataPageOffset(), cc.TotalCompressedSize(), cc.TotalUncompressedSize(), cc.NumValues())
			}
			gd, wd := desc(gc), desc(wc)
			gd += fmt.Sprintf(" dict %v@%d enc %v stats %v", gc.HasDictionaryPage(), gc.DictionaryPageOffset(), gc.Encodings(), gc.EncodingStats())
			wd += fmt.Sprintf(" dict %v@%d enc %v stats %v", wc.HasDictionaryPage(), wc.DictionaryPageOffset(), wc.Encodings(), wc.EncodingStats())
			gs, _ := gc.StatsSet()
			ws, _ := wc.StatsSet()
			if gs {
				st, _ := gc.Statistics()
				e, _ := st.Encode()
				gd += fmt.Sprintf(" min %x max %x nulls %d", e.Min, e.Max, e.NullCount)
			}
			if ws {
				st, _ := wc.Statistics()
				e, _ := st.Encode()
				wd += fmt.Sprintf(" min %x max %x nulls %d", e.Min, e.Max, e.NullCount)
			}
			if gd != wd {
				return fmt.Sprintf("row group %d column %d (%s):\n ours   %s\n pqarrow %s", rg, c, gc.PathInSchema(), gd, wd)
			}
			start := gc.DataPageOffset()
			if gc.HasDictionaryPage() {
				start = gc.DictionaryPageOffset()
			}
			end := start + gc.TotalCompressedSize()
			if !bytes.Equal(got[start:end], want[start:end]) {
				i := 0
				for got[start+int64(i)] == want[start+int64(i)] {
					i++
				}
				return fmt.Sprintf("row group %d column %d (%s): bytes differ at +%d of [%d,%d): ours % x, pqarrow % x", rg, c, gc.PathInSchema(), i, start, end,
					got[start+int64(i):min(end, start+int64(i)+16)], want[start+int64(i):min(end, start+int64(i)+16)])
			}
		}
	}
	return strings.TrimSpace("no chunk differs: the footers or the bytes between chunks do")
}

// ownTestTypes are the flat Arrow types the own-chunk tests write: every one ownKindOf
// writes here, and some it leaves to arrow-go (seconds, unsigned, large, fixed-size,
// wide decimals, float16, date64), whose chunks must be pqarrow's all the same.
var ownTestTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32,
	arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Time32ms, arrow.PrimitiveTypes.Int64,
	arrow.FixedWidthTypes.Time64us, arrow.FixedWidthTypes.Time64ns,
	&arrow.TimestampType{Unit: arrow.Millisecond}, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
	&arrow.TimestampType{Unit: arrow.Nanosecond}, &arrow.Decimal128Type{Precision: 9, Scale: 2},
	&arrow.Decimal128Type{Precision: 18, Scale: 4}, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
	arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.BinaryTypes.Binary,
	// left to arrow-go
	arrow.FixedWidthTypes.Time32s, &arrow.TimestampType{Unit: arrow.Second}, arrow.PrimitiveTypes.Uint32,
	arrow.PrimitiveTypes.Uint64, arrow.BinaryTypes.LargeString, &arrow.FixedSizeBinaryType{ByteWidth: 3},
	&arrow.Decimal128Type{Precision: 30, Scale: 3}, arrow.FixedWidthTypes.Float16, arrow.PrimitiveTypes.Date64,
}

// valueShape is how a test column's values are made: NULL every nullEvery-th row (0:
// never, 1: always), distinct values cycling (0: each row its own), extremes at some rows
// (the type's minimum and maximum, NaN and the zeros of floats, empty and 0xff strings),
// strings strLen bytes long at least.
type valueShape struct {
	nullEvery, distinct int
	extremes            bool
	strLen              int
}

// appendShaped appends row r of a column of shape sh to fb.
func appendShaped(fb array.Builder, r int, sh valueShape, nullable bool) {
	if !nullable {
		sh.nullEvery = 0
	}
	if sh.nullEvery == 1 || (sh.nullEvery > 1 && r%sh.nullEvery == sh.nullEvery-1) {
		fb.AppendNull()
		return
	}
	v := int64(r)
	if sh.distinct > 0 {
		v = int64(r % sh.distinct)
	}
	v = v*2_654_435_761%1_000_003 - 500_000 // spread, both signs
	edge := -1
	if sh.extremes {
		edge = r % 11
	}
	str := func() string {
		switch edge {
		case 0:
			return ""
		case 1:
			return strings.Repeat("\xff", max(sh.strLen, 1))
		case 2:
			return "ünïcödé " + strings.Repeat("z", sh.strLen)
		}
		s := fmt.Sprintf("value %d ", v)
		if len(s) < sh.strLen {
			s += strings.Repeat(string(rune('a'+v%26)), sh.strLen-len(s))
		}
		return s
	}
	switch fb := fb.(type) {
	case *array.Int8Builder:
		fb.Append([]int8{int8(v), math.MinInt8, math.MaxInt8, 0}[max(edge, 0)%4])
	case *array.Int16Builder:
		fb.Append([]int16{int16(v), math.MinInt16, math.MaxInt16, 0}[max(edge, 0)%4])
	case *array.Int32Builder:
		fb.Append([]int32{int32(v), math.MinInt32, math.MaxInt32, 0}[max(edge, 0)%4])
	case *array.Uint32Builder:
		fb.Append([]uint32{uint32(v), 0, math.MaxUint32, 1 << 31}[max(edge, 0)%4])
	case *array.Uint64Builder:
		fb.Append([]uint64{uint64(v), 0, math.MaxUint64, 1 << 63}[max(edge, 0)%4])
	case *array.Int64Builder:
		fb.Append([]int64{v * 1_000_000_007, math.MinInt64, math.MaxInt64, 0}[max(edge, 0)%4])
	case *array.Date32Builder:
		fb.Append(arrow.Date32([]int64{v, -719162, 2932896, 0}[max(edge, 0)%4]))
	case *array.Date64Builder:
		fb.Append(arrow.Date64([]int64{v, -719162, 2932896, 0}[max(edge, 0)%4] * 86_400_000))
	case *array.Time32Builder:
		fb.Append(arrow.Time32([]int64{(v + 500_000) * 80, 0, 86_399_999, 1}[max(edge, 0)%4]))
	case *array.Time64Builder:
		fb.Append(arrow.Time64([]int64{(v + 500_000) * 80_000_000, 0, 86_399_999_999_999, 1}[max(edge, 0)%4]))
	case *array.TimestampBuilder:
		ts := []int64{v * 1_000_003_001, math.MinInt64, math.MaxInt64, 0}[max(edge, 0)%4]
		if fb.Type().(*arrow.TimestampType).Unit == arrow.Second {
			ts /= 1_000_000_000 // pqarrow scales seconds to milliseconds
		}
		fb.Append(arrow.Timestamp(ts))
	case *array.Decimal128Builder:
		p := fb.Type().(*arrow.Decimal128Type).Precision
		top := decimal128.GetMaxValue(p)
		fb.Append([]decimal128.Num{decimal128.FromI64(v), top.Negate(), top, decimal128.FromI64(0)}[max(edge, 0)%4])
	case *array.Float32Builder:
		fb.Append([]float32{float32(v) / 7, float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1)), -math.MaxFloat32, math.MaxFloat32}[max(edge, 0)%8])
	case *array.Float64Builder:
		fb.Append([]float64{float64(v) / 7, math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1), -math.MaxFloat64, math.MaxFloat64}[max(edge, 0)%8])
	case *array.Float16Builder:
		fb.Append(float16.New(float32(v%1000) / 4))
	case *array.BooleanBuilder:
		fb.Append(v%3 == 0)
	case *array.StringBuilder:
		fb.Append(str())
	case *array.LargeStringBuilder:
		fb.Append(str())
	case *array.BinaryBuilder:
		fb.Append([]byte(str()))
	case *array.FixedSizeBinaryBuilder:
		fb.Append([]byte{byte(v), byte(v >> 8), byte(max(edge, 0))})
	default:
		panic(fmt.Sprintf("no values for %T", fb))
	}
}

// shapedRecord is rows [start, start+n) of s, column i shaped shapes[i%len(shapes)].
func shapedRecord(s *arrow.Schema, start, n int, shapes []valueShape) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for r := start; r < start+n; r++ {
		for c := range s.NumFields() {
			appendShaped(b.Field(c), r, shapes[c%len(shapes)], s.Field(c).Nullable)
		}
	}
	return b.NewRecordBatch()
}

// writeBoth writes recs into one or more files through NewWriter, once through the flat
// encoder and once through pqarrow.FileWriter (forcePqarrow), and returns both, with the
// column chunks the flat encoder wrote itself.
func writeBoth(tb testing.TB, s *arrow.Schema, recs []arrow.RecordBatch, rowGroup int64) (got, want []byte, gotFiles, wantFiles []File, own int64) {
	return writeBothWith(tb, s, recs, WriterOptions{RowGroupBytes: rowGroup})
}

// writeBothWith is writeBoth with the writer options opts (TempDir set here).
func writeBothWith(tb testing.TB, s *arrow.Schema, recs []arrow.RecordBatch, opts WriterOptions) (got, want []byte, gotFiles, wantFiles []File, own int64) {
	tb.Helper()
	opts.TempDir = tb.TempDir()
	write := func(viaPqarrow bool) ([]byte, []File) {
		forcePqarrow = viaPqarrow
		defer func() { forcePqarrow = false }()
		var out bytes.Buffer
		w := NewWriter(discardStore{&out}, s, opts)
		for _, r := range recs {
			if err := w.Write(context.Background(), r); err != nil {
				tb.Fatal(err)
			}
		}
		files, err := w.Close(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		return out.Bytes(), files
	}
	want, wantFiles = write(true)
	before := ownChunks.Load()
	got, gotFiles = write(false)
	own = ownChunks.Load() - before
	// arrow-go lists a column chunk's encoding stats from a Go map: a chunk whose
	// dictionary fell back to plain after a page (two data page encodings) lists them in
	// either order (the map's iteration starts at a random slot), in pqarrow's files as in
	// these. Such files are the same when both sides, written again a few times, agree.
	for try := 0; try < 16 && !bytes.Equal(got, want); try++ {
		if try%2 == 0 {
			got, gotFiles = write(false)
		} else {
			want, wantFiles = write(true)
		}
	}
	return got, want, gotFiles, wantFiles, own
}

// assertSameFiles fails tb unless the flat encoder's files are pqarrow's byte for byte,
// with the same Delta statistics.
func assertSameFiles(tb testing.TB, got, want []byte, gotFiles, wantFiles []File) {
	tb.Helper()
	if !bytes.Equal(got, want) {
		tb.Errorf("the files differ from pqarrow's: %d bytes against %d; %s", len(got), len(want), chunkDiff(got, want))
	}
	if len(gotFiles) != len(wantFiles) {
		tb.Fatalf("%d files, pqarrow %d", len(gotFiles), len(wantFiles))
	}
	for i := range gotFiles {
		g, w := gotFiles[i], wantFiles[i]
		if g.Size != w.Size || g.NumRecords != w.NumRecords || g.Stats != w.Stats {
			tb.Errorf("file %d: size %d rows %d stats %s; pqarrow %d %d %s", i, g.Size, g.NumRecords, g.Stats, w.Size, w.NumRecords, w.Stats)
		}
	}
}

// TestOwnChunksMatchPqarrow: files whose column chunks the flat encoder writes itself
// (ownchunk.go) are byte for byte pqarrow.FileWriter's, for every type it writes and some
// it leaves to arrow-go, nullable and required, with no NULL, some and only NULLs; plain
// (unique values) and dictionaries (few distinct: the writer's own for strings and
// binaries, arrow-go's for the rest, or started plain); type extremes, NaN and signed
// zeros, empty strings, 0xff and Unicode; statistics past MaxStatsSize and footer entries
// past arrow-go's 4 KiB buffer (long strings), in one page and over several; values just
// under, at and over DataPageSize; one row to several row groups, in pieces.
func TestOwnChunksMatchPqarrow(t *testing.T) {
	var fields []arrow.Field
	for i, dt := range ownTestTypes {
		fields = append(fields,
			arrow.Field{Name: fmt.Sprintf("n%02d", i), Type: dt, Nullable: true},
			arrow.Field{Name: fmt.Sprintf("r%02d", i), Type: dt})
	}
	all := arrow.NewSchema(fields, nil)
	type input struct {
		schema   *arrow.Schema
		sizes    []int
		shapes   []valueShape
		rowGroup int64
		// own is how many column chunks the flat encoder writes itself (the rest go
		// through arrow-go's column chunk writer): a change of path shows here.
		own int64
	}
	oneCol := func(dt arrow.DataType, nullable bool) *arrow.Schema {
		return arrow.NewSchema([]arrow.Field{{Name: "v", Type: dt, Nullable: nullable}}, nil)
	}
	str, i64 := arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64
	cases := map[string]input{
		"every type, 1 row":                        {all, []int{1}, []valueShape{{}}, 0, 34},
		"every type, unique":                       {all, []int{1000}, []valueShape{{nullEvery: 5}}, 0, 34},
		"every type, unique, extremes":             {all, []int{1000}, []valueShape{{nullEvery: 5, extremes: true}}, 0, 30},
		"every type, few distinct":                 {all, []int{1000}, []valueShape{{nullEvery: 3, distinct: 4}}, 0, 30},
		"every type, few distinct, extremes":       {all, []int{2000}, []valueShape{{nullEvery: 7, distinct: 11, extremes: true}}, 0, 30},
		"every type, only NULLs":                   {all, []int{300}, []valueShape{{nullEvery: 1}}, 0, 34},
		"every type, in pieces":                    {all, []int{1, 700, 299, 1500}, []valueShape{{nullEvery: 4, extremes: true}}, 0, 34},
		"every type, row groups":                   {all, []int{3000, 3000, 1000}, []valueShape{{nullEvery: 9, extremes: true}, {distinct: 3}}, 64 << 10, 90},
		"every type, long strings":                 {all, []int{200}, []valueShape{{nullEvery: 6, strLen: 2100, extremes: true}}, 0, 30},
		"every type, strings past MaxStatsSize":    {all, []int{50}, []valueShape{{strLen: 5000, extremes: true}}, 0, 30},
		"empty strings only":                       {oneCol(str, true), []int{1000}, []valueShape{{nullEvery: 3, distinct: 1, extremes: true}}, 0, 1},
		"one string, dictionary":                   {oneCol(str, false), []int{1000}, []valueShape{{distinct: 1}}, 0, 1},
		"long strings, unique":                     {oneCol(str, true), []int{200}, []valueShape{{nullEvery: 6, strLen: 2100}}, 0, 1},
		"long strings, few distinct":               {oneCol(str, false), []int{200}, []valueShape{{distinct: 3, strLen: 2100}}, 0, 1},
		"long strings, own dictionary":             {oneCol(str, true), []int{400}, []valueShape{{nullEvery: 5, distinct: 3, strLen: 2100, extremes: true}}, 0, 1},
		"long strings, 4 KiB entry edge":           {oneCol(str, false), []int{30}, []valueShape{{strLen: 1900, extremes: true}}, 0, 1},
		"long strings over a page, own dictionary": {oneCol(str, true), []int{700}, []valueShape{{nullEvery: 8, strLen: 2100, extremes: true}}, 0, 1},
		"int64 just under a page":                  {oneCol(i64, false), []int{131071}, []valueShape{{}}, 0, 1},
		"int64 a page (arrow-go's)":                {oneCol(i64, false), []int{131072}, []valueShape{{}}, 0, 0},
		"int64 over a page (arrow-go's)":           {oneCol(i64, false), []int{131073}, []valueShape{{}}, 0, 0},
		"int64 a page with NULLs (own)":            {oneCol(i64, true), []int{131073}, []valueShape{{nullEvery: 50}}, 0, 1},
		"few distinct int64, many rows":            {oneCol(i64, true), []int{70000}, []valueShape{{nullEvery: 13, distinct: 5000}}, 0, 1},
	}
	// Strings whose plain size is one byte under DataPageSize (written here), exactly it
	// and one over (arrow-go's).
	for _, d := range []int{-1, 0, 1} {
		cases[fmt.Sprintf("strings of a page %+d bytes", d)] = input{oneCol(str, false), nil, nil, 0, int64(max(-d, 0))}
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			var recs []arrow.RecordBatch
			if in.sizes == nil {
				recs = []arrow.RecordBatch{pageEdgeStrings(t, name)}
			} else {
				start := 0
				for _, n := range in.sizes {
					recs = append(recs, shapedRecord(in.schema, start, n, in.shapes))
					start += n
				}
			}
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			got, want, gotFiles, wantFiles, own := writeBoth(t, recs[0].Schema(), recs, in.rowGroup)
			assertSameFiles(t, got, want, gotFiles, wantFiles)
			if own != in.own {
				t.Errorf("%d column chunks written here, want %d", own, in.own)
			}
		})
	}
}

// TestOwnChunksMatchPqarrowZstd: with zstd (a table may ask for it), the chunks written
// here are compressed as arrow-go's page writer compresses them, at the codec's level.
func TestOwnChunksMatchPqarrowZstd(t *testing.T) {
	var fields []arrow.Field
	for i, dt := range ownTestTypes {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("n%02d", i), Type: dt, Nullable: true})
	}
	s := arrow.NewSchema(fields, nil)
	recs := []arrow.RecordBatch{
		shapedRecord(s, 0, 700, []valueShape{{nullEvery: 5}, {distinct: 3}}),
		shapedRecord(s, 700, 300, []valueShape{{nullEvery: 5}, {distinct: 3}}),
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	got, want, gotFiles, wantFiles, own := writeBothWith(t, s, recs, WriterOptions{Codec: Zstd})
	assertSameFiles(t, got, want, gotFiles, wantFiles)
	if own == 0 {
		t.Error("no column chunk written here")
	}
}

// pageEdgeStrings is 16 unique strings whose plain size (4-byte lengths and bytes) is
// DataPageSize plus the offset named at the end of name ("... -1 bytes").
func pageEdgeStrings(tb testing.TB, name string) arrow.RecordBatch {
	var d int
	if _, err := fmt.Sscanf(name[strings.LastIndex(name, " ")-2:], "%d bytes", &d); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	const n = 16
	total := int(parquet.DefaultDataPageSize) + d - 4*n
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for i := range n {
		l := total / n
		if i == n-1 {
			l = total - l*(n-1)
		}
		b.Append(fmt.Sprintf("%02d", i) + strings.Repeat("x", l-2))
	}
	col := b.NewArray()
	defer col.Release()
	s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	return array.NewRecordBatch(s, []arrow.Array{col}, n)
}

// TestFooterEntrySpillFollowsArrow: FooterEntrySpill writes exactly what arrow-go's own
// serialization of a column chunk's footer entry leaves in the file
// (ColumnChunkMetaDataBuilder.WriteTo, through thrift's never-flushed 4 KiB bufio.Writer):
// nothing while the entry fits the buffer, then 4 KiB blocks, or a long field whole when
// the buffer is empty as it comes. String statistics of every length pair around the
// edges (every maximum length across the entry's 4 KiB and 8 KiB, one field alone past
// 4 KiB), for a short and a long column name.
func TestFooterEntrySpillFollowsArrow(t *testing.T) {
	var scratch FooterEntryScratch
	checked, spilled := 0, 0
	for _, name := range []string{"v", strings.Repeat("long_column_name_", 40)} {
		s := arrow.NewSchema([]arrow.Field{{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
		e, err := fileSettings(s, Snappy, []colEncoding{encPlain})
		if err != nil {
			t.Fatal(err)
		}
		his := []int{0, 1, 100}
		for _, r := range [][2]int{{1900, 2200}, {3900, 4200}, {7900, 8300}} {
			for l := r[0]; l <= r[1]; l++ {
				his = append(his, l)
			}
		}
		for _, lo := range []int{0, 1, 100, 1990, 2047, 2048, 2100, 4097, 6000} {
			for _, hi := range his {
				fmb := metadata.NewFileMetadataBuilder(e.pqSchema, e.props, nil)
				meta := fmb.AppendRowGroup().NextColumnChunk()
				var st metadata.EncodedStatistics
				st.SetMin(bytes.Repeat([]byte{'a'}, lo))
				st.SetMax(bytes.Repeat([]byte{'z'}, hi))
				st.SetNullCount(3)
				meta.SetStats(st)
				if err := meta.Finish(metadata.ChunkMetaInfo{NumValues: 1000, IndexPageOffset: -1, DataPageOffset: 1 << 20, CompressedSize: 70000, UncompressedSize: 90000},
					false, false, metadata.EncodingStats{DataEncodingStats: map[parquet.Encoding]int32{parquet.Encodings.Plain: 1}}); err != nil {
					t.Fatal(err)
				}
				var want, got bytes.Buffer
				if _, err := meta.WriteTo(&want); err != nil {
					t.Fatal(err)
				}
				if err := FooterEntrySpill(meta, &got, &scratch); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("column %.10s…, min %d and max %d bytes: %d bytes spilled, arrow-go %d", name, lo, hi, got.Len(), want.Len())
				}
				checked++
				if want.Len() > 0 {
					spilled++
				}
			}
		}
	}
	if spilled == 0 || spilled == checked {
		t.Errorf("%d of %d entries spill: the edge is not crossed", spilled, checked)
	}
}

// FuzzOwnChunksMatchPqarrow: files of two columns of any of ownTestTypes, shaped by the
// input (NULLs, distinct values, extremes, string lengths around the statistics and
// footer-entry limits, rows, pieces, row groups), are byte for byte pqarrow.FileWriter's.
// Its seeds run in the plain go test; fuzz with
//
//	go test ./deltalog/parquetio -run '^$' -fuzz FuzzOwnChunksMatchPqarrow -fuzztime 5m
func FuzzOwnChunksMatchPqarrow(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{0, 5, 3, 0, 0, 0, 3, 232, 0, 1, 0},    // int8, int64; 1,000 unique rows
		{16, 17, 1, 4, 3, 1, 7, 208, 4, 2, 0},  // string, binary; few distinct, long
		{16, 16, 3, 5, 0, 1, 0, 200, 5, 1, 0},  // strings of 2,100 bytes: entries past 4 KiB
		{16, 22, 2, 0, 0, 1, 0, 120, 6, 3, 1},  // strings past MaxStatsSize, large string
		{13, 14, 3, 3, 0, 1, 15, 160, 0, 4, 2}, // floats with NaN and zeros, pieces, row groups
		{15, 11, 1, 1, 0, 0, 1, 0, 0, 1, 0},    // only NULLs
		{9, 12, 3, 7, 9, 1, 11, 184, 0, 2, 1},  // timestamps, decimals, few distinct
		{3, 4, 0, 0, 0, 1, 0, 1, 0, 1, 0},      // one row
		{16, 16, 1, 2, 1, 1, 3, 0, 2, 1, 0},    // one distinct string, empty at times
		{18, 20, 3, 6, 0, 1, 15, 255, 3, 3, 2}, // left to arrow-go: seconds, unsigned
		{16, 0, 0, 0, 0, 0, 1, 4, 7, 1, 0},     // strings of 4,097 bytes
		{17, 17, 3, 9, 5, 1, 5, 0, 5, 2, 1},    // binaries of 2,100 bytes, own dictionary
	} {
		f.Add(seed)
	}
	strLens := []int{0, 3, 40, 1000, 2040, 2100, 4095, 4097}
	f.Fuzz(func(t *testing.T, in []byte) {
		at := func(i int) int {
			if i < len(in) {
				return int(in[i])
			}
			return 0
		}
		t1, t2 := ownTestTypes[at(0)%len(ownTestTypes)], ownTestTypes[at(1)%len(ownTestTypes)]
		s := arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: t1, Nullable: at(2)&1 != 0},
			{Name: "b", Type: t2, Nullable: at(2)&2 != 0},
		}, nil)
		sh := valueShape{nullEvery: at(3) % 12, extremes: at(5)&1 != 0, strLen: strLens[at(8)%len(strLens)]}
		if d := at(4); d%2 == 1 {
			sh.distinct = d
		}
		rows := 1 + (at(6)<<8|at(7))%4000
		if sh.strLen > 1000 {
			rows = min(rows, 600)
		}
		pieces := 1 + at(9)%4
		rowGroup := []int64{0, 16 << 10, 256 << 10}[at(10)%3]
		var recs []arrow.RecordBatch
		start := 0
		for p := range pieces {
			n := rows / pieces
			if p == pieces-1 {
				n = rows - start
			}
			recs = append(recs, shapedRecord(s, start, n, []valueShape{sh}))
			start += n
		}
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
		got, want, gotFiles, wantFiles, _ := writeBoth(t, s, recs, rowGroup)
		assertSameFiles(t, got, want, gotFiles, wantFiles)
	})
}

// TestOwnIntDictionariesMatchPqarrow: integer columns that arrow-go's writer starts with a
// dictionary (the file's rows repeat enough) and drops by its cost rule after one batch of
// WriteBatchSize values or after two (though the whole chunk's dictionary would pay), or
// keeps, NULLs or not, in one piece or several (arrow-go checks at each piece's batches),
// int32 and int64: the chunks written here are pqarrow's byte for byte.
func TestOwnIntDictionariesMatchPqarrow(t *testing.T) {
	patterns := map[string]func(r int) int64{
		"unique first batch, then repeats": func(r int) int64 {
			if r < 1024 {
				return int64(r) * 7919
			}
			return int64(r % 5)
		},
		"repeats, then unique": func(r int) int64 { // kept: the last batches' unique values do not tip it
			if r < 2500 {
				return int64(r % 5)
			}
			return int64(r) * 7919
		},
		"repeats, unique up to the second batch's end, repeats": func(r int) int64 { // dropped after two batches
			if r >= 300 && r < 2048 {
				return int64(r) * 7919
			}
			return int64(r % 5)
		},
		"repeats throughout": func(r int) int64 { return int64(r%37) - 18 },
	}
	dicts := map[string][]bool{}
	for name, value := range patterns {
		for _, dt := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32} {
			for _, nullable := range []bool{false, true} {
				for _, pieces := range []int{1, 3} {
					s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: dt, Nullable: nullable}}, nil)
					const rows = 4000
					var recs []arrow.RecordBatch
					for p := range pieces {
						b := array.NewRecordBuilder(memory.DefaultAllocator, s)
						for r := p * rows / pieces; r < (p+1)*rows/pieces; r++ {
							switch fb := b.Field(0).(type) {
							case *array.Int64Builder:
								fb.Append(value(r))
							case *array.Int32Builder:
								if nullable && r%7 == 3 {
									fb.AppendNull()
								} else {
									fb.Append(int32(value(r)))
								}
							}
						}
						recs = append(recs, b.NewRecordBatch())
						b.Release()
					}
					got, want, gotFiles, wantFiles, own := writeBoth(t, s, recs, 0)
					for _, r := range recs {
						r.Release()
					}
					if !bytes.Equal(got, want) || own != 1 {
						t.Errorf("%s, %s nullable %v, %d pieces: %d chunks written here (want 1); %s", name, dt, nullable, pieces, own, chunkDiff(got, want))
					}
					assertSameFiles(t, got, want, gotFiles, wantFiles)
					r, err := file.NewParquetReader(bytes.NewReader(want))
					if err != nil {
						t.Fatal(err)
					}
					cc, err := r.MetaData().RowGroup(0).ColumnChunk(0)
					if err != nil {
						t.Fatal(err)
					}
					dicts[name] = append(dicts[name], cc.HasDictionaryPage())
				}
			}
		}
	}
	// The patterns take the paths they are named for: arrow-go keeps the dictionaries of
	// the repeating columns and drops the others' after one batch or two.
	for name, has := range dicts {
		for _, h := range has {
			if h != (name == "repeats throughout" || name == "repeats, then unique") {
				t.Errorf("%s: pqarrow's chunks with a dictionary page: %v", name, has)
				break
			}
		}
	}
}
