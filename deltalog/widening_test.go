package deltalog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// The Delta protocol's list of type widenings (docs/reference/delta-protocol.md §6.6),
// each way round.
func TestWidens(t *testing.T) {
	dec := func(p, s int) DataType { return &DecimalType{Precision: p, Scale: s} }
	for _, c := range []struct {
		from, to DataType
		want     bool
	}{
		{TypeByte, TypeShort, true}, {TypeShort, TypeInteger, true}, {TypeInteger, TypeLong, true}, {TypeByte, TypeLong, true},
		{TypeLong, TypeInteger, false}, {TypeInteger, TypeInteger, false},
		{TypeFloat, TypeDouble, true}, {TypeInteger, TypeDouble, true}, {TypeShort, TypeDouble, true},
		{TypeLong, TypeDouble, false}, {TypeDouble, TypeFloat, false}, {TypeInteger, TypeFloat, false},
		{TypeDate, TypeTimestampNTZ, true}, {TypeDate, TypeTimestamp, false}, {TypeTimestampNTZ, TypeDate, false},
		{dec(9, 2), dec(12, 2), true}, {dec(9, 2), dec(12, 4), true}, {dec(9, 2), dec(10, 4), false}, {dec(9, 2), dec(9, 2), false},
		{dec(12, 4), dec(9, 2), false}, {dec(9, 2), dec(10, 1), false},
		{TypeInteger, dec(10, 0), true}, {TypeInteger, dec(12, 2), true}, {TypeInteger, dec(11, 2), false}, {TypeShort, dec(10, 0), true},
		{TypeLong, dec(20, 0), true}, {TypeLong, dec(19, 0), false}, {TypeLong, dec(38, 18), true},
		{TypeString, TypeBinary, false}, {TypeInteger, TypeString, false},
	} {
		if got := Widens(c.from, c.to); got != c.want {
			t.Errorf("Widens(%s, %s) = %v, want %v", typeName(c.from), typeName(c.to), got, c.want)
		}
	}
}

var (
	narrowSchema = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	wideSchema = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "n", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 14, Scale: 4}, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "d", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
)

// writeJSONFile writes rows given as a JSON array with schema through parquetio.
func writeJSONFile(t *testing.T, tbl *Table, schema *arrow.Schema, rows string) Add {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	w := parquetio.NewWriter(tbl.Store(), schema, parquetio.WriterOptions{TempDir: t.TempDir()})
	if err := w.Write(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	files, err := w.Close(context.Background())
	if err != nil || len(files) != 1 {
		t.Fatalf("close: %v, %d files", err, len(files))
	}
	return AddFromParquet(files[0])
}

// narrowTable is a table of narrowSchema with one file, and delta.enableTypeWidening set
// when enable.
func narrowTable(t *testing.T, enable bool) *Table {
	t.Helper()
	tbl, _ := newMemTable(Options{})
	commitFiles(t, tbl, narrowSchema, writeJSONFile(t, tbl, narrowSchema,
		`[{"id": 1, "n": 7, "amount": "12.34", "f": 1.5, "d": "2024-03-01"}, {"id": 2147483647, "n": null, "amount": "-0.01", "f": null, "d": null}]`))
	if enable {
		tx := tbl.Begin(snapshot(t, tbl))
		tx.SetProperties(map[string]string{PropEnableTypeWidening: "true"})
		if _, err := tx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return tbl
}

// With delta.enableTypeWidening, an append whose schema widens columns commits a metaData
// with the new types, each column's change in delta.typeChanges, and the protocol lists
// typeWidening as a reader and writer feature at 3/7; the files written before read their
// values converted to the wider types.
func TestSetSchemaWidensWithTheProperty(t *testing.T) {
	ctx := context.Background()
	tbl := narrowTable(t, true)
	commitFiles(t, tbl, wideSchema, writeJSONFile(t, tbl, wideSchema,
		`[{"id": 3000000000, "n": "123456789.01", "amount": "1234567890.1234", "f": 2.25, "d": "2024-03-02 10:11:12"}]`))
	snap := snapshot(t, tbl)
	p := snap.Protocol()
	if p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || !p.HasReaderFeature(FeatureTypeWidening) || !p.HasWriterFeature(FeatureTypeWidening) {
		t.Fatalf("protocol %+v, want typeWidening in both lists at 3/7", p)
	}
	st, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"id":     `[{"fromType":"integer","toType":"long"}]`,
		"n":      `[{"fromType":"short","toType":"decimal(12,2)"}]`,
		"amount": `[{"fromType":"decimal(9,2)","toType":"decimal(14,4)"}]`,
		"f":      `[{"fromType":"float","toType":"double"}]`,
		"d":      `[{"fromType":"date","toType":"timestamp_ntz"}]`,
	}
	for _, f := range st.Fields {
		if got := string(f.Metadata[typeChangesKey]); got != want[f.Name] {
			t.Errorf("column %s: delta.typeChanges %s, want %s", f.Name, got, want[f.Name])
		}
	}
	if err := snap.CanWrite(); err != nil {
		t.Errorf("CanWrite after widening: %v", err)
	}
	it, err := snap.Scan(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range it.Schema().Fields() {
		if !arrow.TypeEqual(f.Type, wideSchema.Field(i).Type) {
			t.Errorf("scan column %s: %s, want the widened %s", f.Name, f.Type, wideSchema.Field(i).Type)
		}
	}
	got := collect(t, it)
	wantRows := [][]string{
		{"1", "7", "12.34", "1.5", "2024-03-01T00:00:00"},
		{"2147483647", "NULL", "-0.01", "NULL", "NULL"},
		{"3000000000", "123456789.01", "1234567890.1234", "2.25", "2024-03-02T10:11:12"},
	}
	if len(got) != len(wantRows) {
		t.Fatalf("rows %v, want %v", got, wantRows)
	}
	for i := range got {
		if strings.Join(got[i], "|") != strings.Join(wantRows[i], "|") {
			t.Errorf("row %d: %v, want %v", i, got[i], wantRows[i])
		}
	}

	// A second widening appends to the history; adding a column keeps it.
	wider := arrow.NewSchema(append(append([]arrow.Field{}, wideSchema.Fields()...),
		arrow.Field{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	fields := wider.Fields()
	fields[1].Type = &arrow.Decimal128Type{Precision: 14, Scale: 3}
	commitFiles(t, tbl, arrow.NewSchema(fields, nil))
	st, err = snapshot(t, tbl).Schema()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := st.Field("n")
	id, _ := st.Field("id")
	if got := string(n.Metadata[typeChangesKey]); got != `[{"fromType":"short","toType":"decimal(12,2)"},{"fromType":"decimal(12,2)","toType":"decimal(14,3)"}]` {
		t.Errorf("n's history after a second widening: %s", got)
	}
	if got := string(id.Metadata[typeChangesKey]); got != want["id"] {
		t.Errorf("id's history after adding a column: %s", got)
	}
}

// Without the property a widening is refused, naming it; a change that is no widening is
// refused with or without it.
func TestSetSchemaRefusesOtherTypeChanges(t *testing.T) {
	for _, c := range []struct {
		enable bool
		column string
		to     arrow.DataType
		says   string
	}{
		{false, "id", arrow.PrimitiveTypes.Int64, PropEnableTypeWidening},
		{true, "id", arrow.PrimitiveTypes.Int16, "type changed from"},
		{true, "amount", &arrow.Decimal128Type{Precision: 12, Scale: 1}, "type changed from"},
		{true, "id", arrow.BinaryTypes.String, "type changed from"},
		{true, "d", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, "type changed from"},
	} {
		tbl := narrowTable(t, c.enable)
		fields := narrowSchema.Fields()
		fields[narrowSchema.FieldIndices(c.column)[0]].Type = c.to
		tx := tbl.Begin(snapshot(t, tbl))
		err := tx.SetSchema(arrow.NewSchema(fields, nil))
		var sc *SchemaChangeError
		if !errors.As(err, &sc) || sc.Column != c.column || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s to %s (property %v): %v, want a SchemaChangeError saying %q", c.column, c.to, c.enable, err, c.says)
		}
		if c.enable && strings.Contains(err.Error(), PropEnableTypeWidening) {
			t.Errorf("%s to %s: %v blames the property, which is set", c.column, c.to, err)
		}
	}
}

// A reader fails on a recorded type change it does not support (the protocol's reader
// requirement), and reads a table whose changes are all widenings.
func TestCanReadDataChecksTypeChanges(t *testing.T) {
	tbl := narrowTable(t, true)
	commitFiles(t, tbl, wideSchema)
	if err := snapshot(t, tbl).CanReadData(); err != nil {
		t.Fatalf("widened table: %v", err)
	}
	snap := snapshot(t, tbl)
	md := snap.Metadata()
	md.SchemaString = strings.Replace(md.SchemaString, `"fromType":"integer"`, `"fromType":"string"`, 1)
	tx := tbl.Begin(snap)
	tx.metadata = &md
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := snapshot(t, tbl).CanReadData()
	var se *SchemaError
	if !errors.As(err, &se) || se.Path != "id" || !strings.Contains(err.Error(), "string to long") {
		t.Errorf("unsupported recorded change: %v, want a SchemaError on id", err)
	}
}
