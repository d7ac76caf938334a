package seed

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Dates and times: date, datetime, datetime2, smalldatetime, datetimeoffset and time
// (docs/reference/sqlserver-cdc.md §7.1, §7.2). A zoned copy timestamp (Spark's timestamp,
// an INT96, a Parquet timestamp adjusted to UTC) is an instant: a datetimeoffset column
// takes it as is, a datetime column takes its UTC wall clock, which is the value a Spark
// job with spark.sql.session.timeZone=UTC read from SQL Server (docs/seed.md § Columns and
// types). A zone-less timestamp is a wall clock: a datetimeoffset column reads it as UTC.

const (
	microsPerDay = 86_400_000_000
	nanosPerDay  = 86_400_000_000_000
)

// microsOf is a calendar time in microseconds since 1970-01-01T00:00:00 (UTC wall clock).
func microsOf(y int, m time.Month, d, hh, mm, ss, us int) int64 {
	return time.Date(y, m, d, hh, mm, ss, us*1000, time.UTC).UnixMicro()
}

// dateTimeRange is the range of a SQL Server date/time type in microseconds of its wall
// clock (datetimeoffset: of UTC).
func dateTimeRange(sqlType string) (lo, hi int64) {
	switch sqlType {
	case "datetime":
		return microsOf(1753, 1, 1, 0, 0, 0, 0), microsOf(9999, 12, 31, 23, 59, 59, 997_000)
	case "smalldatetime":
		return microsOf(1900, 1, 1, 0, 0, 0, 0), microsOf(2079, 6, 6, 23, 59, 0, 0)
	}
	return microsOf(1, 1, 1, 0, 0, 0, 0), microsOf(9999, 12, 31, 23, 59, 59, 999_999)
}

// floorDiv is a / b rounded towards minus infinity, and the remainder (0 <= r < b).
func floorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}

// timestampMicros returns a reader of row i of a timestamp array of unit u in
// microseconds (floored), with ok false when the value overflows.
func timestampMicros(u arrow.TimeUnit) func(v int64) (int64, bool) {
	switch u {
	case arrow.Second:
		return func(v int64) (int64, bool) {
			if v > math.MaxInt64/1_000_000 || v < math.MinInt64/1_000_000 {
				return 0, false
			}
			return v * 1_000_000, true
		}
	case arrow.Millisecond:
		return func(v int64) (int64, bool) {
			if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
				return 0, false
			}
			return v * 1000, true
		}
	case arrow.Nanosecond:
		return func(v int64) (int64, bool) { q, _ := floorDiv(v, 1000); return q, true }
	}
	return func(v int64) (int64, bool) { return v, true }
}

// dateRange is the range of SQL Server date in days since 1970-01-01.
var dateLo, dateHi = microsOf(1, 1, 1, 0, 0, 0, 0) / microsPerDay, microsOf(9999, 12, 31, 0, 0, 0, 0) / microsPerDay

func castDate(from arrow.DataType) castFunc {
	outOfRange := "out of range for date (from 0001-01-01 up to 9999-12-31)"
	inRange := func(d int64) string {
		if d < dateLo || d > dateHi {
			return outOfRange
		}
		return ""
	}
	want := arrow.FixedWidthTypes.Date32
	switch dt := from.(type) {
	case *arrow.Date32Type:
		return retain(func(in arrow.Array) *failure {
			a := in.(*array.Date32)
			for i := 0; i < a.Len(); i++ {
				if a.IsValid(i) && inRange(int64(a.Value(i))) != "" {
					return fail(in, i, "%s", outOfRange)
				}
			}
			return nil
		})
	case *arrow.Date64Type:
		return perRow(want, func(in arrow.Array, i int) (int32, string) {
			d, r := floorDiv(int64(in.(*array.Date64).Value(i)), 86_400_000)
			if r != 0 {
				return 0, "not midnight: date holds no time of day"
			}
			return int32(d), inRange(d)
		})
	case *arrow.TimestampType:
		perDay := map[arrow.TimeUnit]int64{arrow.Second: 86_400, arrow.Millisecond: 86_400_000, arrow.Microsecond: microsPerDay, arrow.Nanosecond: nanosPerDay}[dt.Unit]
		return perRow(want, func(in arrow.Array, i int) (int32, string) {
			d, r := floorDiv(int64(in.(*array.Timestamp).Value(i)), perDay)
			if r != 0 {
				return 0, "not midnight: date holds no time of day"
			}
			return int32(d), inRange(d)
		})
	}
	get, ok := stringsOf(from)
	if !ok {
		return nil
	}
	return perRow(want, func(in arrow.Array, i int) (int32, string) {
		s, valid := get(in, i)
		d, ok := parseDate(s)
		if !valid || !ok {
			return 0, "not a date (YYYY-MM-DD)"
		}
		return int32(d), inRange(d)
	})
}

// parseDate reads a YYYY-MM-DD text (surrounding spaces allowed) as days since
// 1970-01-01 in the proleptic Gregorian calendar; ok is false for any other text and for a
// day its month does not have.
func parseDate(s string) (int64, bool) {
	if len(s) != 10 {
		s = strings.TrimSpace(s)
		if len(s) != 10 {
			return 0, false
		}
	}
	if s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	num := func(t string) (int64, bool) {
		var n int64
		for i := 0; i < len(t); i++ {
			c := t[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int64(c-'0')
		}
		return n, true
	}
	y, ok1 := num(s[:4])
	m, ok2 := num(s[5:7])
	d, ok3 := num(s[8:])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > int64(daysIn(time.Month(m), int(y))) {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

// daysIn is the number of days of month m in year y.
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// daysFromCivil is the days since 1970-01-01 of a proleptic Gregorian date (Howard
// Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// textTimeLayouts are the date-time texts a copy may hold, tried in order (fractions of
// any length; "T" or a space between date and time).
var textTimeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999", time.DateOnly}

// parseTextTime reads a date-time text; a text without an offset is read as UTC.
func parseTextTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, l := range textTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// castDateTime casts to a datetime, datetime2 or smalldatetime column (timestamp[us]
// without zone), checking the type's range.
func castDateTime(sqlType string, from arrow.DataType) castFunc {
	return castTimestamp(bronze.CommitTSType, sqlType, from)
}

// castDateTimeOffset casts to a datetimeoffset column (timestamp[us, UTC]).
func castDateTimeOffset(from arrow.DataType) castFunc {
	return castTimestamp(bronze.UTCTimestampType, "datetimeoffset", from)
}

func castTimestamp(want *arrow.TimestampType, sqlType string, from arrow.DataType) castFunc {
	lo, hi := dateTimeRange(sqlType)
	outOfRange := fmt.Sprintf("out of range for %s (from %s up to %s)", sqlType,
		time.UnixMicro(lo).UTC().Format("2006-01-02 15:04:05"), time.UnixMicro(hi).UTC().Format("2006-01-02 15:04:05.999999"))
	inRange := func(us int64) string {
		if us < lo || us > hi {
			return outOfRange
		}
		return ""
	}
	switch dt := from.(type) {
	case *arrow.TimestampType:
		if dt.Unit == arrow.Microsecond {
			// The same microseconds: share the buffers, check the range.
			return func(in arrow.Array) (arrow.Array, *failure) {
				a := in.(*array.Timestamp)
				for i := 0; i < a.Len(); i++ {
					if a.IsValid(i) && inRange(int64(a.Value(i))) != "" {
						return nil, fail(in, i, "%s", outOfRange)
					}
				}
				return retype(in, want), nil
			}
		}
		micros := timestampMicros(dt.Unit)
		return perRow(want, func(in arrow.Array, i int) (int64, string) {
			us, ok := micros(int64(in.(*array.Timestamp).Value(i)))
			if !ok {
				return 0, outOfRange
			}
			return us, inRange(us)
		})
	case *arrow.Date32Type:
		return perRow(want, func(in arrow.Array, i int) (int64, string) {
			us := int64(in.(*array.Date32).Value(i)) * microsPerDay
			return us, inRange(us)
		})
	case *arrow.Date64Type:
		return perRow(want, func(in arrow.Array, i int) (int64, string) {
			us := int64(in.(*array.Date64).Value(i)) * 1000
			return us, inRange(us)
		})
	}
	return fromStrings(from, func() array.Builder { return array.NewTimestampBuilder(memory.DefaultAllocator, want) },
		func(s string, b array.Builder) string {
			t, ok := parseTextTime(s)
			if !ok {
				return "not a date and time (RFC 3339, or YYYY-MM-DD hh:mm:ss[.fffffff])"
			}
			us := t.UnixMicro()
			if r := inRange(us); r != "" {
				return r
			}
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(us))
			return ""
		})
}

// castTime casts to a time(p) column, whose bronze type is its text HH:MM:SS with p
// fractional digits (the form core/source/mssql reads). A value with non-zero digits
// below the column's precision cannot come from it and is refused.
func castTime(c source.Column, from arrow.DataType) castFunc {
	p := min(max(c.DatetimePrecision, 0), 7)
	step := int64(math.Pow10(9 - p)) // nanoseconds per last digit
	format := func(nanos int64) (string, string) {
		if nanos < 0 || nanos >= nanosPerDay {
			return "", "not a time of day"
		}
		if nanos%step != 0 {
			return "", fmt.Sprintf("has more fractional digits than time(%d)", p)
		}
		s := fmt.Sprintf("%02d:%02d:%02d", nanos/3_600_000_000_000, nanos/60_000_000_000%60, nanos/1_000_000_000%60)
		if p > 0 {
			s += "." + fmt.Sprintf("%09d", nanos%1_000_000_000)[:p]
		}
		return s, ""
	}
	var nanosOf func(in arrow.Array, i int) int64
	switch dt := from.(type) {
	case *arrow.Time32Type:
		m := int64(1_000_000_000)
		if dt.Unit == arrow.Millisecond {
			m = 1_000_000
		}
		nanosOf = func(in arrow.Array, i int) int64 { return int64(in.(*array.Time32).Value(i)) * m }
	case *arrow.Time64Type:
		m := int64(1)
		if dt.Unit == arrow.Microsecond {
			m = 1000
		}
		nanosOf = func(in arrow.Array, i int) int64 { return int64(in.(*array.Time64).Value(i)) * m }
	}
	newBuilder := func() array.Builder { return array.NewStringBuilder(memory.DefaultAllocator) }
	if nanosOf != nil {
		return func(in arrow.Array) (arrow.Array, *failure) {
			b := newBuilder().(*array.StringBuilder)
			defer b.Release()
			for i := 0; i < in.Len(); i++ {
				if in.IsNull(i) {
					b.AppendNull()
					continue
				}
				s, reason := format(nanosOf(in, i))
				if reason != "" {
					return nil, fail(in, i, "%s", reason)
				}
				b.Append(s)
			}
			return b.NewArray(), nil
		}
	}
	return fromStrings(from, newBuilder, func(s string, b array.Builder) string {
		t, err := time.Parse("15:04:05.999999999", strings.TrimSpace(s))
		if err != nil {
			return "not a time of day (hh:mm:ss[.fffffff])"
		}
		text, reason := format(int64(t.Hour())*3_600_000_000_000 + int64(t.Minute())*60_000_000_000 + int64(t.Second())*1_000_000_000 + int64(t.Nanosecond()))
		if reason != "" {
			return reason
		}
		b.(*array.StringBuilder).Append(text)
		return ""
	})
}
