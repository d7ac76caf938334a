package parquetio

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestStatsFromValuesWritten(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	s := mustSchema(t, allTypeColumns)
	rec := bronzeRecord(memory.DefaultAllocator, s, 10, true)
	defer rec.Release()
	w := NewWriter(st, s, WriterOptions{NumIndexedCols: -1})
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	files, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		NumRecords int64
		MinValues  map[string]json.RawMessage
		MaxValues  map[string]json.RawMessage
		NullCount  map[string]int64
	}
	if err := json.Unmarshal([]byte(files[0].Stats), &stats); err != nil {
		t.Fatalf("stats %s: %v", files[0].Stats, err)
	}
	if stats.NumRecords != 10 {
		t.Errorf("numRecords %d", stats.NumRecords)
	}
	if len(stats.NullCount) != s.NumFields() {
		t.Errorf("nullCount has %d columns, want %d", len(stats.NullCount), s.NumFields())
	}
	for name, n := range stats.NullCount {
		if n != 1 {
			t.Errorf("nullCount[%s] = %d, want 1", name, n)
		}
	}
	wantMin := map[string]string{
		"c_tinyint":    `-32768`,
		"c_int":        `-2147483648`,
		"c_bigint":     `-9223372036854775808`,
		"c_real":       `-3.3999999521443642e+38`,
		"c_float":      `-1.79e+308`,
		"c_dec9":       `-9999999.99`,
		"c_dec18":      `-99999999999999.9999`,
		"c_dec38":      `-99999999999999999999999999999999999999`,
		"c_dec38s38":   `-0.99999999999999999999999999999999999999`,
		"c_money":      `-999999999999999.9999`,
		"c_smallmoney": `-999999.9999`,
		"c_date":       `"0001-01-01"`,
		"c_datetime2":  `"0001-01-01T00:00:00.000"`,
		"c_dto":        `"0001-01-01T00:00:00.000Z"`,
		"c_nvarchar":   `""`,
		"_commit_ts":   `"0001-01-01T00:00:00.000"`,
	}
	wantMax := map[string]string{
		"c_int":      `2147483647`,
		"c_dec38":    `99999999999999999999999999999999999999`,
		"c_dec38s38": `0.99999999999999999999999999999999999999`,
		"c_date":     `"9999-12-31"`,
		// 32 characters of the largest value, then U+007F: its 33rd character is ASCII.
		"c_nvarchar": mustJSON(t, string([]rune("\U0010FFFF\U0010FFFFzzzz long text, past the thirty-two character prefix")[:32])+"\u007f"),
	}
	for name, want := range wantMin {
		if got := string(stats.MinValues[name]); got != want {
			t.Errorf("minValues[%s] = %s, want %s", name, got, want)
		}
	}
	for name, want := range wantMax {
		if got := string(stats.MaxValues[name]); got != want {
			t.Errorf("maxValues[%s] = %s, want %s", name, got, want)
		}
	}
	// The largest datetime2 and datetimeoffset, 9999-12-31T23:59:59.999999, have no
	// millisecond ceiling with a four-digit year: no max rather than one below the data.
	for _, name := range []string{"c_datetime2", "c_dto"} {
		if got, ok := stats.MaxValues[name]; ok {
			t.Errorf("maxValues[%s] = %s, want none (no bound at or above 9999-12-31T23:59:59.999999)", name, got)
		}
	}
	for _, name := range []string{"c_bit", "c_binary", "c_rowversion", "c_image"} {
		if _, ok := stats.MinValues[name]; ok {
			t.Errorf("minValues has %s", name)
		}
		if _, ok := stats.MaxValues[name]; ok {
			t.Errorf("maxValues has %s", name)
		}
	}
}

func mustJSON(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStatsFirst32LeafColumns(t *testing.T) {
	s := mustSchema(t, allTypeColumns) // 6 + 31 + 3 = 40 columns
	fs := newFileStats(s, DefaultNumIndexedCols, DefaultStringPrefixLength)
	if len(fs.cols) != 32 || fs.cols[31].name != s.Field(31).Name {
		t.Errorf("indexed %d columns", len(fs.cols))
	}
	rec := bronzeRecord(memory.DefaultAllocator, s, 5, false)
	defer rec.Release()
	fs.add(rec, nil)
	out := fs.json()
	if strings.Contains(out, `"`+s.Field(32).Name+`"`) || !strings.Contains(out, `"`+s.Field(31).Name+`"`) {
		t.Errorf("stats %s", out)
	}
}

func TestStatsEmptyAndAllNull(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	fs := newFileStats(s, -1, 32)
	if got := fs.json(); got != `{"numRecords":0,"nullCount":{"a":0}}` {
		t.Errorf("empty: %s", got)
	}
	b := array.NewInt32Builder(memory.DefaultAllocator)
	b.AppendNulls(3)
	a := b.NewArray()
	rec := array.NewRecordBatch(s, []arrow.Array{a}, 3)
	fs.add(rec, nil)
	if got := fs.json(); got != `{"numRecords":3,"nullCount":{"a":3}}` {
		t.Errorf("all NULL: %s", got)
	}
}

func TestStatsFloatsWithoutNaN(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, {Name: "g", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	fb := array.NewFloat64Builder(memory.DefaultAllocator)
	fb.AppendValues([]float64{1.5, math.NaN(), -2}, nil)
	gb := array.NewFloat64Builder(memory.DefaultAllocator)
	gb.AppendValues([]float64{1.5, 0.25, -2}, nil)
	rec := array.NewRecordBatch(s, []arrow.Array{fb.NewArray(), gb.NewArray()}, 3)
	fs := newFileStats(s, -1, 32)
	fs.add(rec, nil)
	if got := fs.json(); got != `{"numRecords":3,"minValues":{"g":-2},"maxValues":{"g":1.5},"nullCount":{"f":0,"g":0}}` {
		t.Errorf("got %s", got)
	}
}

func TestStringMax(t *testing.T) {
	p := 4
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"abc", "abc", true},
		{"abcd", "abcd", true},
		{"abcde", "abcd\u007f", true},
		{"abcdé", "abcd\U0010FFFF", true},
		{"abcd\U0010FFFFa", "abcd\U0010FFFF\u007f", true},
		{"abcd\U0010FFFF\U0010FFFF\U0010FFFF\U0010FFFF\U0010FFFF", "", false},
	}
	for _, c := range cases {
		got, ok := stringMax(c.in, p)
		if got != c.want || ok != c.ok {
			t.Errorf("stringMax(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
		if ok && got < c.in && !strings.HasPrefix(c.in, got) {
			t.Errorf("stringMax(%q) = %q is not an upper bound", c.in, got)
		}
	}
	if got := cutRunes("ééééé", 3); got != "ééé" || !utf8.ValidString(got) {
		t.Errorf("cutRunes %q", got)
	}
}

// Timestamp statistics bound the data at millisecond precision: the min floored, the max
// ceiled (issue 12: a max truncated as Spark does sits up to 999 µs below the data, and a
// reader that does not add Spark's 1 ms skips files that hold matching rows).
func TestTimestampBoundsFloorMinCeilMax(t *testing.T) {
	for _, c := range []struct {
		micros   int64
		min, max string
	}{
		{0, "1970-01-01T00:00:00.000", "1970-01-01T00:00:00.000"},
		{1, "1970-01-01T00:00:00.000", "1970-01-01T00:00:00.001"},
		{1000, "1970-01-01T00:00:00.001", "1970-01-01T00:00:00.001"},
		{1999, "1970-01-01T00:00:00.001", "1970-01-01T00:00:00.002"},
		{-1, "1969-12-31T23:59:59.999", "1970-01-01T00:00:00.000"},
		{-1000, "1969-12-31T23:59:59.999", "1969-12-31T23:59:59.999"},
		{-1001, "1969-12-31T23:59:59.998", "1969-12-31T23:59:59.999"},
		{minTime.UnixMicro(), "0001-01-01T00:00:00.000", "0001-01-01T00:00:00.000"},
		{maxTime.UnixMicro() - 999, "9999-12-31T23:59:59.999", "9999-12-31T23:59:59.999"},
	} {
		lo, ok1 := boundMillis(c.micros, false)
		hi, ok2 := boundMillis(c.micros, true)
		if !ok1 || !ok2 || formatMillis(lo) != c.min || formatMillis(hi) != c.max {
			t.Errorf("%d µs: min %s (%v), max %s (%v); want %s, %s", c.micros, formatMillis(lo), ok1, formatMillis(hi), ok2, c.min, c.max)
		}
		if lo*1000 > c.micros || hi*1000 < c.micros {
			t.Errorf("%d µs: [%d, %d] ms does not bound it", c.micros, lo, hi)
		}
	}
	// 9999-12-31T23:59:59.999999 has no ceiling with a four-digit year: no max.
	if _, ok := boundMillis(maxTime.UnixMicro(), true); ok {
		t.Error("a max past 9999-12-31T23:59:59.999 was written")
	}
	if ms, ok := boundMillis(maxTime.UnixMicro(), false); !ok || formatMillis(ms) != "9999-12-31T23:59:59.999" {
		t.Errorf("min of the largest value: %s %v", formatMillis(ms), ok)
	}
}

func TestStatsDecimalsAreExactNumbers(t *testing.T) {
	typ := &arrow.Decimal128Type{Precision: 10, Scale: 2}
	s := arrow.NewSchema([]arrow.Field{{Name: "d", Type: typ, Nullable: true}}, nil)
	b := array.NewDecimal128Builder(memory.DefaultAllocator, typ)
	for _, v := range []string{"-5", "5", "1", "-12345", "0"} {
		b.Append(decimalOf(v))
	}
	rec := array.NewRecordBatch(s, []arrow.Array{b.NewArray()}, 5)
	fs := newFileStats(s, -1, 32)
	fs.add(rec, nil)
	if got := fs.json(); got != `{"numRecords":5,"minValues":{"d":-123.45},"maxValues":{"d":0.05},"nullCount":{"d":0}}` {
		t.Errorf("got %s", got)
	}
	fs = newFileStats(s, -1, 32)
	b.Append(decimalOf("-5"))
	b.Append(decimalOf("-1"))
	rec = array.NewRecordBatch(s, []arrow.Array{b.NewArray()}, 2)
	fs.add(rec, nil)
	if got := fs.json(); got != `{"numRecords":2,"minValues":{"d":-0.05},"maxValues":{"d":-0.01},"nullCount":{"d":0}}` {
		t.Errorf("got %s", got)
	}
}

// FuzzStringBounds: for any two valid strings lo <= hi, the min bound of lo is <= lo and
// the max bound of hi (when there is one) is >= hi, in byte order (Spark's UTF8String
// order).
func FuzzStringBounds(f *testing.F) {
	for _, s := range []string{"", "a", "abcdé", "\U0010FFFF\U0010FFFFx", strings.Repeat("z", 70), "ab\u007fc"} {
		f.Add(s, s+"\U0010FFFF", 4)
	}
	f.Fuzz(func(t *testing.T, a, b string, prefix int) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) || prefix < 1 || prefix > 40 {
			return
		}
		lo, hi := min(a, b), max(a, b)
		if cut := cutRunes(lo, prefix); cut > lo || !utf8.ValidString(cut) {
			t.Errorf("min bound %q of %q", cut, lo)
		}
		if bound, ok := stringMax(cutRunes(hi, 2*prefix+1), prefix); ok && bound < hi {
			t.Errorf("max bound %q below %q (prefix %d)", bound, hi, prefix)
		}
	})
}
