package parquetio

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Delta per-file statistics (docs/reference/delta-protocol.md §4), computed from the values
// written, as Spark's StatisticsCollection does:
//   - numRecords always;
//   - nullCount for each of the first NumIndexedCols leaf columns;
//   - minValues/maxValues for numeric, decimal, date, timestamp, timestamp_ntz and string
//     columns among them (not boolean, not binary);
//   - strings cut to StringPrefixLength characters; the max then gets a tie-breaker so it
//     stays an upper bound (U+007F when the next character sorts below it, else
//     U+10FFFF), and is left out when no bound fits in twice the prefix;
//   - timestamps at millisecond precision, the min floored and the max ceiled (boundMillis:
//     the stats bound the data for readers that do not add Spark's 1 ms to a max), written
//     "yyyy-MM-ddTHH:mm:ss.SSSZ" (timestamp, UTC) or without the Z (timestamp_ntz);
//   - dates "yyyy-MM-dd"; decimals as exact JSON numbers;
//   - float min/max left out when a value is NaN or infinite (not a JSON number).
//
// Nested columns get no statistics (bronze has none) but count their leaves.

type statKind int

const (
	kindNullOnly statKind = iota
	kindInt
	kindFloat
	kindDecimal
	kindDate
	kindTimestamp
	kindTimestampNTZ
	kindString
)

// colStats accumulates one column's statistics.
type colStats struct {
	name  string
	kind  statKind
	index int // column index in the record
	scale int32

	nulls int64
	seen  bool // a non-null value was seen
	bad   bool // min/max cannot be written (NaN, Inf, invalid UTF-8)

	minI, maxI int64
	minF, maxF float64
	minD, maxD decimal128.Num
	// minS is the smallest value cut to the prefix; maxS the largest cut to keepRunes.
	minS, maxS string
}

// fileStats accumulates the statistics of one file.
type fileStats struct {
	rows      int64
	cols      []*colStats
	prefix    int
	keepRunes int
}

func newFileStats(schema *arrow.Schema, numIndexed, prefix int) *fileStats {
	fs := &fileStats{prefix: prefix, keepRunes: 2*prefix + 1}
	leaves := 0
	for i := range schema.NumFields() {
		f := schema.Field(i) // not Fields(), which copies them all
		if numIndexed >= 0 && leaves >= numIndexed {
			break
		}
		n := leafCount(f.Type)
		leaves += n
		if n != 1 || isNested(f.Type) {
			continue
		}
		cs := &colStats{name: f.Name, index: i, kind: kindOf(f.Type)}
		if d, ok := f.Type.(*arrow.Decimal128Type); ok {
			cs.scale = d.Scale
		}
		fs.cols = append(fs.cols, cs)
	}
	return fs
}

func isNested(t arrow.DataType) bool {
	_, ok := t.(arrow.NestedType)
	return ok
}

// leafCount is the number of Parquet leaf columns of an Arrow type.
func leafCount(t arrow.DataType) int {
	switch t := t.(type) {
	case *arrow.StructType:
		n := 0
		for _, f := range t.Fields() {
			n += leafCount(f.Type)
		}
		return n
	case *arrow.MapType:
		return leafCount(t.KeyType()) + leafCount(t.ItemType())
	case arrow.ListLikeType:
		return leafCount(t.Elem())
	}
	return 1
}

func kindOf(t arrow.DataType) statKind {
	switch t := t.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		return kindInt
	case *arrow.Float32Type, *arrow.Float64Type:
		return kindFloat
	case *arrow.Decimal128Type:
		return kindDecimal
	case *arrow.Date32Type:
		return kindDate
	case *arrow.TimestampType:
		if t.Unit != arrow.Microsecond {
			return kindNullOnly
		}
		if t.TimeZone == "" {
			return kindTimestampNTZ
		}
		return kindTimestamp
	case *arrow.StringType:
		return kindString
	}
	return kindNullOnly
}

// add folds a record's values into the statistics, except the columns deferred says
// (nil: none), which the caller folds in later with addDictionary or addColumn.
func (fs *fileStats) add(rec arrow.RecordBatch, deferred func(col int) bool) {
	fs.rows += rec.NumRows()
	for _, cs := range fs.cols {
		if deferred != nil && deferred(cs.index) {
			continue
		}
		fs.addColumn(cs, rec.Column(cs.index))
	}
}

// column is the statistics of record column col, or nil when it has none.
func (fs *fileStats) column(col int) *colStats {
	for _, cs := range fs.cols {
		if cs.index == col {
			return cs
		}
	}
	return nil
}

// addDictionary folds in column col's rows of a row group, given as their distinct values
// (dict, no NULLs) and their NULL count: min and max are those of the distinct values, so
// a dictionary the writer built spares a pass over every row.
func (fs *fileStats) addDictionary(col int, dict arrow.Array, nulls int64) {
	if cs := fs.column(col); cs != nil {
		fs.addColumn(cs, dict)
		cs.nulls += nulls
	}
}

func (fs *fileStats) addColumn(cs *colStats, col arrow.Array) {
	cs.nulls += int64(col.NullN())
	if col.NullN() == col.Len() {
		return
	}
	switch a := col.(type) {
	case *array.Int8:
		addInts(cs, a, a.Int8Values())
	case *array.Int16:
		addInts(cs, a, a.Int16Values())
	case *array.Int32:
		addInts(cs, a, a.Int32Values())
	case *array.Int64:
		addInts(cs, a, a.Int64Values())
	case *array.Date32:
		addInts(cs, a, a.Date32Values())
	case *array.Timestamp:
		addInts(cs, a, a.TimestampValues())
	case *array.Float32:
		addFloats(cs, a, a.Float32Values())
	case *array.Float64:
		addFloats(cs, a, a.Float64Values())
	case *array.Decimal128:
		for i := range a.Len() {
			if a.IsNull(i) {
				continue
			}
			v := a.Value(i)
			if !cs.seen {
				cs.minD, cs.maxD, cs.seen = v, v, true
				continue
			}
			if v.Less(cs.minD) {
				cs.minD = v
			}
			if v.Greater(cs.maxD) {
				cs.maxD = v
			}
		}
	case *array.String:
		fs.addStrings(cs, a)
	}
}

// integer is the Go types of the integer-valued Arrow columns (ints, date32, timestamp).
type integer interface {
	~int8 | ~int16 | ~int32 | ~int64
}

// addInts folds the non-null values of a (vals is its values window) into the min/max.
func addInts[T integer](cs *colStats, a arrow.Array, vals []T) {
	var lo, hi T
	first := true
	for i, v := range vals {
		if a.NullN() != 0 && a.IsNull(i) {
			continue
		}
		if first {
			lo, hi, first = v, v, false
			continue
		}
		lo = min(lo, v)
		hi = max(hi, v)
	}
	if first {
		return
	}
	if !cs.seen {
		cs.minI, cs.maxI, cs.seen = int64(lo), int64(hi), true
		return
	}
	cs.minI = min(cs.minI, int64(lo))
	cs.maxI = max(cs.maxI, int64(hi))
}

func addFloats[T float32 | float64](cs *colStats, a arrow.Array, vals []T) {
	for i, x := range vals {
		if a.NullN() != 0 && a.IsNull(i) {
			continue
		}
		v := float64(x)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			cs.bad = true
			continue
		}
		if !cs.seen {
			cs.minF, cs.maxF, cs.seen = v, v, true
			continue
		}
		cs.minF = min(cs.minF, v)
		cs.maxF = max(cs.maxF, v)
	}
}

// addStrings folds a string column into the min/max. The smallest and largest values are
// found by comparing the values in place (no copy per row); only they are cut (cutting is
// monotone, so the cut of the smallest value is the smallest cut value) and copied, once
// per call. Any non-null value that is not UTF-8 makes the bounds unwritable.
func (fs *fileStats) addStrings(cs *colStats, a *array.String) {
	if !validUTF8Values(a) {
		cs.bad = true
		return
	}
	var lo, hi string
	first := true
	for i := range a.Len() {
		if a.NullN() != 0 && a.IsNull(i) {
			continue
		}
		v := a.Value(i) // aliases the Arrow buffer: not kept past this call
		if first {
			lo, hi, first = v, v, false
			continue
		}
		if v > hi { // lo <= hi: a new largest value is not the smallest
			hi = v
		} else if v < lo {
			lo = v
		}
	}
	if first {
		return
	}
	lo, hi = cutRunes(lo, fs.prefix), cutRunes(hi, fs.keepRunes)
	if !cs.seen {
		cs.minS, cs.maxS, cs.seen = strings.Clone(lo), strings.Clone(hi), true
		return
	}
	if lo < cs.minS {
		cs.minS = strings.Clone(lo)
	}
	if hi > cs.maxS {
		cs.maxS = strings.Clone(hi)
	}
}

// validUTF8Values reports whether every non-null value of a is UTF-8. Fast path: the
// values' bytes are UTF-8 as a whole and every value starts and ends on a character
// boundary (a byte that is not a continuation byte 10xxxxxx); then each value is whole
// characters. Otherwise each non-null value is checked on its own (a null slot may hold
// any bytes).
func validUTF8Values(a *array.String) bool {
	data, offs := a.ValueBytes(), a.ValueOffsets()
	if len(offs) > 0 && utf8.Valid(data) {
		base := offs[0]
		ok := true
		for _, o := range offs[:len(offs)-1] {
			if p := o - base; int(p) < len(data) && data[p]&0xC0 == 0x80 {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	for i := range a.Len() {
		if a.IsValid(i) && !utf8.ValidString(a.Value(i)) {
			return false
		}
	}
	return true
}

// cutRunes is the prefix of s of at most n characters (code points). Cutting is monotone
// in byte order, so the smallest cut value is the cut of the smallest value.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// stringMax is an upper bound of every string whose largest value begins with max
// (cut to 2*prefix+1 characters): max itself when it has at most prefix characters;
// else a cut of it with a tie-breaker appended, as Spark's StatisticsCollection does.
// ok is false when no bound fits in 2*prefix characters.
func stringMax(max string, prefix int) (string, bool) {
	if utf8.RuneCountInString(max) <= prefix {
		return max, true
	}
	runes := []rune(max)
	for cut := prefix; cut < len(runes) && cut < 2*prefix; cut++ {
		next := runes[cut]
		switch {
		case next < 0x7f:
			return string(runes[:cut]) + "\u007f", true
		case next < utf8.MaxRune:
			return string(runes[:cut]) + string(utf8.MaxRune), true
		}
		// next is U+10FFFF itself: no character sorts above it; keep it and try one
		// character further.
	}
	return "", false
}

// json renders the statistics as Delta's stats JSON string.
func (fs *fileStats) json() string {
	var b bytes.Buffer
	b.WriteString(`{"numRecords":`)
	b.WriteString(strconv.FormatInt(fs.rows, 10))
	writeObj := func(key string, value func(cs *colStats) (string, bool)) {
		first := true
		for _, cs := range fs.cols {
			v, ok := value(cs)
			if !ok {
				continue
			}
			if first {
				b.WriteString(`,"` + key + `":{`)
				first = false
			} else {
				b.WriteByte(',')
			}
			writeJSONString(&b, cs.name)
			b.WriteByte(':')
			b.WriteString(v)
		}
		if !first {
			b.WriteByte('}')
		}
	}
	writeObj("minValues", func(cs *colStats) (string, bool) { return fs.bound(cs, false) })
	writeObj("maxValues", func(cs *colStats) (string, bool) { return fs.bound(cs, true) })
	writeObj("nullCount", func(cs *colStats) (string, bool) { return strconv.FormatInt(cs.nulls, 10), true })
	b.WriteByte('}')
	return b.String()
}

// bound is the JSON value of a column's min (or max).
func (fs *fileStats) bound(cs *colStats, isMax bool) (string, bool) {
	if !cs.seen || cs.bad {
		return "", false
	}
	pickI := cs.minI
	if isMax {
		pickI = cs.maxI
	}
	switch cs.kind {
	case kindInt:
		return strconv.FormatInt(pickI, 10), true
	case kindFloat:
		v := cs.minF
		if isMax {
			v = cs.maxF
		}
		return strconv.FormatFloat(v, 'g', -1, 64), true
	case kindDecimal:
		v := cs.minD
		if isMax {
			v = cs.maxD
		}
		return v.ToString(cs.scale), true
	case kindDate:
		return `"` + time.Unix(pickI*86400, 0).UTC().Format(time.DateOnly) + `"`, true
	case kindTimestamp, kindTimestampNTZ:
		ms, ok := boundMillis(pickI, isMax)
		if !ok {
			return "", false
		}
		zone := ""
		if cs.kind == kindTimestamp {
			zone = "Z"
		}
		return `"` + formatMillis(ms) + zone + `"`, true
	case kindString:
		s := cs.minS
		if isMax {
			var ok bool
			if s, ok = stringMax(cs.maxS, fs.prefix); !ok {
				return "", false
			}
		}
		var b bytes.Buffer
		writeJSONString(&b, s)
		return b.String(), true
	}
	return "", false
}

// maxStatMillis is 9999-12-31T23:59:59.999, the largest timestamp statistic with a
// four-digit year.
var maxStatMillis = time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC).UnixMilli()

// boundMillis is a timestamp statistic in milliseconds since the epoch: a min floored, a
// max ceiled, so the pair bounds every value in the file for any reader. Statistics have
// millisecond precision; Spark truncates both and adds 1 ms to a max when it reads one,
// but readers that take the max as written (delta-kernel-rs before 2026, Trino, Iceberg
// readers through UniForm) would skip a file whose largest value lies in the max's last
// millisecond. A max that would need a fifth year digit (past 9999-12-31T23:59:59.999) is
// left out (false): no written bound holds it.
func boundMillis(micros int64, isMax bool) (int64, bool) {
	ms := micros / 1000
	rem := micros % 1000
	switch {
	case rem < 0:
		ms-- // floor toward negative infinity
		if isMax {
			ms++
		}
	case rem > 0 && isMax:
		ms++
	}
	return ms, ms <= maxStatMillis
}

// formatMillis renders milliseconds since the epoch as yyyy-MM-ddTHH:mm:ss.SSS.
func formatMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000")
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}
