package parquetio

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

func TestRowGroupRows(t *testing.T) {
	ctx := context.Background()
	st, err := localstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	// Row groups of at most 100 rows' worth of data: 250 rows make three.
	w := NewWriter(st, schema, WriterOptions{TempDir: t.TempDir(), RowGroupBytes: 800})
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 250 {
		b.Append(int64(i))
	}
	a := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{a}, 250)
	a.Release()
	for i := int64(0); i < 250; i += 50 {
		s := rec.NewSlice(i, i+50)
		if err := w.Write(ctx, s); err != nil {
			t.Fatal(err)
		}
		s.Release()
	}
	rec.Release()
	files, err := w.Close(ctx)
	if err != nil || len(files) != 1 {
		t.Fatalf("%v %d", err, len(files))
	}
	rows, err := RowGroupRows(ctx, st, files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range rows {
		total += n
	}
	if len(rows) < 2 || total != 250 {
		t.Fatalf("row groups %v", rows)
	}
	last := len(rows) - 1
	if g, in, ok := RowGroupOf(rows, 249); !ok || g != last || in != rows[last]-1 {
		t.Fatalf("row 249: group %d, row %d, %v", g, in, ok)
	}
	if g, in, ok := RowGroupOf(rows, rows[0]); !ok || g != 1 || in != 0 {
		t.Fatalf("first row of group 1: group %d, row %d, %v", g, in, ok)
	}
	if _, _, ok := RowGroupOf(rows, 250); ok {
		t.Fatal("row 250 is past the end")
	}
	if _, err := RowGroupRows(ctx, st, "missing.parquet"); err == nil {
		t.Fatal("missing file read")
	}
}
