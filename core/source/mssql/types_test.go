package mssql

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/sourcetest"
)

// Every row of docs/types.md through the real appenders, with each value shaped as
// go-mssqldb returns it when scanned into any (its types.go): the Delta value bronze
// stores and what is lost.
func TestEveryTypeThroughTheAppenders(t *testing.T) {
	brt := time.FixedZone("BRT", -3*3600)
	cases := []struct {
		col  source.Column
		in   any // as the driver returns it
		want any // as bronze holds it (sourcetest.Cell)
	}{
		{source.Column{DataType: "bit"}, true, true},
		{source.Column{DataType: "tinyint"}, int64(255), int64(255)},
		{source.Column{DataType: "smallint"}, int64(-32768), int64(-32768)},
		{source.Column{DataType: "int"}, int64(-2147483648), int64(-2147483648)},
		{source.Column{DataType: "bigint"}, int64(1) << 62, int64(1) << 62},
		{source.Column{DataType: "real"}, float64(float32(0.1)), float64(float32(0.1))},
		{source.Column{DataType: "float"}, 0.1, 0.1},
		{source.Column{DataType: "decimal", Precision: 18, Scale: 2}, []byte("-123.45"), "-123.45"},
		{source.Column{DataType: "numeric", Precision: 38, Scale: 10}, []byte("1234567890123456789012345678.0123456789"), "1234567890123456789012345678.0123456789"},
		{source.Column{DataType: "money"}, []byte("-922337203685477.5808"), "-922337203685477.5808"},
		{source.Column{DataType: "smallmoney"}, []byte("214748.3647"), "214748.3647"},
		{source.Column{DataType: "date"}, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
		// datetime: 1/300 s ticks, decoded to ns; kept to the microsecond.
		{source.Column{DataType: "datetime"}, time.Date(2026, 1, 2, 3, 4, 5, 996_666_666, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 996_666_000, time.UTC)},
		// datetime2(7): 100 ns on the server, microseconds in bronze (truncated).
		{source.Column{DataType: "datetime2", DatetimePrecision: 7}, time.Date(2026, 1, 2, 3, 4, 5, 123_456_700, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 123_456_000, time.UTC)},
		// A zoneless value is its wall clock, whatever location the driver attached.
		{source.Column{DataType: "datetime2", DatetimePrecision: 3}, time.Date(2026, 1, 2, 3, 4, 5, 0, brt), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{source.Column{DataType: "smalldatetime"}, time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)},
		// datetimeoffset(7): the UTC instant to the microsecond; the offset is dropped.
		{source.Column{DataType: "datetimeoffset", DatetimePrecision: 7}, time.Date(2026, 1, 2, 3, 4, 5, 123_456_700, brt), time.Date(2026, 1, 2, 6, 4, 5, 123_456_000, time.UTC)},
		// time(7): text, so the 100 ns digits are kept.
		{source.Column{DataType: "time", DatetimePrecision: 7}, time.Date(1, 1, 1, 13, 14, 15, 123_456_700, time.UTC), "13:14:15.1234567"},
		{source.Column{DataType: "time", DatetimePrecision: 0}, time.Date(1, 1, 1, 13, 14, 15, 0, time.UTC), "13:14:15"},
		{source.Column{DataType: "char", MaxLength: 5}, "ab   ", "ab   "},
		{source.Column{DataType: "varchar", MaxLength: -1}, "x", "x"},
		{source.Column{DataType: "nchar", MaxLength: 2}, "ü ", "ü "},
		{source.Column{DataType: "nvarchar", MaxLength: 20}, "ünï", "ünï"},
		{source.Column{DataType: "text"}, "t", "t"},
		{source.Column{DataType: "ntext"}, "nt", "nt"},
		{source.Column{DataType: "xml"}, "<a>1</a>", "<a>1</a>"},
		// uniqueidentifier: 16 bytes, the first three groups little-endian.
		{source.Column{DataType: "uniqueidentifier"}, []byte{0xFF, 0x19, 0x96, 0x6F, 0x86, 0x8B, 0x11, 0xD0, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF}, "6F9619FF-8B86-D011-B42D-00C04FC964FF"},
		{source.Column{DataType: "binary", MaxLength: 4}, []byte{1, 2, 0, 0}, []byte{1, 2, 0, 0}},
		{source.Column{DataType: "varbinary", MaxLength: -1}, []byte{9}, []byte{9}},
		{source.Column{DataType: "image"}, []byte{7}, []byte{7}},
		{source.Column{DataType: "timestamp"}, []byte{0, 0, 0, 0, 0, 0, 7, 0xD1}, []byte{0, 0, 0, 0, 0, 0, 7, 0xD1}},
		{source.Column{DataType: "rowversion"}, []byte{0, 0, 0, 0, 0, 0, 7, 0xD2}, []byte{0, 0, 0, 0, 0, 0, 7, 0xD2}},
		// Read through the server's methods (columnExpr): the driver returns their results.
		{source.Column{DataType: "hierarchyid"}, "/1/3/", "/1/3/"},
		{source.Column{DataType: "geometry"}, []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0, 0, 0, 0, 0, 0, 0, 0x40}, []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0, 0, 0, 0, 0, 0, 0, 0x40}},
		{source.Column{DataType: "geography"}, []byte{1, 1, 0, 0, 0}, []byte{1, 1, 0, 0, 0}},
		{source.Column{DataType: "sql_variant"}, "datetime2:2026-01-02T03:04:05.1234567", "datetime2:2026-01-02T03:04:05.1234567"},
		// NULL of any type (a computed column, a LOB in a before-image) stays NULL.
		{source.Column{DataType: "int"}, nil, nil},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d_%s", i, c.col.DataType), func(t *testing.T) {
			c.col.Name = "c"
			dt, err := bronze.ArrowType(c.col)
			if err != nil {
				t.Fatal(err)
			}
			app, err := newAppender("c", dt, c.col.DataType, c.col.DatetimePrecision)
			if err != nil {
				t.Fatal(err)
			}
			b := array.NewBuilder(memory.DefaultAllocator, dt)
			defer b.Release()
			if c.in == nil {
				b.AppendNull()
			} else if _, err := app(b, c.in); err != nil {
				t.Fatal(err)
			}
			arr := b.NewArray()
			defer arr.Release()
			got := sourcetest.Cell(arr, 0)
			switch w := c.want.(type) {
			case []byte:
				if g, ok := got.([]byte); !ok || !bytes.Equal(g, w) {
					t.Fatalf("%v, want %v", got, w)
				}
			case time.Time:
				if g, ok := got.(time.Time); !ok || !g.Equal(w) {
					t.Fatalf("%v, want %v", got, w)
				}
			default:
				if got != c.want {
					t.Fatalf("%#v, want %#v", got, c.want)
				}
			}
		})
	}
}
