package parquetio

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// otherTypesSchema has the flat Arrow types bronze does not use, nullable and required,
// and schema metadata (written to the file's key-value metadata).
func otherTypesSchema() *arrow.Schema {
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32,
		arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Int8, arrow.FixedWidthTypes.Float16,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Date64,
		arrow.FixedWidthTypes.Time32ms, arrow.FixedWidthTypes.Time64us,
		&arrow.TimestampType{Unit: arrow.Second}, &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Nanosecond},
		arrow.BinaryTypes.LargeString, arrow.BinaryTypes.LargeBinary,
		&arrow.FixedSizeBinaryType{ByteWidth: 5}, &arrow.Decimal128Type{Precision: 5, Scale: 1},
		&arrow.Decimal128Type{Precision: 30, Scale: 3}, arrow.FixedWidthTypes.Boolean,
	}
	var fields []arrow.Field
	for i, dt := range types {
		fields = append(fields,
			arrow.Field{Name: fmt.Sprintf("n%02d", i), Type: dt, Nullable: true},
			arrow.Field{Name: fmt.Sprintf("r%02d", i), Type: dt})
	}
	md := arrow.NewMetadata([]string{"origin", "k"}, []string{"flat_test", "v"})
	return arrow.NewSchema(fields, &md)
}

// otherTypesRecord is n rows of otherTypesSchema from row start: a nullable column is NULL
// every seventh row; values repeat every 13 rows in odd columns (dictionaries) and are
// unique in the others.
func otherTypesRecord(s *arrow.Schema, start, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for r := start; r < start+n; r++ {
		for c, f := range s.Fields() {
			fb := b.Field(c)
			if f.Nullable && r%7 == 3 {
				fb.AppendNull()
				continue
			}
			v := r
			if (c/2)%2 == 1 {
				v = r % 13
			}
			switch fb := fb.(type) {
			case *array.Uint8Builder:
				fb.Append(uint8(v))
			case *array.Uint16Builder:
				fb.Append(uint16(v))
			case *array.Uint32Builder:
				fb.Append(uint32(v) * 7919)
			case *array.Uint64Builder:
				fb.Append(uint64(v) << 40)
			case *array.Int8Builder:
				fb.Append(int8(v))
			case *array.Float16Builder:
				fb.Append(float16.New(float32(v) / 4))
			case *array.Float32Builder:
				fb.Append(float32(v) * 1.5)
			case *array.Date64Builder:
				fb.Append(arrow.Date64(int64(v) * 86_400_000))
			case *array.Time32Builder:
				fb.Append(arrow.Time32(v * 1000))
			case *array.Time64Builder:
				fb.Append(arrow.Time64(int64(v) * 1_000_001))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(int64(v)*1_000_003 + 1_700_000_000))
			case *array.LargeStringBuilder:
				fb.Append(fmt.Sprintf("value %d", v))
			case *array.BinaryBuilder:
				fb.Append([]byte(fmt.Sprintf("b%d", v)))
			case *array.FixedSizeBinaryBuilder:
				fb.Append([]byte(fmt.Sprintf("%05d", v%100000)))
			case *array.Decimal128Builder:
				fb.Append(decimal128.FromI64(int64(v%1000)*37 - 500))
			case *array.BooleanBuilder:
				fb.Append(v%3 == 0)
			default:
				panic(fmt.Sprintf("no values for %T", fb))
			}
		}
	}
	return b.NewRecordBatch()
}

// TestFlatEncoderMatchesPqarrow: files of flat schemas written through arrow-go's column
// chunk writers (flatEncoder) are byte for byte the files pqarrow.FileWriter writes from
// the same records, with the same Delta statistics: every bronze type with extreme
// values and NULLs, an orders-like table with a string dictionary, a facts-like file,
// other Arrow types with schema metadata; one row to several row groups, records given
// as slices and in several pieces.
func TestFlatEncoderMatchesPqarrow(t *testing.T) {
	allTypes := mustSchema(t, allTypeColumns)
	orders := mustSchema(t, benchColumns)
	facts := factsLikeSchema()
	other := otherTypesSchema()
	dicts := ownDictSchema()
	type input struct {
		schema   *arrow.Schema
		recs     func() []arrow.RecordBatch
		rowGroup int64
	}
	bronzeRecs := func(s *arrow.Schema, sizes ...int) func() []arrow.RecordBatch {
		return func() []arrow.RecordBatch {
			var out []arrow.RecordBatch
			start := 0
			for _, n := range sizes {
				out = append(out, bronzeRecordFrom(memory.DefaultAllocator, s, start, n, start == 0))
				start += n
			}
			return out
		}
	}
	sliced := func(mk func() []arrow.RecordBatch, lo, hi int64) func() []arrow.RecordBatch {
		return func() []arrow.RecordBatch {
			var out []arrow.RecordBatch
			for _, r := range mk() {
				out = append(out, r.NewSlice(lo, min(hi, r.NumRows())))
				r.Release()
			}
			return out
		}
	}
	cases := map[string]input{
		"all bronze types, 1 row":           {allTypes, bronzeRecs(allTypes, 1), 0},
		"all bronze types, 3 rows":          {allTypes, bronzeRecs(allTypes, 3), 0},
		"all bronze types, 2,000 in pieces": {allTypes, bronzeRecs(allTypes, 500, 1, 1499), 0},
		"all bronze types, row groups":      {allTypes, bronzeRecs(allTypes, 3000, 2000), 64 << 10},
		"all bronze types, slices":          {allTypes, sliced(bronzeRecs(allTypes, 300, 300), 7, 250), 0},
		"orders, 1,000 rows":                {orders, bronzeRecs(orders, 1000), 0},
		"orders, 40,000 rows, row groups":   {orders, bronzeRecs(orders, 20000, 20000), 1 << 20},
		"facts-like, 1 row":                 {facts, func() []arrow.RecordBatch { return []arrow.RecordBatch{factsLikeRecord(facts, 0, 1)} }, 0},
		"facts-like, 70 rows":               {facts, func() []arrow.RecordBatch { return []arrow.RecordBatch{factsLikeRecord(facts, 0, 70)} }, 0},
		"other types, 1 row":                {other, func() []arrow.RecordBatch { return []arrow.RecordBatch{otherTypesRecord(other, 0, 1)} }, 0},
		"other types, 5,000 rows":           {other, func() []arrow.RecordBatch { return []arrow.RecordBatch{otherTypesRecord(other, 0, 5000)} }, 0},
		"other types, slices and row groups": {other, sliced(func() []arrow.RecordBatch {
			return []arrow.RecordBatch{otherTypesRecord(other, 0, 3000), otherTypesRecord(other, 3000, 3000)}
		}, 11, 2900), 32 << 10},
		"own dictionaries, 1 row":                {dicts, func() []arrow.RecordBatch { return []arrow.RecordBatch{dictsRecord(dicts, 0, 1, 0)} }, 0},
		"own dictionaries, NULLs and row groups": {dicts, dictsRecs(dicts, 3000, 3000, 2000), 16 << 10},
	}
	write := func(t *testing.T, in input, viaPqarrow bool) ([]byte, []File) {
		t.Helper()
		forcePqarrow = viaPqarrow
		defer func() { forcePqarrow = false }()
		var out bytes.Buffer
		w := NewWriter(discardStore{&out}, in.schema, WriterOptions{RowGroupBytes: in.rowGroup, TempDir: t.TempDir()})
		recs := in.recs()
		for _, r := range recs {
			if err := w.Write(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			r.Release()
		}
		files, err := w.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return out.Bytes(), files
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if !flatSchema(in.schema) {
				t.Fatal("the schema is not flat: nothing compared")
			}
			want, wantFiles := write(t, in, true)
			got, gotFiles := write(t, in, false)
			assertSameFiles(t, got, want, gotFiles, wantFiles)
		})
	}
}

// ownDictSchema has string and binary columns with few distinct values, which the writer
// encodes with dictionaries of its own (dictionary.go), nullable and required.
func ownDictSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "state", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "lsn", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "op", Type: arrow.BinaryTypes.String},
		{Name: "sparse", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "drifts", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// dictsRecord is n rows of ownDictSchema from row start: state NULL every fourth row and
// one of six values, lsn NULL every ninth row and one of three, op one of three, sparse
// NULL but every 50th row; drifts repeats in the first rows and is unique from row
// uniqueFrom on (when above zero), so a later row group's dictionary does not pay.
func dictsRecord(s *arrow.Schema, start, n, uniqueFrom int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for r := start; r < start+n; r++ {
		b.Field(0).(*array.Int64Builder).Append(int64(r))
		if r%4 == 1 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(statuses[r%len(statuses)])
		}
		if r%9 == 4 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.BinaryBuilder).Append([]byte{0, 0, 0, 0x2a, byte(r / 1000 % 3)})
		}
		b.Field(3).(*array.StringBuilder).Append([]string{"insert", "update", "delete"}[r%3])
		if r%50 == 7 {
			b.Field(4).(*array.StringBuilder).Append("rare")
		} else {
			b.Field(4).AppendNull()
		}
		if uniqueFrom > 0 && r >= uniqueFrom {
			b.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("unique value %08d", r))
		} else {
			b.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("v%d", r%5))
		}
	}
	return b.NewRecordBatch()
}

// dictsRecs are records of the given sizes, drifts unique from the last one on.
func dictsRecs(s *arrow.Schema, sizes ...int) func() []arrow.RecordBatch {
	return func() []arrow.RecordBatch {
		total := 0
		for _, n := range sizes {
			total += n
		}
		uniqueFrom := total - sizes[len(sizes)-1]
		var out []arrow.RecordBatch
		start := 0
		for _, n := range sizes {
			out = append(out, dictsRecord(s, start, n, uniqueFrom))
			start += n
		}
		return out
	}
}

// TestFlatSchema: nested, dictionary, extension-free flat schemas only go through the flat
// encoder.
func TestFlatSchema(t *testing.T) {
	for name, c := range map[string]struct {
		dt   arrow.DataType
		flat bool
	}{
		"int64":      {arrow.PrimitiveTypes.Int64, true},
		"string":     {arrow.BinaryTypes.String, true},
		"struct":     {arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}), false},
		"list":       {arrow.ListOf(arrow.PrimitiveTypes.Int32), false},
		"map":        {arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), false},
		"dictionary": {&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, false},
		"null":       {arrow.Null, false},
	} {
		s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: c.dt, Nullable: true}}, nil)
		if got := flatSchema(s); got != c.flat {
			t.Errorf("%s: flat %v, want %v", name, got, c.flat)
		}
	}
}

// TestConcurrentFlatWriters: writers of one schema at the same time (a step runs several)
// share the kept Parquet schema and properties; each writes the file one writer alone
// writes. Run with -race, it also checks that the shared schema is only read.
func TestConcurrentFlatWriters(t *testing.T) {
	s := mustSchema(t, benchColumns)
	write := func() ([]byte, error) {
		rec := bronzeRecordFrom(memory.DefaultAllocator, s, 0, 500, true)
		defer rec.Release()
		var out bytes.Buffer
		w := NewWriter(discardStore{&out}, s, WriterOptions{TempDir: t.TempDir()})
		if err := w.Write(context.Background(), rec); err != nil {
			return nil, err
		}
		_, err := w.Close(context.Background())
		return out.Bytes(), err
	}
	want, err := write()
	if err != nil {
		t.Fatal(err)
	}
	const writers = 4
	got := make([][]byte, writers)
	errs := make([]error, writers)
	done := make(chan int)
	for i := range writers {
		go func() {
			got[i], errs[i] = write()
			done <- i
		}()
	}
	for range writers {
		<-done
	}
	for i := range writers {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(got[i], want) {
			t.Errorf("writer %d wrote %d bytes unlike the lone writer's %d", i, len(got[i]), len(want))
		}
	}
}

// TestStartsPlainMatchesArrow: a dictionary column whose dictionary loses over the row
// group is started plain by the flat encoder (startsPlain) instead of being hashed and
// dropped by arrow-go's cost check; the files must be byte for byte pqarrow's. Every
// counted type, nullable and required, with the rows' distinct values swept across the
// rule's threshold (the first piece repeats five values, so each column is chosen for a
// dictionary; the rest cycle through distinct values), in one piece and in several, and
// with a row group per piece (a string column's own dictionary declined for a row group
// is then started plain too).
func TestStartsPlainMatchesArrow(t *testing.T) {
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32,
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16,
		arrow.PrimitiveTypes.Uint32, arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Time32s,
		arrow.FixedWidthTypes.Time64us, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Second}, &arrow.Decimal128Type{Precision: 9, Scale: 2},
		&arrow.Decimal128Type{Precision: 18, Scale: 2}, arrow.BinaryTypes.String, arrow.BinaryTypes.Binary,
	}
	var fields []arrow.Field
	for i, dt := range types {
		fields = append(fields,
			arrow.Field{Name: fmt.Sprintf("n%02d", i), Type: dt, Nullable: true},
			arrow.Field{Name: fmt.Sprintf("r%02d", i), Type: dt})
	}
	s := arrow.NewSchema(fields, nil)
	tmp := t.TempDir()
	record := func(start, n, distinct int) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		defer b.Release()
		for r := start; r < start+n; r++ {
			v := r % distinct
			for c, f := range s.Fields() {
				fb := b.Field(c)
				if f.Nullable && r%11 == 5 {
					fb.AppendNull()
					continue
				}
				switch fb := fb.(type) {
				case *array.Int8Builder:
					fb.Append(int8(v))
				case *array.Int16Builder:
					fb.Append(int16(v))
				case *array.Int32Builder:
					fb.Append(int32(v) * 7919)
				case *array.Int64Builder:
					fb.Append(int64(v) << 33)
				case *array.Uint8Builder:
					fb.Append(uint8(v))
				case *array.Uint16Builder:
					fb.Append(uint16(v))
				case *array.Uint32Builder:
					fb.Append(uint32(v) * 4_000_037)
				case *array.Date32Builder:
					fb.Append(arrow.Date32(v))
				case *array.Time32Builder:
					fb.Append(arrow.Time32(v))
				case *array.Time64Builder:
					fb.Append(arrow.Time64(int64(v) * 1_000_003))
				case *array.TimestampBuilder:
					fb.Append(arrow.Timestamp(int64(v)*1_000_003 + 1_700_000_000))
				case *array.Decimal128Builder:
					fb.Append(decimal128.FromI64(int64(v)*37 - 500))
				case *array.StringBuilder:
					fb.Append(fmt.Sprintf("value %d", v))
				case *array.BinaryBuilder:
					fb.Append([]byte(fmt.Sprintf("v%d", v)))
				default:
					panic(fmt.Sprintf("no values for %T", fb))
				}
			}
		}
		return b.NewRecordBatch()
	}
	write := func(t *testing.T, recs []arrow.RecordBatch, rowGroup int64, viaPqarrow bool) []byte {
		t.Helper()
		forcePqarrow = viaPqarrow
		defer func() { forcePqarrow = false }()
		var out bytes.Buffer
		w := NewWriter(discardStore{&out}, s, WriterOptions{TempDir: tmp, RowGroupBytes: rowGroup})
		for _, r := range recs {
			if err := w.Write(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	for _, rows := range []int{100, 1000, 3000} {
		for distinct := 6; distinct <= rows; distinct += rows / 11 {
			for _, c := range []struct {
				pieces   int
				rowGroup int64
			}{{1, 0}, {3, 0}, {2, 1}} {
				pieces := c.pieces
				t.Run(fmt.Sprintf("%d rows, %d distinct, %d pieces, row groups of %d bytes", rows, distinct, pieces, c.rowGroup), func(t *testing.T) {
					recs := []arrow.RecordBatch{record(0, 40, 5)}
					per := (rows - 40) / pieces
					for p := range pieces {
						n := per
						if p == pieces-1 {
							n = rows - 40 - per*(pieces-1)
						}
						recs = append(recs, record(40+per*p, n, distinct))
					}
					defer func() {
						for _, r := range recs {
							r.Release()
						}
					}()
					if got, want := write(t, recs, c.rowGroup, false), write(t, recs, c.rowGroup, true); !bytes.Equal(got, want) {
						t.Errorf("the file differs from pqarrow's: %d bytes against %d", len(got), len(want))
					}
				})
			}
		}
	}
}

// TestArrowIndexBytes: dictionaryLoses (arrowIndexBytes) agrees with arrow-go's own cost
// check value for value: for one int64 or string column of 100 or 1,000 rows, NULLs or
// not, and every count of distinct values (every third one of 1,000) for which the writer
// chooses a dictionary, the column written through arrow-go's dictionary encoder
// (pqarrow, the writer's properties for a dictionary column) has no dictionary page
// (arrow-go dropped it) exactly when dictionaryLoses says so; and the flat encoder's
// file is byte for byte pqarrow's.
func TestArrowIndexBytes(t *testing.T) {
	tmp := t.TempDir()
	for _, dt := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String} {
		for _, nullable := range []bool{false, true} {
			s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: dt, Nullable: nullable}}, nil)
			for _, rows := range []int{100, 1000} {
				checked := 0
				step := 1 + rows/400
				for distinct := 1; distinct <= rows; distinct += step {
					b := array.NewRecordBuilder(memory.DefaultAllocator, s)
					for r := range rows {
						if nullable && r%7 == 3 {
							b.Field(0).AppendNull()
							continue
						}
						switch fb := b.Field(0).(type) {
						case *array.Int64Builder:
							fb.Append(int64(r%distinct) * 1_000_003)
						case *array.StringBuilder:
							fb.Append(fmt.Sprintf("value %d", r%distinct))
						}
					}
					rec := b.NewRecordBatch()
					b.Release()
					if chooseEncodings(rec)[0] == encPlain {
						rec.Release()
						continue
					}
					checked++
					write := func(viaPqarrow bool) []byte {
						forcePqarrow = viaPqarrow
						defer func() { forcePqarrow = false }()
						var out bytes.Buffer
						w := NewWriter(discardStore{&out}, s, WriterOptions{TempDir: tmp})
						if err := w.Write(context.Background(), rec); err != nil {
							t.Fatal(err)
						}
						if _, err := w.Close(context.Background()); err != nil {
							t.Fatal(err)
						}
						return out.Bytes()
					}
					want, got := write(true), write(false)
					// arrow-go's own decision: the column through its dictionary encoder
					// with the writer's properties for a dictionary column.
					props, err := writerProperties(s, Snappy, []colEncoding{encDict})
					if err != nil {
						t.Fatal(err)
					}
					var arrowFile bytes.Buffer
					fw, err := pqarrow.NewFileWriter(s, &arrowFile, props, pqarrow.DefaultWriterProps())
					if err != nil {
						t.Fatal(err)
					}
					if err := fw.Write(rec); err != nil {
						t.Fatal(err)
					}
					if err := fw.Close(); err != nil {
						t.Fatal(err)
					}
					r, err := file.NewParquetReader(bytes.NewReader(arrowFile.Bytes()))
					if err != nil {
						t.Fatal(err)
					}
					cc, err := r.MetaData().RowGroup(0).ColumnChunk(0)
					if err != nil {
						t.Fatal(err)
					}
					width := 8
					if dt.ID() == arrow.STRING {
						width = 0
					}
					var seen distinctSets
					if loses := seen.dictionaryLoses([]arrow.Array{rec.Column(0)}, width); loses == cc.HasDictionaryPage() {
						t.Errorf("%s nullable %v, %d rows, %d distinct: dictionaryLoses %v, arrow-go's file has a dictionary page: %v", dt, nullable, rows, distinct, loses, cc.HasDictionaryPage())
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%s nullable %v, %d rows, %d distinct: the file differs from pqarrow's", dt, nullable, rows, distinct)
					}
					rec.Release()
				}
				if checked*step < rows/2 {
					t.Errorf("%s, %d rows: only %d dictionary columns checked", dt, rows, checked)
				}
			}
		}
	}
}

// The flat encoder's footers come from a template kept per writer settings
// (propsEntry.footerTemplate) with each file's own key-value metadata and row groups:
// files of schemas equal but for their metadata (arrow.Schema.Equal ignores it, so they
// share one entry), in turn, with one row group and several, are pqarrow's bytes.
func TestFlatFootersFollowArrow(t *testing.T) {
	base := mustSchema(t, benchColumns)
	md := arrow.NewMetadata([]string{"origin", "note"}, []string{"cdc", "kept per file"})
	withMeta := arrow.NewSchema(base.Fields(), &md)
	write := func(t *testing.T, s *arrow.Schema, rowGroup int64, viaPqarrow bool) []byte {
		t.Helper()
		forcePqarrow = viaPqarrow
		defer func() { forcePqarrow = false }()
		var out bytes.Buffer
		w := NewWriter(discardStore{&out}, s, WriterOptions{RowGroupBytes: rowGroup, TempDir: t.TempDir()})
		for start := 0; start < 3000; start += 1000 {
			r := bronzeRecordFrom(memory.DefaultAllocator, s, start, 1000, start == 0)
			if err := w.Write(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			r.Release()
		}
		if _, err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	for i, s := range []*arrow.Schema{base, withMeta, base, withMeta} {
		for _, rowGroup := range []int64{0, 16 << 10} {
			want := write(t, s, rowGroup, true)
			got := write(t, s, rowGroup, false)
			if !bytes.Equal(got, want) {
				t.Errorf("file %d (metadata %v), row groups of %d bytes: %d bytes, pqarrow's %d, differ", i, s.HasMetadata(), rowGroup, len(got), len(want))
			}
			if s.HasMetadata() && !bytes.Contains(got, []byte("kept per file")) {
				t.Errorf("file %d: the schema's metadata is not in its footer", i)
			}
		}
	}
}
