package deltalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// scanSchema is a bronze-like schema: the filter columns and a payload.
var scanSchema = arrow.NewSchema([]arrow.Field{
	{Name: "app_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "_operation", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

type scanRow struct {
	app string // "" is NULL
	op  int32
	v   int64
}

// writeFile writes rows with schema (scanSchema or a superset) through parquetio and
// returns the add for it.
func writeFile(t *testing.T, tbl *Table, schema *arrow.Schema, rows []scanRow, extra func(b *array.RecordBuilder)) Add {
	t.Helper()
	ctx := context.Background()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, r := range rows {
		if r.app == "" {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(r.app)
		}
		b.Field(1).(*array.Int32Builder).Append(r.op)
		b.Field(2).(*array.Int64Builder).Append(r.v)
	}
	if extra != nil {
		extra(b)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	w := parquetio.NewWriter(tbl.Store(), schema, parquetio.WriterOptions{TempDir: t.TempDir()})
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	files, err := w.Close(ctx)
	if err != nil || len(files) != 1 {
		t.Fatalf("close: %v, %d files", err, len(files))
	}
	return AddFromParquet(files[0])
}

func commitFiles(t *testing.T, tbl *Table, schema *arrow.Schema, adds ...Add) {
	t.Helper()
	tx := tbl.Begin(snapshot(t, tbl))
	if err := tx.SetSchema(schema); err != nil {
		t.Fatal(err)
	}
	tx.Add(adds...)
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// collect reads the iterator to the end as rows of strings ("NULL" for nulls).
func collect(t *testing.T, it RecordIterator) [][]string {
	t.Helper()
	defer it.Close()
	var out [][]string
	for {
		rec, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Schema().Equal(it.Schema()) {
			t.Fatalf("batch schema %v, iterator schema %v", rec.Schema(), it.Schema())
		}
		for i := range int(rec.NumRows()) {
			row := make([]string, rec.NumCols())
			for j, c := range rec.Columns() {
				row[j] = "NULL"
				if c.IsValid(i) {
					row[j] = c.ValueStr(i)
				}
			}
			out = append(out, row)
		}
		rec.Release()
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(strings.Join(a, "|"), strings.Join(b, "|")) })
	return out
}

func TestScanProjectionFilterAndEvolution(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	a := writeFile(t, tbl, scanSchema, []scanRow{{"a", 0, 1}, {"a", 2, 2}, {"a", 0, 3}}, nil)
	b := writeFile(t, tbl, scanSchema, []scanRow{{"b", 2, 4}, {"b", 4, 5}}, nil)
	n := writeFile(t, tbl, scanSchema, []scanRow{{"", 0, 6}}, nil)
	commitFiles(t, tbl, scanSchema, a, b, n)

	// A column added later: older files read it as NULL.
	evolved := arrow.NewSchema(append(scanSchema.Fields(), arrow.Field{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	c := writeFile(t, tbl, evolved, []scanRow{{"c", 0, 7}}, func(b *array.RecordBuilder) {
		b.Field(3).(*array.StringBuilder).Append("x")
	})
	commitFiles(t, tbl, evolved, c)
	s := snapshot(t, tbl)

	it, err := s.Scan(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := it.Schema().String(); !strings.Contains(got, "extra: type=utf8") {
		t.Fatalf("schema %s", got)
	}
	rows := collect(t, it)
	want := [][]string{{"NULL", "0", "6", "NULL"}, {"a", "0", "1", "NULL"}, {"a", "0", "3", "NULL"}, {"a", "2", "2", "NULL"},
		{"b", "2", "4", "NULL"}, {"b", "4", "5", "NULL"}, {"c", "0", "7", "x"}}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("all rows\n got %v\nwant %v", rows, want)
	}

	cases := []struct {
		name    string
		opts    ScanOptions
		want    string
		skipped int
	}{
		{"project", ScanOptions{Columns: []string{"V", "extra"}}, "[[1 NULL] [2 NULL] [3 NULL] [4 NULL] [5 NULL] [6 NULL] [7 x]]", 0},
		{"op eq 0", ScanOptions{Columns: []string{"v"}, Filter: Eq("_operation", 0)}, "[[1] [3] [6] [7]]", 1},
		{"app eq b", ScanOptions{Columns: []string{"v"}, Filter: Eq("app_id", "b")}, "[[4] [5]]", 3},
		{"and", ScanOptions{Columns: []string{"app_id"}, Filter: And(Eq("app_id", "a"), Eq("_operation", int32(2)))}, "[[a]]", 3},
		{"no match", ScanOptions{Filter: Eq("_operation", 9)}, "[]", 4},
		{"count only", ScanOptions{Columns: []string{}, Filter: Eq("app_id", "a")}, "[[] [] []]", 3},
		// IS NULL skips the files whose nullCount is 0, IS NOT NULL the all-NULL ones; a
		// column older files lack is NULL in them (no statistics: they are read).
		{"app is null", ScanOptions{Columns: []string{"v"}, Filter: IsNull("app_id")}, "[[6]]", 3},
		{"app not null", ScanOptions{Columns: []string{"v"}, Filter: NotNull("APP_ID")}, "[[1] [2] [3] [4] [5] [7]]", 1},
		{"extra is null", ScanOptions{Columns: []string{"v"}, Filter: IsNull("extra")}, "[[1] [2] [3] [4] [5] [6]]", 1},
		{"extra not null and", ScanOptions{Columns: []string{"v"}, Filter: And(NotNull("extra"), Eq("_operation", 0))}, "[[7]]", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it, st, err := s.ScanWithStats(ctx, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(collect(t, it)); got != c.want {
				t.Fatalf("rows %s, want %s", got, c.want)
			}
			if st.Files != 4 || st.Skipped != c.skipped {
				t.Fatalf("stats %+v, want %d skipped", st, c.skipped)
			}
		})
	}

	for _, bad := range []ScanOptions{
		{Columns: []string{"nope"}},
		{Filter: Eq("nope", 1)},
		{Filter: Eq("app_id", 1)},
		{Filter: Eq("_operation", "1")},
		{Filter: Eq("v", 1.5)},
		{Filter: IsNull("nope")},
	} {
		if _, err := s.Scan(ctx, bad); err == nil {
			t.Fatalf("%+v: no error", bad)
		}
	}
	var fe *FilterError
	if _, err := s.Scan(ctx, ScanOptions{Filter: Eq("app_id", 1)}); !errors.As(err, &fe) || fe.Column != "app_id" {
		t.Fatalf("filter error %v", err)
	}
}

func TestScanPartitionValues(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	// The file holds only v; p is a partition column.
	fileSchema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, fileSchema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	w := parquetio.NewWriter(tbl.Store(), fileSchema, parquetio.WriterOptions{TempDir: t.TempDir()})
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	files, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := AddFromParquet(files[0])
	add.PartitionValues = map[string]string{"p": "7"}
	nullPart := add
	nullPart.PartitionValues = map[string]string{"p": ""}
	nullPart.Path = "copy.parquet"
	if err := tbl.Store().Copy(ctx, add.Path, nullPart.Path); err != nil {
		t.Fatal(err)
	}
	tableSchema := `{"type":"struct","fields":[{"name":"v","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"integer","nullable":true,"metadata":{}}]}`
	data, err := EncodeActions([]Action{
		{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{MetaData: &Metadata{ID: "id", SchemaString: tableSchema, PartitionColumns: []string{"p"}}},
		{Add: &add}, {Add: &nullPart},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.LogStore().Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	s := snapshot(t, tbl)
	it, err := s.Scan(ctx, ScanOptions{Columns: []string{"p", "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(collect(t, it)); got != "[[7 1] [7 2] [NULL 1] [NULL 2]]" {
		t.Fatalf("rows %s", got)
	}
	it, st, err := s.ScanWithStats(ctx, ScanOptions{Columns: []string{"v"}, Filter: Eq("p", 7)})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(collect(t, it)); got != "[[1] [2]]" || st.Skipped != 1 {
		t.Fatalf("rows %s, stats %+v", got, st)
	}
	// IS NULL and IS NOT NULL on a partition column skip by the partition value.
	for f, want := range map[Filter]string{IsNull("p"): "[[NULL 1] [NULL 2]]", NotNull("p"): "[[7 1] [7 2]]"} {
		it, st, err := s.ScanWithStats(ctx, ScanOptions{Columns: []string{"p", "v"}, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(collect(t, it)); got != want || st.Skipped != 1 {
			t.Errorf("%+v: rows %s, stats %+v; want %s, 1 skipped", f, got, st, want)
		}
	}
}

func TestScanNoTable(t *testing.T) {
	tbl, _ := newMemTable(Options{})
	if _, err := snapshot(t, tbl).Scan(context.Background(), ScanOptions{}); !errors.Is(err, ErrNoTable) {
		t.Fatalf("scan: %v", err)
	}
}

func TestAddFromParquetEncodesPath(t *testing.T) {
	a := AddFromParquet(parquetio.File{Path: "p=a b/part 1.parquet", Size: 3, Stats: `{"numRecords":1}`})
	if a.Path != "p=a%20b/part%201.parquet" || a.DecodedPath() != "p=a b/part 1.parquet" || !a.DataChange || a.Size != 3 {
		t.Fatalf("add %+v", a)
	}
}
