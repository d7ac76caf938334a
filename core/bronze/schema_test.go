package bronze

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

var ordersCols = []source.Column{
	{Name: "id", DataType: "int", Ordinal: 1},
	{Name: "amount", DataType: "decimal", Precision: 10, Scale: 2, Ordinal: 2},
	{Name: "note", DataType: "nvarchar", MaxLength: 100, Ordinal: 3},
}

func fieldNames(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSchemaOrderAndTypes(t *testing.T) {
	s, err := Schema(ordersCols)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		typ  arrow.DataType
	}{
		{"_capture_instance", arrow.BinaryTypes.String},
		{"_start_lsn", arrow.BinaryTypes.String},
		{"_seqval", arrow.BinaryTypes.String},
		{"_operation", arrow.PrimitiveTypes.Int32},
		{"_command_id", arrow.PrimitiveTypes.Int32},
		{"_commit_ts", &arrow.TimestampType{Unit: arrow.Microsecond}},
		{"id", arrow.PrimitiveTypes.Int32},
		{"amount", &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{"note", arrow.BinaryTypes.String},
		{"_batch_id", arrow.PrimitiveTypes.Int64},
		{"_snapshot", arrow.BinaryTypes.String},
		{"_chunk", arrow.PrimitiveTypes.Int32},
	}
	if s.NumFields() != len(want) {
		t.Fatalf("fields %v", fieldNames(s))
	}
	for i, w := range want {
		f := s.Field(i)
		if f.Name != w.name || !arrow.TypeEqual(f.Type, w.typ) || !f.Nullable {
			t.Errorf("field %d: got %s %s nullable=%v, want %s %s nullable", i, f.Name, f.Type, f.Nullable, w.name, w.typ)
		}
	}
}

func TestChangeAndTableSchema(t *testing.T) {
	cs, err := ChangeSchema(ordersCols)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fieldNames(cs), []string{"_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts", "id", "amount", "note"}; !equalStrings(got, want) {
		t.Errorf("ChangeSchema %v, want %v", got, want)
	}
	if !arrow.TypeEqual(cs.Field(4).Type, &arrow.TimestampType{Unit: arrow.Microsecond}) {
		t.Errorf("_commit_ts type %s", cs.Field(4).Type)
	}
	ts, err := TableSchema(ordersCols)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fieldNames(ts), []string{"id", "amount", "note"}; !equalStrings(got, want) {
		t.Errorf("TableSchema %v, want %v", got, want)
	}
}

func TestSchemaRefusesCollisions(t *testing.T) {
	for _, name := range []string{"_start_lsn", "_CHUNK", "_Batch_Id", "_capture_instance", "_snapshot"} {
		cols := append([]source.Column{}, ordersCols...)
		cols = append(cols, source.Column{Name: name, DataType: "int"})
		for fn, build := range map[string]func([]source.Column) (*arrow.Schema, error){"Schema": Schema, "ChangeSchema": ChangeSchema, "TableSchema": TableSchema} {
			_, err := build(cols)
			var ce *ColumnCollisionError
			if !errors.As(err, &ce) || ce.Column != name {
				t.Errorf("%s(%s): got %v, want *ColumnCollisionError", fn, name, err)
			}
		}
	}
	_, err := Schema([]source.Column{{Name: "Id", DataType: "int"}, {Name: "ID", DataType: "int"}})
	var ce *ColumnCollisionError
	if !errors.As(err, &ce) || ce.Column != "ID" || ce.With != "Id" {
		t.Errorf("duplicate ignoring case: got %v", err)
	}
	if IsMetadataColumn("amount") || !IsMetadataColumn("_Commit_TS") {
		t.Error("IsMetadataColumn")
	}
}

func TestSchemaReportsEveryProblem(t *testing.T) {
	_, err := Schema([]source.Column{
		{Name: "shape", DataType: "vector"},
		{Name: "v", DataType: "json"},
		{Name: "_seqval", DataType: "int"},
	})
	var n int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ue *UnsupportedTypeError
		var ce *ColumnCollisionError
		if errors.As(e, &ue) || errors.As(e, &ce) {
			n++
		}
	}
	if n != 3 {
		t.Errorf("got %d typed errors in %v, want 3", n, err)
	}
	// One typed value carries them all (the name Step Functions sees), with errors.Join's text.
	var cols *ColumnsError
	if !errors.As(err, &cols) || len(cols.Problems) != 3 || err.Error() != errors.Join(cols.Problems...).Error() {
		t.Errorf("%T %v: want a *ColumnsError of 3 problems", err, err)
	}
}

func TestMetadataFieldsIsACopy(t *testing.T) {
	f := MetadataFields()
	f[0].Name = "x"
	if MetadataFields()[0].Name != ColCaptureInstance {
		t.Error("MetadataFields shares its backing array")
	}
	if len(f) != 9 {
		t.Errorf("%d metadata fields", len(f))
	}
}

func TestCapturedFields(t *testing.T) {
	s, _ := Schema(ordersCols)
	cs, _ := ChangeSchema(ordersCols)
	for _, sc := range []*arrow.Schema{s, cs} {
		var names []string
		for _, f := range CapturedFields(sc) {
			names = append(names, f.Name)
		}
		if !equalStrings(names, []string{"id", "amount", "note"}) {
			t.Errorf("CapturedFields %v", names)
		}
	}
}

// ReadColumns is StoredColumns then the columns option: computed columns are left out
// whether declared or not (reported in left), declared names match ignoring case, and
// without a declaration every stored column is read, in order.
func TestReadColumnsComposesComputedAndDeclared(t *testing.T) {
	cols := []source.Column{{Name: "id"}, {Name: "Name"}, {Name: "twice", Computed: true}, {Name: "loc"}}
	names := func(cs []source.Column) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		declared   []string
		read, left string
	}{
		{nil, "id,Name,loc", "twice"},
		{[]string{"ID", "name", "TWICE"}, "id,Name", "twice"},
		{[]string{}, "", "twice"},
	} {
		read, left := ReadColumns(cols, tc.declared)
		if names(read) != tc.read || names(left) != tc.left {
			t.Errorf("declared %v: read %s left %s, want %s and %s", tc.declared, names(read), names(left), tc.read, tc.left)
		}
	}
	if names(cols) != "id,Name,twice,loc" {
		t.Errorf("ReadColumns changed its input: %s", names(cols))
	}
}
