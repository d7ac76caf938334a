package seed

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// fromJSON builds an array of dt from JSON values.
func fromJSON(t *testing.T, dt arrow.DataType, js string) arrow.Array {
	t.Helper()
	a, _, err := array.FromJSON(memory.DefaultAllocator, dt, strings.NewReader(js))
	if err != nil {
		t.Fatalf("%s %s: %v", dt, js, err)
	}
	return a
}

// texts is every value of a as ValueStr ("(null)" for NULL).
func texts(a arrow.Array) []string {
	out := make([]string, a.Len())
	for i := range out {
		out[i] = a.ValueStr(i)
	}
	return out
}

var (
	ts = func(u arrow.TimeUnit, zone string) arrow.DataType {
		return &arrow.TimestampType{Unit: u, TimeZone: zone}
	}
	dec = func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	str = arrow.BinaryTypes.String
)

type castCase struct {
	name string
	col  source.Column
	from arrow.DataType
	in   string // JSON values
	want string // the result's values as texts, joined by |
	fail string // or: the refused row and a part of the reason, "row 1: out of range"
}

func col(t string) source.Column { return source.Column{Name: "c", DataType: t, Nullable: true} }

var castCases = []castCase{
	// Integers: the SQL type's range, not the Arrow type's.
	{name: "int from int32 kept", col: col("int"), from: arrow.PrimitiveTypes.Int32, in: `[1,null,-5]`, want: "1|(null)|-5"},
	{name: "int from int64", col: col("int"), from: arrow.PrimitiveTypes.Int64, in: `[2147483647,null]`, want: "2147483647|(null)"},
	{name: "int overflow", col: col("int"), from: arrow.PrimitiveTypes.Int64, in: `[1,2147483648]`, fail: "row 1: out of range for int (from -2,147,483,648 up to 2,147,483,647)"},
	{name: "tinyint from int16", col: col("tinyint"), from: arrow.PrimitiveTypes.Int16, in: `[0,255]`, want: "0|255"},
	{name: "tinyint negative", col: col("tinyint"), from: arrow.PrimitiveTypes.Int16, in: `[0,-1]`, fail: "row 1: out of range for tinyint (from 0 up to 255)"},
	{name: "tinyint from uint8", col: col("tinyint"), from: arrow.PrimitiveTypes.Uint8, in: `[200]`, want: "200"},
	{name: "smallint from int32 overflow", col: col("smallint"), from: arrow.PrimitiveTypes.Int32, in: `[32768]`, fail: "row 0: out of range for smallint"},
	{name: "bigint from uint64 overflow", col: col("bigint"), from: arrow.PrimitiveTypes.Uint64, in: `[18446744073709551615]`, fail: "row 0: out of range for bigint"},
	{name: "int from whole double", col: col("int"), from: arrow.PrimitiveTypes.Float64, in: `[3,null]`, want: "3|(null)"},
	{name: "int from fractional double", col: col("int"), from: arrow.PrimitiveTypes.Float64, in: `[3.5]`, fail: "row 0: not a whole number"},
	{name: "int from decimal", col: col("int"), from: dec(10, 2), in: `["12.00","-3.00"]`, want: "12|-3"},
	{name: "int from fractional decimal", col: col("int"), from: dec(10, 2), in: `["12.50"]`, fail: "not a whole number"},
	{name: "int from text", col: col("int"), from: str, in: `[" 42 ",null]`, want: "42|(null)"},
	{name: "int from bad text", col: col("int"), from: str, in: `["4x2"]`, fail: "not an integer"},
	{name: "int from bool", col: col("int"), from: arrow.FixedWidthTypes.Boolean, fail: "type"},

	// bit.
	{name: "bit from int", col: col("bit"), from: arrow.PrimitiveTypes.Int8, in: `[0,1,null]`, want: "false|true|(null)"},
	{name: "bit from 2", col: col("bit"), from: arrow.PrimitiveTypes.Int32, in: `[2]`, fail: "not 0 or 1"},
	{name: "bit from text", col: col("bit"), from: str, in: `["True","0"]`, want: "true|false"},

	// Floats.
	{name: "real from double", col: col("real"), from: arrow.PrimitiveTypes.Float64, in: `[1.5]`, want: "1.5"},
	{name: "real overflow", col: col("real"), from: arrow.PrimitiveTypes.Float64, in: `[1e300]`, fail: "out of range for real"},
	{name: "float from real", col: col("float"), from: arrow.PrimitiveTypes.Float32, in: `[0.25]`, want: "0.25"},
	{name: "float from decimal", col: col("float"), from: dec(5, 2), in: `["1.25"]`, want: "1.25"},

	// Decimals: rescaled exactly, or refused.
	{name: "decimal same", col: source.Column{Name: "c", DataType: "decimal", Precision: 18, Scale: 2}, from: dec(18, 2), in: `["1.25",null]`, want: "1.25|(null)"},
	{name: "decimal from spark 38,18", col: source.Column{Name: "c", DataType: "decimal", Precision: 18, Scale: 2}, from: dec(38, 18), in: `["1.250000000000000000","-99.990000000000000000"]`, want: "1.25|-99.99"},
	{name: "decimal lost digits", col: source.Column{Name: "c", DataType: "decimal", Precision: 18, Scale: 2}, from: dec(38, 18), in: `["1.255000000000000000"]`, fail: "more than 2 digits after the decimal point"},
	{name: "decimal overflow", col: source.Column{Name: "c", DataType: "decimal", Precision: 5, Scale: 2}, from: dec(10, 2), in: `["1000.00"]`, fail: "does not fit decimal(5,2)"},
	{name: "decimal from wider scale up", col: source.Column{Name: "c", DataType: "decimal", Precision: 38, Scale: 10}, from: dec(20, 2), in: `["123456789012345678.12"]`, want: "123456789012345678.12"},
	{name: "decimal scale up overflow", col: source.Column{Name: "c", DataType: "decimal", Precision: 38, Scale: 30}, from: dec(20, 0), in: `["12345678901234567890"]`, fail: "does not fit decimal(38,30)"},
	{name: "money from double", col: col("money"), from: arrow.PrimitiveTypes.Float64, in: `[0.1,12.34]`, want: "0.1|12.34"},
	{name: "numeric from a double a unit off", col: source.Column{Name: "c", DataType: "numeric", Precision: 9, Scale: 3}, from: arrow.PrimitiveTypes.Float64, in: `[41201.287000000004,-2.5]`, want: "41201.287|-2.5"},
	{name: "decimal from float32", col: source.Column{Name: "c", DataType: "decimal", Precision: 9, Scale: 2}, from: arrow.PrimitiveTypes.Float32, in: `[1.1,100.25]`, want: "1.1|100.25"},
	{name: "money from inexact double", col: col("money"), from: arrow.PrimitiveTypes.Float64, in: `[0.123456]`, fail: "more than 4 digits"},
	{name: "decimal from int", col: source.Column{Name: "c", DataType: "numeric", Precision: 4, Scale: 1}, from: arrow.PrimitiveTypes.Int64, in: `[999,1000]`, fail: "row 1: does not fit decimal(4,1)"},
	{name: "decimal from text", col: source.Column{Name: "c", DataType: "decimal", Precision: 9, Scale: 3}, from: str, in: `["-1.5","2"]`, want: "-1.5|2"},
	{name: "decimal from bad text", col: source.Column{Name: "c", DataType: "decimal", Precision: 9, Scale: 3}, from: str, in: `["1/3"]`, fail: "not a decimal number"},

	// Dates and times.
	{name: "date from date32", col: col("date"), from: arrow.FixedWidthTypes.Date32, in: `["2026-01-02"]`, want: "2026-01-02"},
	{name: "date from text", col: col("date"), from: str, in: `["2020-01-21",null]`, want: "2020-01-21|(null)"},
	{name: "date from bad text", col: col("date"), from: str, in: `["21/01/2020"]`, fail: "not a date"},
	{name: "date from midnight timestamp", col: col("date"), from: ts(arrow.Microsecond, "UTC"), in: `["2026-01-02T00:00:00Z"]`, want: "2026-01-02"},
	{name: "date from noon", col: col("date"), from: ts(arrow.Microsecond, "UTC"), in: `["2026-01-02T12:00:00Z"]`, fail: "not midnight"},
	{name: "datetime2 from INT96-like us UTC", col: col("datetime2"), from: ts(arrow.Microsecond, "UTC"), in: `["9999-12-31T00:00:00Z","2022-01-01T10:00:00.123456Z"]`, want: "9999-12-31T00:00:00|2022-01-01T10:00:00.123456"},
	{name: "datetime2 from ns floored", col: col("datetime2"), from: ts(arrow.Nanosecond, ""), in: `["2022-01-01T10:00:00.1234567"]`, want: "2022-01-01T10:00:00.123456"},
	{name: "datetime2 from ms", col: col("datetime2"), from: ts(arrow.Millisecond, ""), in: `["1900-01-01T00:00:00.5"]`, want: "1900-01-01T00:00:00.5"},
	{name: "datetime before 1753", col: col("datetime"), from: ts(arrow.Microsecond, ""), in: `["1700-01-01T00:00:00"]`, fail: "out of range for datetime"},
	{name: "smalldatetime after 2079", col: col("smalldatetime"), from: ts(arrow.Second, ""), in: `["2080-01-01T00:00:00"]`, fail: "out of range for smalldatetime (from 1900-01-01 00:00:00 up to 2079-06-06 23:59:00)"},
	{name: "datetime2 from text", col: col("datetime2"), from: str, in: `["2026-03-04 05:06:07.1234567","2026-03-04T05:06:07Z"]`, want: "2026-03-04T05:06:07.123456|2026-03-04T05:06:07"},
	{name: "datetime2 from date", col: col("datetime2"), from: arrow.FixedWidthTypes.Date32, in: `["2026-03-04"]`, want: "2026-03-04T00:00:00"},
	{name: "datetimeoffset from zoned", col: col("datetimeoffset"), from: ts(arrow.Nanosecond, "UTC"), in: `["2026-01-01T03:00:00Z"]`, want: "2026-01-01T03:00:00Z"},
	{name: "datetimeoffset from offset text", col: col("datetimeoffset"), from: str, in: `["2026-01-01T00:00:00-03:00"]`, want: "2026-01-01T03:00:00Z"},
	{name: "time from time64 us", col: source.Column{Name: "c", DataType: "time", DatetimePrecision: 7}, from: arrow.FixedWidthTypes.Time64us, in: `["10:11:12.123456"]`, want: "10:11:12.1234560"},
	{name: "time(3) from text", col: source.Column{Name: "c", DataType: "time", DatetimePrecision: 3}, from: str, in: `["1:02:03.5"]`, want: "01:02:03.500"},
	{name: "time(0) from sub-second", col: source.Column{Name: "c", DataType: "time", DatetimePrecision: 0}, from: arrow.FixedWidthTypes.Time32ms, in: `["10:00:00.5"]`, fail: "more fractional digits than time(0)"},

	// Text, GUIDs and bytes.
	{name: "nvarchar kept", col: source.Column{Name: "c", DataType: "nvarchar", MaxLength: 5}, from: str, in: `["héllo",null]`, want: "héllo|(null)"},
	{name: "nvarchar too long", col: source.Column{Name: "c", DataType: "nvarchar", MaxLength: 5}, from: str, in: `["ok","héllo!"]`, fail: "row 1: longer than nvarchar(5)'s 5 characters"},
	{name: "varchar(max) long", col: source.Column{Name: "c", DataType: "varchar", MaxLength: -1}, from: str, in: `["` + strings.Repeat("x", 9000) + `"]`, want: strings.Repeat("x", 9000)},
	{name: "varchar from large string", col: source.Column{Name: "c", DataType: "varchar", MaxLength: 3}, from: arrow.BinaryTypes.LargeString, in: `["abc"]`, want: "abc"},
	{name: "varchar from int refused", col: source.Column{Name: "c", DataType: "varchar", MaxLength: 5}, from: arrow.PrimitiveTypes.Int32, fail: "type"},
	{name: "guid lower case", col: col("uniqueidentifier"), from: str, in: `["6f9619ff-8b86-d011-b42d-00c04fc964ff","{6F9619FF8B86D011B42D00C04FC964FF}"]`, want: "6F9619FF-8B86-D011-B42D-00C04FC964FF|6F9619FF-8B86-D011-B42D-00C04FC964FF"},
	{name: "guid bad text", col: col("uniqueidentifier"), from: str, in: `["6f9619ff-8b86-d011-b42d"]`, fail: "not a uniqueidentifier"},
	{name: "guid from int refused", col: col("uniqueidentifier"), from: arrow.PrimitiveTypes.Int64, fail: "type"},
	{name: "varbinary kept", col: source.Column{Name: "c", DataType: "varbinary", MaxLength: 4}, from: arrow.BinaryTypes.Binary, in: `["AQID"]`, want: "AQID"},
	{name: "binary too long", col: source.Column{Name: "c", DataType: "binary", MaxLength: 2}, from: arrow.BinaryTypes.Binary, in: `["AQID"]`, fail: "longer than binary(2)'s 2 bytes"},
	{name: "rowversion from fixed", col: col("rowversion"), from: &arrow.FixedSizeBinaryType{ByteWidth: 8}, in: `["AAAAAAAAAAE="]`, want: "AAAAAAAAAAE="},
}

func TestCasts(t *testing.T) {
	for _, c := range castCases {
		t.Run(c.name, func(t *testing.T) {
			fn, err := newCast(c.col, c.from)
			if c.fail == "type" {
				var te *CopyTypeError
				if !errors.As(err, &te) || te.Column != "c" || te.CopyType != c.from.String() {
					t.Fatalf("cast from %s: %v, want *CopyTypeError", c.from, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			in := fromJSON(t, c.from, c.in)
			defer in.Release()
			out, f := fn(in)
			if c.fail != "" {
				if f == nil {
					t.Fatalf("cast of %s gave %v, want a failure %q", c.in, texts(out), c.fail)
				}
				if got := fmt.Sprintf("row %d: %s", f.Row, f.Reason); !strings.Contains(got, c.fail) {
					t.Fatalf("failure %q, want %q", got, c.fail)
				}
				if f.Value != valueText(in, f.Row) || f.Value == "" {
					t.Fatalf("failure value %q", f.Value)
				}
				return
			}
			if f != nil {
				t.Fatalf("cast failed: %+v", f)
			}
			defer out.Release()
			want, _ := bronze.ArrowType(c.col)
			if !arrow.TypeEqual(out.DataType(), want) {
				t.Fatalf("type %s, want %s", out.DataType(), want)
			}
			if got := strings.Join(texts(out), "|"); got != c.want {
				t.Fatalf("values %q, want %q", got, c.want)
			}
			if out.NullN() != in.NullN() {
				t.Fatalf("NULLs %d, want %d", out.NullN(), in.NullN())
			}
		})
	}
}

// A slice of a batch (offset not 0) keeps its own NULLs through a cast that builds new
// values.
func TestCastOfSlice(t *testing.T) {
	in := fromJSON(t, arrow.PrimitiveTypes.Int64, `[1,null,3,null,5,6,7,8,null,10]`)
	defer in.Release()
	s := array.NewSlice(in, 3, 10)
	defer s.Release()
	fn, err := newCast(col("int"), arrow.PrimitiveTypes.Int64)
	if err != nil {
		t.Fatal(err)
	}
	out, f := fn(s)
	if f != nil {
		t.Fatal(f)
	}
	defer out.Release()
	if got := strings.Join(texts(out), "|"); got != "(null)|5|6|7|8|(null)|10" {
		t.Fatalf("values %s", got)
	}
}

// The reasons of refused values name the value in full up to a bound.
func TestValueTextIsBounded(t *testing.T) {
	a := fromJSON(t, str, `["`+strings.Repeat("é", 200)+`"]`)
	defer a.Release()
	if v := valueText(a, 0); len([]rune(v)) != maxValueText+1 || !strings.HasSuffix(v, "…") {
		t.Fatalf("value text %q", v)
	}
}

func TestCanonicalGUID(t *testing.T) {
	b := []byte{0xff, 0x19, 0x96, 0x6f, 0x86, 0x8b, 0x11, 0xd0, 0xb4, 0x2d, 0x00, 0xc0, 0x4f, 0xc9, 0x64, 0xff}
	if g := guidBytesText(b); g != "6F9619FF-8B86-D011-B42D-00C04FC964FF" {
		t.Fatalf("guid %s", g)
	}
	for _, bad := range []string{"", "6F9619FF-8B86-D011-B42D-00C04FC964F", "6F9619FF+8B86-D011-B42D-00C04FC964FF", "ZZ9619FF8B86D011B42D00C04FC964FF"} {
		if _, ok := canonicalGUID(bad); ok {
			t.Fatalf("%q read as a GUID", bad)
		}
	}
}

// parseDate agrees with time.Parse on every day of four centuries and refuses what
// time.Parse refuses.
func TestParseDate(t *testing.T) {
	for d := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2401; d = d.AddDate(0, 0, 7) {
		if d.Year() > 4 && d.Year() < 1600 {
			d = time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		got, ok := parseDate(d.Format(time.DateOnly))
		if !ok || got != d.Unix()/86400 {
			t.Fatalf("%s: %d %v, want %d", d.Format(time.DateOnly), got, ok, d.Unix()/86400)
		}
	}
	for _, bad := range []string{"2026-02-29", "2026-13-01", "2026-00-10", "2026-1-10", "20260110", "2026/01/10", "2026-01-1x", ""} {
		if _, ok := parseDate(bad); ok {
			t.Fatalf("%q read as a date", bad)
		}
	}
	if d, ok := parseDate(" 2024-02-29 "); !ok || d != time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC).Unix()/86400 {
		t.Fatalf("leap day: %d %v", d, ok)
	}
}
