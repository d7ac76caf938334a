package seed

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Casting a copy's column to the stream's type (docs/seed.md § Columns and types). The
// stream's type of a captured column is its bronze type (core/bronze.ArrowType, the
// mapping of docs/reference/sqlserver-cdc.md §7.1); a copy holds the same values in its
// writer's own types (Spark's INT96 and decimal(38,18), DuckDB's timestamp[ns], DMS's
// strings for GUIDs, ...). Every value is cast exactly or not at all: a value the column's
// SQL Server type cannot hold (out of its range, more digits than its scale, text that is
// no GUID, ...) is a failure naming the value, never a NULL or a truncation. The one loss
// the stream shares is sub-microsecond time: bronze holds microseconds, so nanoseconds are
// floored as the stream floors datetime2(7) (docs/reference/sqlserver-cdc.md §7.2).

// castFunc casts one copy column (an Arrow array of the type it was made for) to the
// column's bronze type. The result has the same length and the same NULLs; the caller
// releases it. A value that cannot be cast stops the cast with a *failure.
type castFunc func(in arrow.Array) (arrow.Array, *failure)

// failure is the first value of a column a cast refused.
type failure struct {
	Row    int    // index in the array cast
	Value  string // the value as text, shortened
	Reason string
}

// maxValueText bounds the text of a refused value in an error.
const maxValueText = 80

// valueText is the i-th value of a as text, shortened to maxValueText characters.
func valueText(a arrow.Array, i int) string {
	s := a.ValueStr(i)
	if utf8.RuneCountInString(s) > maxValueText {
		r := []rune(s)
		s = string(r[:maxValueText]) + "…"
	}
	return s
}

func fail(a arrow.Array, i int, format string, args ...any) *failure {
	return &failure{Row: i, Value: valueText(a, i), Reason: fmt.Sprintf(format, args...)}
}

// CopyTypeError: a copy column's type cannot hold the captured column's values in any
// cast (a list for an int, a number for a uniqueidentifier, ...). Found from the copy's
// schema before anything is converted.
type CopyTypeError struct {
	Column     string // the captured column
	SQLType    string // its SQL Server type, e.g. "decimal(18,2)"
	CopyColumn string
	CopyType   string // the copy column's Arrow type
}

func (e *CopyTypeError) Error() string {
	return fmt.Sprintf("copy column %s (%s) cannot be cast to captured column %s (%s): rewrite the copy with a compatible type, or leave the column out and seed with allow_missing_columns",
		e.CopyColumn, e.CopyType, e.Column, e.SQLType)
}

// sqlTypeText is a column's SQL Server type as DDL writes it: decimal(18,2), nvarchar(40),
// nvarchar(max), datetime2(7).
func sqlTypeText(c source.Column) string {
	t := strings.ToLower(c.DataType)
	switch t {
	case "decimal", "numeric":
		return fmt.Sprintf("%s(%d,%d)", t, c.Precision, c.Scale)
	case "char", "varchar", "nchar", "nvarchar", "binary", "varbinary":
		if c.MaxLength < 0 {
			return t + "(max)"
		}
		if c.MaxLength > 0 {
			return fmt.Sprintf("%s(%d)", t, c.MaxLength)
		}
	case "datetime2", "datetimeoffset", "time":
		return fmt.Sprintf("%s(%d)", t, c.DatetimePrecision)
	}
	return t
}

// newCast returns the cast of a copy column of type from to column c's bronze type, or a
// *CopyTypeError (without the copy column's name: the caller adds it) when no value of
// from can be cast.
func newCast(c source.Column, from arrow.DataType) (castFunc, error) {
	want, err := bronze.ArrowType(c)
	if err != nil {
		return nil, err
	}
	var fn castFunc
	switch t := strings.ToLower(c.DataType); t {
	case "bit":
		fn = castBool(from)
	case "tinyint", "smallint", "int", "bigint":
		fn = castInt(t, want, from)
	case "real", "float":
		fn = castFloat(want, from)
	case "decimal", "numeric", "money", "smallmoney":
		fn = castDecimal(want.(*arrow.Decimal128Type), from)
	case "date":
		fn = castDate(from)
	case "datetime", "datetime2", "smalldatetime":
		fn = castDateTime(t, from)
	case "datetimeoffset":
		fn = castDateTimeOffset(from)
	case "time":
		fn = castTime(c, from)
	case "uniqueidentifier":
		fn = castGUID(from)
	case "char", "varchar", "nchar", "nvarchar", "text", "ntext", "xml":
		fn = castText(c, from)
	case "binary", "varbinary", "image", "timestamp", "rowversion":
		fn = castBinary(c, from)
	}
	if fn == nil {
		return nil, &CopyTypeError{Column: c.Name, SQLType: sqlTypeText(c), CopyType: from.String()}
	}
	return fn, nil
}

// retain is the cast of a copy column already of the bronze type whose every value fits
// (check, when not nil, refuses a value anyway).
func retain(check func(in arrow.Array) *failure) castFunc {
	return func(in arrow.Array) (arrow.Array, *failure) {
		if check != nil {
			if f := check(in); f != nil {
				return nil, f
			}
		}
		in.Retain()
		return in, nil
	}
}

// retype is in's data as type dt (the same physical layout: timestamp units and zones,
// int64 and timestamp), sharing its buffers.
func retype(in arrow.Array, dt arrow.DataType) arrow.Array {
	d := in.Data()
	nd := array.NewData(dt, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd)
}

// validity is in's validity bitmap for a new array of offset 0 (nil without NULLs).
func validity(in arrow.Array) *memory.Buffer {
	if in.NullN() == 0 {
		return nil
	}
	d := in.Data()
	bm := d.Buffers()[0]
	if d.Offset() == 0 {
		bm.Retain()
		return bm
	}
	out := make([]byte, bitutil.BytesForBits(int64(in.Len())))
	bitutil.CopyBitmap(bm.Bytes(), d.Offset(), in.Len(), out, 0)
	return memory.NewBufferBytes(out)
}

// fixed builds an array of the fixed-width type dt from values (one per row of in) with
// in's NULLs.
func fixed(in arrow.Array, dt arrow.DataType, values []byte) arrow.Array {
	bm := validity(in)
	vb := memory.NewBufferBytes(values)
	d := array.NewData(dt, in.Len(), []*memory.Buffer{bm, vb}, nil, in.NullN(), 0)
	if bm != nil {
		bm.Release()
	}
	defer d.Release()
	return array.MakeFromData(d)
}

// perRow is a cast computed value by value into a []T of a fixed-width type dt: conv
// returns row i's value, or a reason to refuse it. NULL rows are skipped (left zero).
func perRow[T arrow.FixedWidthType](dt arrow.DataType, conv func(in arrow.Array, i int) (T, string)) castFunc {
	return func(in arrow.Array) (arrow.Array, *failure) {
		out := make([]T, in.Len())
		for i := range out {
			if in.IsNull(i) {
				continue
			}
			v, reason := conv(in, i)
			if reason != "" {
				return nil, fail(in, i, "%s", reason)
			}
			out[i] = v
		}
		return fixed(in, dt, arrow.GetBytes(out)), nil
	}
}

// stringsOf returns the text of row i of a string-like array (utf8, large utf8, or binary
// that is valid UTF-8), or ok false for any other type.
func stringsOf(dt arrow.DataType) (get func(in arrow.Array, i int) (string, bool), ok bool) {
	switch dt.ID() {
	case arrow.STRING:
		return func(in arrow.Array, i int) (string, bool) { return in.(*array.String).Value(i), true }, true
	case arrow.LARGE_STRING:
		return func(in arrow.Array, i int) (string, bool) { return in.(*array.LargeString).Value(i), true }, true
	case arrow.STRING_VIEW:
		return func(in arrow.Array, i int) (string, bool) { return in.(*array.StringView).Value(i), true }, true
	case arrow.BINARY:
		return func(in arrow.Array, i int) (string, bool) {
			b := in.(*array.Binary).Value(i)
			return string(b), utf8.Valid(b)
		}, true
	case arrow.LARGE_BINARY:
		return func(in arrow.Array, i int) (string, bool) {
			b := in.(*array.LargeBinary).Value(i)
			return string(b), utf8.Valid(b)
		}, true
	}
	return nil, false
}

// fromStrings is a cast from a string-like type that turns each text into one output
// value appended to b (which the cast makes with newBuilder); parse returns a reason to
// refuse the text.
func fromStrings(dt arrow.DataType, newBuilder func() array.Builder, parse func(s string, b array.Builder) string) castFunc {
	get, ok := stringsOf(dt)
	if !ok {
		return nil
	}
	return func(in arrow.Array) (arrow.Array, *failure) {
		b := newBuilder()
		defer b.Release()
		b.Reserve(in.Len())
		for i := 0; i < in.Len(); i++ {
			if in.IsNull(i) {
				b.AppendNull()
				continue
			}
			s, valid := get(in, i)
			if !valid {
				return nil, fail(in, i, "not valid UTF-8 text")
			}
			if reason := parse(s, b); reason != "" {
				return nil, fail(in, i, "%s", reason)
			}
		}
		return b.NewArray(), nil
	}
}
