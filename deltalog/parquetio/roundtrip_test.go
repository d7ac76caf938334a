package parquetio

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

func newStore(t *testing.T) (*localstore.Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st, dir
}

// writeOne writes rec with a new Writer of default options and returns its one file.
func writeOne(t *testing.T, st storage.Store, s *arrow.Schema, rec arrow.RecordBatch) File {
	t.Helper()
	ctx := context.Background()
	w := NewWriter(st, s, WriterOptions{})
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	files, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("wrote %d files, want 1", len(files))
	}
	return files[0]
}

// readAll reads a file's batches and concatenates them into one record.
func readAll(t *testing.T, st storage.Store, key string, columns []string) arrow.RecordBatch {
	t.Helper()
	ctx := context.Background()
	it, err := ReadFile(ctx, st, key, columns)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var recs []arrow.RecordBatch
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, it.Schema())
		defer b.Release()
		return b.NewRecordBatch()
	}
	tbl := array.NewTableFromRecords(it.Schema(), recs)
	defer tbl.Release()
	for _, r := range recs {
		r.Release()
	}
	cols := make([]arrow.Array, tbl.NumCols())
	for i := range cols {
		c, err := array.Concatenate(tbl.Column(i).Data().Chunks(), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		cols[i] = c
	}
	return array.NewRecordBatch(it.Schema(), cols, tbl.NumRows())
}

func assertSameRecord(t *testing.T, want, got arrow.RecordBatch) {
	t.Helper()
	if want.NumRows() != got.NumRows() || want.NumCols() != got.NumCols() {
		t.Fatalf("got %d rows × %d cols, want %d × %d", got.NumRows(), got.NumCols(), want.NumRows(), want.NumCols())
	}
	for i, f := range want.Schema().Fields() {
		g := got.Schema().Field(i)
		if g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) {
			t.Errorf("column %d: got %s %s, want %s %s", i, g.Name, g.Type, f.Name, f.Type)
			continue
		}
		if !array.Equal(want.Column(i), got.Column(i)) {
			for r := 0; r < int(want.NumRows()); r++ {
				if want.Column(i).ValueStr(r) != got.Column(i).ValueStr(r) || want.Column(i).IsNull(r) != got.Column(i).IsNull(r) {
					t.Errorf("column %s row %d: got %s, want %s", f.Name, r, got.Column(i).ValueStr(r), want.Column(i).ValueStr(r))
					break
				}
			}
		}
	}
}

func TestRoundTripEveryBronzeType(t *testing.T) {
	for _, codec := range []Codec{Snappy, Zstd} {
		t.Run(string(codec), func(t *testing.T) {
			ctx := context.Background()
			st, _ := newStore(t)
			s := mustSchema(t, allTypeColumns)
			rec := bronzeRecord(memory.DefaultAllocator, s, 1000, true)
			defer rec.Release()
			w := NewWriter(st, s, WriterOptions{Codec: codec})
			if err := w.Write(ctx, rec); err != nil {
				t.Fatal(err)
			}
			files, err := w.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 1 || files[0].NumRecords != 1000 {
				t.Fatalf("files %+v", files)
			}
			if ok, _ := regexp.MatchString(`^part-00000-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-c000\.`+string(codec)+`\.parquet$`, files[0].Path); !ok {
				t.Errorf("file name %q", files[0].Path)
			}
			info, err := st.Head(ctx, files[0].Path)
			if err != nil || info.Size != files[0].Size {
				t.Errorf("Head: %v, %v; File.Size %d", info, err, files[0].Size)
			}
			got := readAll(t, st, files[0].Path, nil)
			defer got.Release()
			assertSameRecord(t, rec, got)
		})
	}
}

func TestReadFileProjection(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	s := mustSchema(t, benchColumns)
	rec := bronzeRecord(memory.DefaultAllocator, s, 50, true)
	defer rec.Release()
	f := writeOne(t, st, s, rec)
	got := readAll(t, st, f.Path, []string{"AMOUNT", "missing", "_start_lsn"})
	defer got.Release()
	want := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{s.Field(s.FieldIndices("amount")[0]), s.Field(1)}, nil),
		[]arrow.Array{rec.Column(s.FieldIndices("amount")[0]), rec.Column(1)}, rec.NumRows())
	defer want.Release()
	assertSameRecord(t, want, got)

	// No column present: only the row count.
	only := readAll(t, st, f.Path, []string{"missing"})
	defer only.Release()
	if only.NumCols() != 0 || only.NumRows() != 50 {
		t.Errorf("empty projection: %d cols, %d rows", only.NumCols(), only.NumRows())
	}

	if _, err := ReadFile(ctx, st, "nope.parquet", nil); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("missing file: %v", err)
	}
}

// TestParquetTypes pins the physical and logical types Delta readers expect
// (docs/reference/delta-protocol.md §5.2) and Spark writes.
func TestParquetTypes(t *testing.T) {
	f, _ := writeAllTypes(t)
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	want := map[string]struct {
		phys    parquet.Type
		logical string
	}{
		"_commit_ts":  {parquet.Types.Int64, "Timestamp(isAdjustedToUTC=false, timeUnit=microseconds, is_from_converted_type=false, force_set_converted_type=false)"},
		"c_dto":       {parquet.Types.Int64, "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds, is_from_converted_type=false, force_set_converted_type=false)"},
		"c_datetime2": {parquet.Types.Int64, "Timestamp(isAdjustedToUTC=false, timeUnit=microseconds, is_from_converted_type=false, force_set_converted_type=false)"},
		"c_date":      {parquet.Types.Int32, "Date"},
		"c_dec9":      {parquet.Types.Int32, "Decimal(precision=9, scale=2)"},
		"c_dec18":     {parquet.Types.Int64, "Decimal(precision=18, scale=4)"},
		"c_money":     {parquet.Types.FixedLenByteArray, "Decimal(precision=19, scale=4)"},
		"c_dec38":     {parquet.Types.FixedLenByteArray, "Decimal(precision=38, scale=0)"},
		"c_smallint":  {parquet.Types.Int32, "Int(bitWidth=16, isSigned=true)"},
		"c_nvarchar":  {parquet.Types.ByteArray, "String"},
		"c_binary":    {parquet.Types.ByteArray, "None"},
		"_batch_id":   {parquet.Types.Int64, "Int(bitWidth=64, isSigned=true)"},
		"_operation":  {parquet.Types.Int32, "Int(bitWidth=32, isSigned=true)"},
		"c_bit":       {parquet.Types.Boolean, "None"},
	}
	sc := pf.MetaData().Schema
	seen := 0
	for i := range sc.NumColumns() {
		col := sc.Column(i)
		w, ok := want[col.Name()]
		if !ok {
			continue
		}
		seen++
		if col.PhysicalType() != w.phys || col.LogicalType().String() != w.logical {
			t.Errorf("%s: %s %s, want %s %s", col.Name(), col.PhysicalType(), col.LogicalType(), w.phys, w.logical)
		}
		// The converted types are checked on the footer's bytes
		// (TestFooterTimestampAnnotationsAreSparks): arrow-go's reader reports none for a
		// column that has a logical type, whatever the file holds.
		if col.SchemaNode().RepetitionType() != parquet.Repetitions.Optional {
			t.Errorf("%s: not optional", col.Name())
		}
	}
	if seen != len(want) {
		t.Errorf("saw %d of %d columns", seen, len(want))
	}
	if pf.MetaData().RowGroups[0].GetColumns()[0].GetMetaData().GetCodec() != 1 { // SNAPPY
		t.Errorf("codec %v", pf.MetaData().RowGroups[0].GetColumns()[0].GetMetaData().GetCodec())
	}
}

// writeAllTypes writes three rows of every bronze type (extremes included) as one file
// and opens it; it returns the open file, closed when the test ends, and its size.
func writeAllTypes(t *testing.T) (*os.File, int64) {
	t.Helper()
	st, dir := newStore(t)
	s := mustSchema(t, allTypeColumns)
	rec := bronzeRecord(memory.DefaultAllocator, s, 3, true)
	defer rec.Release()
	written := writeOne(t, st, s, rec)
	f, err := os.Open(filepath.Join(dir, written.Path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, written.Size
}
