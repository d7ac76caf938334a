package cdcsim

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Stored values follow the Go conventions of source.Key: int64 for integer types, bool for
// bit, float64 for real and float, string for char types, xml, uniqueidentifier (uppercase
// canonical), time ("hh:mm:ss" plus the column's fraction digits) and decimal types
// (fixed-point text with the column's scale), time.Time in UTC for date and datetime types
// (microsecond precision), []byte for binary types; nil is NULL.

// kind is the physical class of a SQL Server type in the simulator.
type kind int

const (
	kindOther kind = iota
	kindInt
	kindBool
	kindFloat
	kindDecimal
	kindDate
	kindDateTime
	kindTime
	kindString
	kindGUID
	kindBinary
	kindHierarchy // hierarchyid: its path text
	kindSpatial   // geometry, geography: OGC well-known binary
	kindVariant   // sql_variant: "<base type>:<text>"
)

func kindOf(dataType string) kind {
	switch dataType {
	case "tinyint", "smallint", "int", "bigint":
		return kindInt
	case "bit":
		return kindBool
	case "real", "float":
		return kindFloat
	case "decimal", "numeric", "money", "smallmoney":
		return kindDecimal
	case "date":
		return kindDate
	case "datetime", "datetime2", "smalldatetime", "datetimeoffset":
		return kindDateTime
	case "time":
		return kindTime
	case "char", "varchar", "nchar", "nvarchar", "text", "ntext", "xml":
		return kindString
	case "uniqueidentifier":
		return kindGUID
	case "binary", "varbinary", "image", "timestamp", "rowversion":
		return kindBinary
	case "hierarchyid":
		return kindHierarchy
	case "geometry", "geography":
		return kindSpatial
	case "sql_variant":
		return kindVariant
	}
	return kindOther
}

// ValueError is a value that does not fit its column (wrong Go type, out of range, too
// long, NULL in a NOT NULL column).
type ValueError struct {
	Column string
	Type   string
	Reason string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("column %s (%s): %s", e.Column, e.Type, e.Reason)
}

func valueErr(c source.Column, format string, args ...any) error {
	return &ValueError{Column: c.Name, Type: c.DataType, Reason: fmt.Sprintf(format, args...)}
}

func intRange(dataType string) (int64, int64) {
	switch dataType {
	case "tinyint":
		return 0, 255
	case "smallint":
		return math.MinInt16, math.MaxInt16
	case "int":
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func decimalScale(c source.Column) (prec, scale int) {
	switch c.DataType {
	case "money":
		return 19, 4
	case "smallmoney":
		return 10, 4
	}
	p, s := c.Precision, c.Scale
	if p == 0 {
		p = 18
	}
	return p, s
}

// normalize turns a Go value into the stored form for column c.
func normalize(c source.Column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch kindOf(c.DataType) {
	case kindInt:
		var n int64
		switch x := v.(type) {
		case int:
			n = int64(x)
		case int8:
			n = int64(x)
		case int16:
			n = int64(x)
		case int32:
			n = int64(x)
		case int64:
			n = x
		case uint8:
			n = int64(x)
		case uint16:
			n = int64(x)
		case uint32:
			n = int64(x)
		case float64: // a bound decoded from JSON
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return nil, valueErr(c, "%v is not an integer", x)
			}
			n = int64(x)
		case string, json.Number:
			p, err := strconv.ParseInt(fmt.Sprint(x), 10, 64)
			if err != nil {
				return nil, valueErr(c, "%q is not an integer", x)
			}
			n = p
		default:
			return nil, valueErr(c, "want an integer, got %T", v)
		}
		lo, hi := intRange(c.DataType)
		if n < lo || n > hi {
			return nil, valueErr(c, "%d out of range", n)
		}
		return n, nil
	case kindBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int:
			return x != 0, nil
		case int64:
			return x != 0, nil
		case string:
			if b, err := strconv.ParseBool(x); err == nil {
				return b, nil
			}
		}
		return nil, valueErr(c, "want a bool, got %T", v)
	case kindFloat:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		case int:
			f = float64(x)
		case int64:
			f = float64(x)
		case string, json.Number:
			p, err := strconv.ParseFloat(fmt.Sprint(x), 64)
			if err != nil {
				return nil, valueErr(c, "%q is not a number", x)
			}
			f = p
		default:
			return nil, valueErr(c, "want a float, got %T", v)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, valueErr(c, "NaN and infinities are not SQL Server values")
		}
		if c.DataType == "real" {
			f = float64(float32(f))
		}
		return f, nil
	case kindDecimal:
		return normDecimal(c, v)
	case kindDate:
		t, ok := asTime(v)
		if !ok {
			return nil, valueErr(c, "want a time.Time or ISO 8601 text, got %T %v", v, v)
		}
		y, m, d := t.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
	case kindDateTime:
		t, ok := asTime(v)
		if !ok {
			return nil, valueErr(c, "want a time.Time or ISO 8601 text, got %T %v", v, v)
		}
		if c.DataType != "datetimeoffset" {
			// Zoneless types keep the wall clock as given.
			y, mo, d := t.Date()
			h, mi, s := t.Clock()
			t = time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
		}
		t = t.UTC()
		switch c.DataType {
		case "datetime":
			t = roundDatetime(t)
		case "smalldatetime":
			t = t.Round(time.Minute)
		default:
			p := c.DatetimePrecision
			if p == 0 && c.DataType == "datetime2" {
				p = 7
			}
			if p < 6 {
				t = t.Round(time.Duration(math.Pow10(9 - p)))
			}
		}
		return t.Truncate(time.Microsecond), nil
	case kindTime:
		return normTime(c, v)
	case kindString:
		s, ok := v.(string)
		if !ok {
			return nil, valueErr(c, "want a string, got %T", v)
		}
		n := utf8.RuneCountInString(s)
		if c.MaxLength > 0 && n > c.MaxLength {
			return nil, valueErr(c, "%d characters, more than %d", n, c.MaxLength)
		}
		if (c.DataType == "char" || c.DataType == "nchar") && c.MaxLength > n {
			s += strings.Repeat(" ", c.MaxLength-n)
		}
		return s, nil
	case kindHierarchy:
		s, ok := v.(string)
		if !ok || !strings.HasPrefix(s, "/") || !strings.HasSuffix(s, "/") {
			return nil, valueErr(c, "want a hierarchyid path such as /1/3/, got %v", v)
		}
		return s, nil
	case kindSpatial:
		return normSpatial(c, v)
	case kindVariant:
		return normVariant(c, v)
	case kindGUID:
		s, ok := v.(string)
		if !ok {
			return nil, valueErr(c, "want a GUID string, got %T", v)
		}
		g, err := canonicalGUID(s)
		if err != nil {
			return nil, valueErr(c, "%v", err)
		}
		return g, nil
	case kindBinary:
		b, ok := v.([]byte)
		if s, isText := v.(string); isText && (strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")) {
			d, err := hex.DecodeString(s[2:])
			if err != nil {
				return nil, valueErr(c, "%q is not 0x hex", s)
			}
			b, ok = d, true
		}
		if !ok {
			return nil, valueErr(c, "want []byte or 0x hex text, got %T", v)
		}
		if c.MaxLength > 0 && len(b) > c.MaxLength {
			return nil, valueErr(c, "%d bytes, more than %d", len(b), c.MaxLength)
		}
		out := append([]byte(nil), b...)
		if c.DataType == "binary" && c.MaxLength > len(out) {
			out = append(out, make([]byte, c.MaxLength-len(out))...)
		}
		return out, nil
	}
	return v, nil
}

// asTime reads a time.Time, or ISO 8601 text as a bound decoded from JSON carries it (a
// text without a zone is read as UTC wall time).
func asTime(v any) (time.Time, bool) {
	switch x := v.(type) {
	case time.Time:
		return x, true
	case string:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05.999999999 -07:00", "2006-01-02"} {
			if t, err := time.Parse(layout, x); err == nil {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// roundDatetime rounds to datetime's 1/300 s ticks, as SQL Server's datetime does.
func roundDatetime(t time.Time) time.Time {
	day := t.Truncate(24 * time.Hour)
	ns := t.Sub(day).Nanoseconds()
	ticks := (ns*300 + 500_000_000) / 1_000_000_000
	return day.Add(time.Duration(ticks * 1_000_000_000 / 300))
}

func normDecimal(c source.Column, v any) (any, error) {
	prec, scale := decimalScale(c)
	var r big.Rat
	if n, ok := v.(json.Number); ok {
		v = string(n)
	}
	switch x := v.(type) {
	case string:
		if _, ok := r.SetString(strings.TrimSpace(x)); !ok {
			return nil, valueErr(c, "%q is not a decimal", x)
		}
	case int:
		r.SetInt64(int64(x))
	case int64:
		r.SetInt64(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, valueErr(c, "not a number")
		}
		r.SetFloat64(x)
	default:
		return nil, valueErr(c, "want a decimal string or number, got %T", v)
	}
	s := r.FloatString(scale)
	digits := strings.TrimLeft(strings.TrimPrefix(strings.Replace(s, ".", "", 1), "-"), "0")
	if len(digits) > prec {
		return nil, valueErr(c, "%s does not fit decimal(%d,%d)", s, prec, scale)
	}
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s, nil
}

func normTime(c source.Column, v any) (any, error) {
	var d time.Duration
	switch x := v.(type) {
	case time.Duration:
		d = x
	case string:
		t, err := time.Parse("15:04:05.999999999", x)
		if err != nil {
			return nil, valueErr(c, "%q is not a time of day", x)
		}
		d = time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
	default:
		return nil, valueErr(c, "want a time.Duration or \"hh:mm:ss.fffffff\", got %T", v)
	}
	if d < 0 || d >= 24*time.Hour {
		return nil, valueErr(c, "%v is not a time of day", d)
	}
	p := c.DatetimePrecision
	if p == 0 {
		p = 7
	}
	step := time.Duration(math.Pow10(9 - p))
	if p == 0 {
		step = time.Second
	}
	d = d.Truncate(step)
	s := fmt.Sprintf("%02d:%02d:%02d", int(d/time.Hour), int(d/time.Minute)%60, int(d/time.Second)%60)
	if p > 0 {
		frac := fmt.Sprintf("%09d", int64(d%time.Second))
		s += "." + frac[:p]
	}
	return s, nil
}

func canonicalGUID(s string) (string, error) {
	t := strings.Trim(s, "{}")
	if len(t) != 36 || t[8] != '-' || t[13] != '-' || t[18] != '-' || t[23] != '-' {
		return "", fmt.Errorf("%q is not a GUID", s)
	}
	for i := 0; i < len(t); i++ {
		ch := t[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f' || ch >= 'A' && ch <= 'F') {
			return "", fmt.Errorf("%q is not a GUID", s)
		}
	}
	return strings.ToUpper(t), nil
}

// caseInsensitive reports whether a column compares ignoring case (a collation with _CI_).
func caseInsensitive(c source.Column) bool {
	return strings.Contains(strings.ToUpper(c.Collation), "_CI")
}

// compareValues orders two stored values of column c like SQL Server's ORDER BY: NULL first.
func compareValues(c source.Column, a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch x := a.(type) {
	case int64:
		return cmpOrdered(x, b.(int64))
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case float64:
		return cmpOrdered(x, b.(float64))
	case time.Time:
		return x.Compare(b.(time.Time))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	case string:
		y := b.(string)
		switch kindOf(c.DataType) {
		case kindDecimal:
			return compareDecimalText(x, y)
		case kindGUID:
			return compareGUID(x, y)
		case kindString:
			x, y = strings.TrimRight(x, " "), strings.TrimRight(y, " ")
			if caseInsensitive(c) {
				x, y = strings.ToLower(x), strings.ToLower(y)
			}
		}
		return strings.Compare(x, y)
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func cmpOrdered[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareDecimalText compares two fixed-point texts of the same scale.
func compareDecimalText(a, b string) int {
	na, nb := strings.HasPrefix(a, "-"), strings.HasPrefix(b, "-")
	if na != nb {
		if na {
			return -1
		}
		return 1
	}
	a, b = strings.TrimPrefix(a, "-"), strings.TrimPrefix(b, "-")
	ia, ib := strings.IndexByte(a, '.'), strings.IndexByte(b, '.')
	if ia < 0 {
		ia = len(a)
	}
	if ib < 0 {
		ib = len(b)
	}
	r := cmpOrdered(int64(ia), int64(ib))
	if r == 0 {
		r = strings.Compare(a, b)
	}
	if na {
		return -r
	}
	return r
}

// guidOrder is where, in the canonical text form, each byte SQL Server compares sits, in
// the order it compares them: the storage bytes 10-15, 8-9, 6-7, 4-5, 0-3 (SqlGuid's
// order), and the storage form keeps the first three groups little-endian, so bytes 6-7
// are the third group's text reversed, 4-5 the second's and 0-3 the first's
// (docs/reference/sqlserver-cdc.md §13.7).
var guidOrder = []int{24, 26, 28, 30, 32, 34, 19, 21, 16, 14, 11, 9, 6, 4, 2, 0}

// compareGUID orders two canonical uniqueidentifier texts as SQL Server does.
func compareGUID(a, b string) int {
	for _, i := range guidOrder {
		if r := strings.Compare(strings.ToUpper(a[i:i+2]), strings.ToUpper(b[i:i+2])); r != 0 {
			return r
		}
	}
	return 0
}

// encodeValue is the identity of a value in a unique index: equal under the column's
// comparison means equal encodings.
func encodeValue(c source.Column, v any) string {
	switch x := v.(type) {
	case nil:
		return "\x00"
	case int64:
		return "i" + strconv.FormatInt(x, 10)
	case string:
		if kindOf(c.DataType) == kindString {
			x = strings.TrimRight(x, " ")
			if caseInsensitive(c) {
				x = strings.ToLower(x)
			}
		}
		return "s" + x
	case time.Time:
		return "t" + strconv.FormatInt(x.UnixMicro(), 10)
	case []byte:
		return "b" + string(x)
	}
	return "v" + fmt.Sprint(v)
}

// normSpatial stores a geometry or geography value as the well-known binary STAsBinary()
// returns: []byte as given, or the WKT of a point, "POINT (x y)", as SQL Server parses a
// string parameter.
func normSpatial(c source.Column, v any) (any, error) {
	switch x := v.(type) {
	case []byte:
		return append([]byte(nil), x...), nil
	case string:
		var px, py float64
		if _, err := fmt.Sscanf(strings.ToUpper(strings.TrimSpace(x)), "POINT (%g %g)", &px, &py); err != nil {
			return nil, valueErr(c, "%q: the simulator parses only POINT (x y)", x)
		}
		return pointWKB(px, py), nil
	}
	return nil, valueErr(c, "want WKB bytes or POINT WKT, got %T", v)
}

// pointWKB is the little-endian OGC well-known binary of a 2-D point.
func pointWKB(x, y float64) []byte {
	b := []byte{1, 1, 0, 0, 0}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
}

// normVariant stores a sql_variant as the text core/source/mssql reads it as: the base
// type, a colon, the value. Go values take the base type go-mssqldb binds them as
// (integers bigint, strings nvarchar, bool bit); text already in that form is kept.
func normVariant(c source.Column, v any) (any, error) {
	switch x := v.(type) {
	case int:
		return "bigint:" + strconv.Itoa(x), nil
	case int64:
		return "bigint:" + strconv.FormatInt(x, 10), nil
	case bool:
		if x {
			return "bit:1", nil
		}
		return "bit:0", nil
	case string:
		return "nvarchar:" + x, nil
	}
	return nil, valueErr(c, "the simulator stores integer, bool and string sql_variant values, got %T", v)
}
