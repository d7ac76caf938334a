package bronze

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

func TestArrowTypeEverySQLServerType(t *testing.T) {
	dec := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	cases := []struct {
		col  source.Column
		want arrow.DataType
	}{
		{source.Column{DataType: "bit"}, arrow.FixedWidthTypes.Boolean},
		{source.Column{DataType: "tinyint"}, arrow.PrimitiveTypes.Int16},
		{source.Column{DataType: "smallint"}, arrow.PrimitiveTypes.Int16},
		{source.Column{DataType: "int"}, arrow.PrimitiveTypes.Int32},
		{source.Column{DataType: "bigint"}, arrow.PrimitiveTypes.Int64},
		{source.Column{DataType: "real"}, arrow.PrimitiveTypes.Float32},
		{source.Column{DataType: "float"}, arrow.PrimitiveTypes.Float64},
		{source.Column{DataType: "decimal", Precision: 18, Scale: 2}, dec(18, 2)},
		{source.Column{DataType: "decimal", Precision: 38, Scale: 38}, dec(38, 38)},
		{source.Column{DataType: "numeric", Precision: 1, Scale: 0}, dec(1, 0)},
		{source.Column{DataType: "numeric", Precision: 38, Scale: 10}, dec(38, 10)},
		{source.Column{DataType: "money", Precision: 19, Scale: 4}, dec(19, 4)},
		{source.Column{DataType: "smallmoney", Precision: 10, Scale: 4}, dec(10, 4)},
		{source.Column{DataType: "date"}, arrow.FixedWidthTypes.Date32},
		{source.Column{DataType: "datetime"}, &arrow.TimestampType{Unit: arrow.Microsecond}},
		{source.Column{DataType: "datetime2", DatetimePrecision: 7}, &arrow.TimestampType{Unit: arrow.Microsecond}},
		{source.Column{DataType: "smalldatetime"}, &arrow.TimestampType{Unit: arrow.Microsecond}},
		{source.Column{DataType: "datetimeoffset", DatetimePrecision: 7}, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{source.Column{DataType: "time", DatetimePrecision: 7}, arrow.BinaryTypes.String},
		{source.Column{DataType: "char", MaxLength: 10}, arrow.BinaryTypes.String},
		{source.Column{DataType: "varchar", MaxLength: -1}, arrow.BinaryTypes.String},
		{source.Column{DataType: "nchar", MaxLength: 10}, arrow.BinaryTypes.String},
		{source.Column{DataType: "nvarchar", MaxLength: 4000}, arrow.BinaryTypes.String},
		{source.Column{DataType: "text"}, arrow.BinaryTypes.String},
		{source.Column{DataType: "ntext"}, arrow.BinaryTypes.String},
		{source.Column{DataType: "xml"}, arrow.BinaryTypes.String},
		{source.Column{DataType: "uniqueidentifier"}, arrow.BinaryTypes.String},
		{source.Column{DataType: "binary", MaxLength: 16}, arrow.BinaryTypes.Binary},
		{source.Column{DataType: "varbinary", MaxLength: -1}, arrow.BinaryTypes.Binary},
		{source.Column{DataType: "image"}, arrow.BinaryTypes.Binary},
		{source.Column{DataType: "timestamp"}, arrow.BinaryTypes.Binary},
		{source.Column{DataType: "rowversion"}, arrow.BinaryTypes.Binary},
		{source.Column{DataType: "NVarChar"}, arrow.BinaryTypes.String},
		{source.Column{DataType: "hierarchyid"}, arrow.BinaryTypes.String},
		{source.Column{DataType: "sql_variant"}, arrow.BinaryTypes.String},
		{source.Column{DataType: "geometry"}, arrow.BinaryTypes.Binary},
		{source.Column{DataType: "geography"}, arrow.BinaryTypes.Binary},
	}
	for _, tc := range cases {
		tc.col.Name = "c"
		got, err := ArrowType(tc.col)
		if err != nil {
			t.Errorf("%s: %v", tc.col.DataType, err)
			continue
		}
		if !arrow.TypeEqual(got, tc.want) {
			t.Errorf("%s: got %s, want %s", tc.col.DataType, got, tc.want)
		}
	}
}

func TestArrowTypeRefusesUnmappable(t *testing.T) {
	for _, typ := range []string{"cursor", "vector", "json", "mytype", ""} {
		_, err := ArrowType(source.Column{Name: "Shape", DataType: typ})
		var ue *UnsupportedTypeError
		if !errors.As(err, &ue) {
			t.Fatalf("%s: got %v, want *UnsupportedTypeError", typ, err)
		}
		if ue.Column != "Shape" || ue.Type != typ {
			t.Errorf("%s: error fields %+v", typ, ue)
		}
		msg := err.Error()
		for _, want := range []string{`"Shape"`, typ, `"columns"`, "leave the column out"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q lacks %q", typ, msg, want)
			}
		}
	}
}

func TestArrowTypeRefusesBadDecimal(t *testing.T) {
	for _, c := range []source.Column{
		{Name: "d", DataType: "decimal", Precision: 0, Scale: 0},
		{Name: "d", DataType: "decimal", Precision: 39, Scale: 0},
		{Name: "d", DataType: "numeric", Precision: 5, Scale: 6},
		{Name: "d", DataType: "numeric", Precision: 5, Scale: -1},
	} {
		_, err := ArrowType(c)
		var ue *UnsupportedTypeError
		if !errors.As(err, &ue) || ue.Reason == "" {
			t.Errorf("%+v: got %v, want *UnsupportedTypeError with a reason", c, err)
		}
	}
}

// A decimal's precision or scale out of range reads plainly, bounds in words (it said
// "precision 39 is outside 1..38").
func TestArrowTypeDecimalRangeReadsPlainly(t *testing.T) {
	for _, tc := range []struct {
		col  source.Column
		want string
	}{
		{source.Column{Name: "c", DataType: "decimal", Precision: 39, Scale: 2}, "precision 39: want from 1 up to 38"},
		{source.Column{Name: "c", DataType: "decimal", Precision: 10, Scale: 11}, "scale 11: want from 0 up to the precision, 10"},
	} {
		_, err := ArrowType(tc.col)
		var ue *UnsupportedTypeError
		if !errors.As(err, &ue) || ue.Reason != tc.want {
			t.Errorf("%+v: %v, want reason %q", tc.col, err, tc.want)
		}
	}
}
