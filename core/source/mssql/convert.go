package mssql

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Values as go-mssqldb returns them when scanned into any (types.go of the driver):
// integers int64, bit bool, real/float float64, decimal/numeric/money []byte fixed-point
// text, date/datetime/datetime2/smalldatetime time.Time in the connection's location (the
// wall clock as stored), datetimeoffset time.Time with its offset, time time.Time on
// 0001-01-01, uniqueidentifier 16 bytes in SQL Server's mixed-endian order, char types
// string, binary types []byte. NULL is nil.

// guidString formats SQL Server's uniqueidentifier bytes as the uppercase canonical text:
// the first three groups are stored little-endian.
func guidString(b []byte) (string, error) {
	if len(b) != 16 {
		return "", fmt.Errorf("uniqueidentifier of %d bytes", len(b))
	}
	var o [16]byte
	o[0], o[1], o[2], o[3] = b[3], b[2], b[1], b[0]
	o[4], o[5] = b[5], b[4]
	o[6], o[7] = b[7], b[6]
	copy(o[8:], b[8:])
	h := strings.ToUpper(hex.EncodeToString(o[:]))
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// timeString formats a time value as HH:MM:SS with the column's fractional digits
// (SQL Server's own text form of time(n)).
func timeString(t time.Time, precision int) string {
	s := t.Format("15:04:05")
	if precision > 0 {
		frac := fmt.Sprintf("%09d", t.Nanosecond())
		if precision > 7 {
			precision = 7
		}
		s += "." + frac[:precision]
	}
	return s
}

// wallUTC is the wall clock of t read as UTC: how a zoneless datetime becomes a
// timestamp_ntz value whatever location the driver attached.
func wallUTC(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// keyValue turns a scanned value of column c into its source.Key form.
func keyValue(c source.Column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := func() (any, error) {
		return nil, fmt.Errorf("key column %s: unexpected %T for %s", c.Name, v, c.DataType)
	}
	switch t := strings.ToLower(c.DataType); t {
	case "tinyint", "smallint", "int", "bigint":
		if x, ok := v.(int64); ok {
			return x, nil
		}
	case "bit":
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case "real", "float":
		if x, ok := v.(float64); ok {
			return x, nil
		}
	case "decimal", "numeric", "money", "smallmoney":
		switch x := v.(type) {
		case []byte:
			return string(x), nil
		case string:
			return x, nil
		}
	case "uniqueidentifier":
		if x, ok := v.([]byte); ok {
			return guidString(x)
		}
	case "time":
		if x, ok := v.(time.Time); ok {
			return timeString(x, c.DatetimePrecision), nil
		}
	case "char", "varchar", "nchar", "nvarchar":
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	case "datetimeoffset":
		if x, ok := v.(time.Time); ok {
			return x.UTC(), nil
		}
	case "date", "datetime", "datetime2", "smalldatetime":
		if x, ok := v.(time.Time); ok {
			return wallUTC(x), nil
		}
	case "binary", "varbinary", "timestamp", "rowversion":
		if x, ok := v.([]byte); ok {
			return append([]byte(nil), x...), nil
		}
	}
	return bad()
}

// appender appends one scanned value to a builder and returns its approximate size in
// bytes (for the batch byte cap).
type appender func(b array.Builder, v any) (int, error)

// newAppender returns the appender of a field of the bronze type dt, for a column of SQL
// type sqlType with fractional precision prec (time only).
func newAppender(name string, dt arrow.DataType, sqlType string, prec int) (appender, error) {
	bad := func(v any) error {
		return fmt.Errorf("column %s: cannot store %T in %s", name, v, dt)
	}
	sqlType = strings.ToLower(sqlType)
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return func(b array.Builder, v any) (int, error) {
			x, ok := v.(bool)
			if !ok {
				return 0, bad(v)
			}
			b.(*array.BooleanBuilder).Append(x)
			return 1, nil
		}, nil
	case *arrow.Int16Type:
		return func(b array.Builder, v any) (int, error) {
			x, ok := v.(int64)
			if !ok {
				return 0, bad(v)
			}
			b.(*array.Int16Builder).Append(int16(x))
			return 2, nil
		}, nil
	case *arrow.Int32Type:
		return func(b array.Builder, v any) (int, error) {
			x, ok := v.(int64)
			if !ok {
				return 0, bad(v)
			}
			b.(*array.Int32Builder).Append(int32(x))
			return 4, nil
		}, nil
	case *arrow.Int64Type:
		return func(b array.Builder, v any) (int, error) {
			x, ok := v.(int64)
			if !ok {
				return 0, bad(v)
			}
			b.(*array.Int64Builder).Append(x)
			return 8, nil
		}, nil
	case *arrow.Float32Type:
		return func(b array.Builder, v any) (int, error) {
			x, ok := v.(float64)
			if !ok {
				return 0, bad(v)
			}
			b.(*array.Float32Builder).Append(float32(x))
			return 4, nil
		}, nil
	case *arrow.Float64Type:
		return func(b array.Builder, v any) (int, error) {
			x, ok := v.(float64)
			if !ok {
				return 0, bad(v)
			}
			b.(*array.Float64Builder).Append(x)
			return 8, nil
		}, nil
	case *arrow.Decimal128Type:
		return func(b array.Builder, v any) (int, error) {
			var s string
			switch x := v.(type) {
			case []byte:
				s = string(x)
			case string:
				s = x
			default:
				return 0, bad(v)
			}
			n, err := parseDecimal(s, t.Precision, t.Scale)
			if err != nil {
				return 0, fmt.Errorf("column %s: decimal %q: %w", name, s, err)
			}
			b.(*array.Decimal128Builder).Append(n)
			return 16, nil
		}, nil
	case *arrow.Date32Type:
		return func(b array.Builder, v any) (int, error) {
			x, ok := v.(time.Time)
			if !ok {
				return 0, bad(v)
			}
			b.(*array.Date32Builder).Append(arrow.Date32FromTime(wallUTC(x)))
			return 4, nil
		}, nil
	case *arrow.TimestampType:
		instant := t.TimeZone != ""
		return func(b array.Builder, v any) (int, error) {
			x, ok := v.(time.Time)
			if !ok {
				return 0, bad(v)
			}
			if !instant {
				x = wallUTC(x)
			}
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(x.UnixMicro()))
			return 8, nil
		}, nil
	case *arrow.StringType:
		return func(b array.Builder, v any) (int, error) {
			var s string
			switch x := v.(type) {
			case string:
				s = x
			case []byte:
				if sqlType == "uniqueidentifier" {
					g, err := guidString(x)
					if err != nil {
						return 0, fmt.Errorf("column %s: %w", name, err)
					}
					s = g
				} else {
					s = string(x)
				}
			case time.Time:
				s = timeString(x, prec)
			default:
				return 0, bad(v)
			}
			b.(*array.StringBuilder).Append(s)
			return len(s) + 4, nil
		}, nil
	case *arrow.BinaryType:
		return func(b array.Builder, v any) (int, error) {
			x, ok := v.([]byte)
			if !ok {
				return 0, bad(v)
			}
			b.(*array.BinaryBuilder).Append(x)
			return len(x) + 4, nil
		}, nil
	}
	return nil, fmt.Errorf("column %s: no reader for bronze type %s", name, dt)
}

// parseDecimal reads fixed-point text (as go-mssqldb renders decimal and money) into a
// decimal128 of the given scale. Up to 18 digits take an allocation-free path; longer
// values go through decimal128.FromString.
func parseDecimal(s string, prec, scale int32) (decimal128.Num, error) {
	if v, ok := parseSmallDecimal(s, scale); ok {
		return decimal128.FromI64(v), nil
	}
	return decimal128.FromString(s, prec, scale)
}

// parseSmallDecimal parses [-]digits[.digits] with at most 18 digits after scaling to
// scale fractional digits, without rounding: ok is false for anything else.
func parseSmallDecimal(s string, scale int32) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v int64
	digits, frac := 0, int32(-1)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.' && frac < 0:
			frac = 0
			continue
		case c < '0' || c > '9':
			return 0, false
		}
		if frac >= 0 {
			if frac == scale {
				if c != '0' {
					return 0, false // more fractional digits than the scale: let FromString decide
				}
				continue
			}
			frac++
		}
		if v != 0 || c != '0' {
			digits++
		}
		if digits > 18 {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if frac < 0 {
		frac = 0
	}
	for ; frac < scale; frac++ {
		if digits++; digits > 18 {
			return 0, false
		}
		v *= 10
	}
	if neg {
		v = -v
	}
	return v, true
}
