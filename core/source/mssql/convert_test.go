package mssql

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

func TestGuidString(t *testing.T) {
	// 6F9619FF-8B86-D011-B42D-00C04FC964FF as SQL Server sends it.
	wire := []byte{0xFF, 0x19, 0x96, 0x6F, 0x86, 0x8B, 0x11, 0xD0, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF}
	if got, err := guidString(wire); err != nil || got != "6F9619FF-8B86-D011-B42D-00C04FC964FF" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := guidString([]byte{1}); err == nil {
		t.Error("short guid")
	}
}

func TestTimeString(t *testing.T) {
	v := time.Date(1, 1, 1, 13, 5, 9, 123456700, time.UTC)
	for prec, want := range map[int]string{0: "13:05:09", 3: "13:05:09.123", 7: "13:05:09.1234567"} {
		if got := timeString(v, prec); got != want {
			t.Errorf("timeString(%d) = %q, want %q", prec, got, want)
		}
	}
}

func TestKeyValue(t *testing.T) {
	loc := time.FixedZone("x", -3*3600)
	for _, c := range []struct {
		col  source.Column
		in   any
		want any
	}{
		{source.Column{DataType: "int"}, int64(5), int64(5)},
		{source.Column{DataType: "decimal"}, []byte("12.50"), "12.50"},
		{source.Column{DataType: "uniqueidentifier"}, []byte{0xFF, 0x19, 0x96, 0x6F, 0x86, 0x8B, 0x11, 0xD0, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF}, "6F9619FF-8B86-D011-B42D-00C04FC964FF"},
		{source.Column{DataType: "datetime2"}, time.Date(2026, 1, 2, 3, 4, 5, 6, loc), time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)},
		{source.Column{DataType: "datetimeoffset"}, time.Date(2026, 1, 2, 3, 4, 5, 6, loc), time.Date(2026, 1, 2, 6, 4, 5, 6, time.UTC)},
		{source.Column{DataType: "time", DatetimePrecision: 2}, time.Date(1, 1, 1, 1, 2, 3, 450_000_000, time.UTC), "01:02:03.45"},
		{source.Column{DataType: "varchar"}, "abc", "abc"},
		{source.Column{DataType: "int"}, nil, nil},
	} {
		got, err := keyValue(c.col, c.in)
		if err != nil || !goEqual(got, c.want) && !(got == nil && c.want == nil) {
			t.Errorf("keyValue(%s, %v) = %v, %v; want %v", c.col.DataType, c.in, got, err, c.want)
		}
	}
	if _, err := keyValue(source.Column{Name: "k", DataType: "int"}, "x"); err == nil {
		t.Error("string for int")
	}
}

// The appenders fill every bronze type from the values go-mssqldb returns.
func TestAppendersFillBronzeTypes(t *testing.T) {
	cols := []source.Column{
		{Name: "b", DataType: "bit"}, {Name: "ti", DataType: "tinyint"}, {Name: "i", DataType: "int"},
		{Name: "bi", DataType: "bigint"}, {Name: "r", DataType: "real"}, {Name: "f", DataType: "float"},
		{Name: "d", DataType: "decimal", Precision: 10, Scale: 2}, {Name: "m", DataType: "money"},
		{Name: "dt", DataType: "date"}, {Name: "ts", DataType: "datetime2", DatetimePrecision: 7},
		{Name: "dto", DataType: "datetimeoffset", DatetimePrecision: 7}, {Name: "tm", DataType: "time", DatetimePrecision: 3},
		{Name: "g", DataType: "uniqueidentifier"}, {Name: "s", DataType: "nvarchar", MaxLength: 10},
		{Name: "bin", DataType: "varbinary", MaxLength: 4},
	}
	schema, err := bronze.TableSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	apps, err := appendersFor(schema, cols, 0)
	if err != nil {
		t.Fatal(err)
	}
	loc := time.FixedZone("x", 2*3600)
	vals := []any{
		true, int64(255), int64(-7), int64(1) << 40, float64(1.5), float64(2.25),
		[]byte("-12.34"), []byte("922337203685477.5807"),
		time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 2, 30, 0, 1234500, time.UTC),
		time.Date(2026, 10, 25, 2, 30, 0, 0, loc), time.Date(1, 1, 1, 23, 59, 59, 999_000_000, time.UTC),
		[]byte{0xFF, 0x19, 0x96, 0x6F, 0x86, 0x8B, 0x11, 0xD0, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF},
		"ação", []byte{1, 2, 3},
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	for i, v := range vals {
		if _, err := apps[i](b.Field(i), v); err != nil {
			t.Fatalf("column %s: %v", cols[i].Name, err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	got := func(i int) string { return rec.Column(i).ValueStr(0) }
	want := []string{"true", "255", "-7", "1099511627776", "1.5", "2.25", "-12.34", "922337203685477.5807",
		"2026-10-25", "", "", "23:59:59.999", "6F9619FF-8B86-D011-B42D-00C04FC964FF", "ação", ""}
	for i, w := range want {
		if w != "" && got(i) != w {
			t.Errorf("column %s = %q, want %q", cols[i].Name, got(i), w)
		}
	}
	if v := rec.Column(9).(*array.Timestamp).Value(0); v != arrow.Timestamp(time.Date(2026, 10, 25, 2, 30, 0, 1234000, time.UTC).UnixMicro()) {
		t.Errorf("datetime2 wall clock: %v", v)
	}
	if v := rec.Column(10).(*array.Timestamp).Value(0); v != arrow.Timestamp(time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC).UnixMicro()) {
		t.Errorf("datetimeoffset instant: %v", v)
	}
	if v := rec.Column(14).(*array.Binary).Value(0); string(v) != "\x01\x02\x03" {
		t.Errorf("binary %v", v)
	}
	if _, err := apps[2](b.Field(2), "not an int"); err == nil {
		t.Error("wrong value type accepted")
	}
}

func TestParseDecimal(t *testing.T) {
	for _, c := range []struct {
		in    string
		scale int32
		want  string
	}{
		{"1234.56", 2, "1234.56"}, {"-0.5", 2, "-0.50"}, {"7", 4, "7.0000"}, {"922337203685477.5807", 4, "922337203685477.5807"},
		{"12345678901234567890.12", 2, "12345678901234567890.12"}, {"0.10", 1, "0.1"}, {"+3.25", 2, "3.25"},
		{"99999999999999999999999999999999999999", 0, "99999999999999999999999999999999999999"},
	} {
		n, err := parseDecimal(c.in, 38, c.scale)
		if err != nil || n.ToString(c.scale) != c.want {
			t.Errorf("parseDecimal(%q, %d) = %s, %v; want %s", c.in, c.scale, n.ToString(c.scale), err, c.want)
		}
	}
	for _, in := range []string{"", "-", "1.2.3", "abc"} {
		if _, err := parseDecimal(in, 10, 2); err == nil {
			t.Errorf("parseDecimal(%q): no error", in)
		}
	}
}
