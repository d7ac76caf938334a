package silver

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// A key is encoded as bytes whose bytewise order is the key order (docs/silver.md § Keys):
// each column in key order, NULL first (0x00), else 0x01 and the value:
//
//	integers, dates, timestamps  8 bytes big-endian, sign bit flipped (every width the same,
//	                             so a widened column keeps its encodings)
//	decimal128                   16 bytes big-endian, sign bit flipped (one scale per column)
//	float32/64                   IEEE bits, all flipped when negative, else the sign flipped
//	boolean                      one byte
//	string, binary               the bytes with 0x00 written 0x00 0xFF, ended by 0x00 0x01
//
// The string order is the bytes' (UTF-8) order, which is Delta's statistics order for
// strings; it is not SQL Server's collation order, and nothing here needs it to be: silver
// only needs one total order in which its files are clustered and pruned.

// checkKeyType refuses a key column whose type cannot be ordered here (nested types).
func checkKeyType(name string, t arrow.DataType) error {
	switch t.ID() {
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16,
		arrow.UINT32, arrow.DATE32, arrow.TIMESTAMP, arrow.DECIMAL128, arrow.FLOAT32, arrow.FLOAT64,
		arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return nil
	}
	return &KeyError{Column: name, Reason: "type " + t.String() + " cannot be a silver key"}
}

func putInt(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

func putBytes(dst []byte, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			dst = append(dst, b...)
			break
		}
		dst = append(dst, b[:i+1]...)
		dst = append(dst, 0xFF)
		b = b[i+1:]
	}
	return append(dst, 0x00, 0x01)
}

func putDecimal(dst []byte, v decimal128.Num) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.HighBits())^(1<<63))
	return binary.BigEndian.AppendUint64(dst, v.LowBits())
}

func putFloat(dst []byte, f float64) []byte {
	u := math.Float64bits(f)
	if u>>63 == 1 {
		u = ^u
	} else {
		u |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(dst, u)
}

// appendColumn appends the encoding of row i of a (one key column) to dst.
func appendColumn(dst []byte, a arrow.Array, i int) []byte {
	if a == nil || a.IsNull(i) {
		return append(dst, 0x00)
	}
	dst = append(dst, 0x01)
	switch a := a.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return append(dst, 1)
		}
		return append(dst, 0)
	case *array.Int8:
		return putInt(dst, int64(a.Value(i)))
	case *array.Int16:
		return putInt(dst, int64(a.Value(i)))
	case *array.Int32:
		return putInt(dst, int64(a.Value(i)))
	case *array.Int64:
		return putInt(dst, a.Value(i))
	case *array.Uint8:
		return putInt(dst, int64(a.Value(i)))
	case *array.Uint16:
		return putInt(dst, int64(a.Value(i)))
	case *array.Uint32:
		return putInt(dst, int64(a.Value(i)))
	case *array.Date32:
		return putInt(dst, int64(a.Value(i)))
	case *array.Timestamp:
		return putInt(dst, int64(a.Value(i)))
	case *array.Decimal128:
		return putDecimal(dst, a.Value(i))
	case *array.Float32:
		return putFloat(dst, float64(a.Value(i)))
	case *array.Float64:
		return putFloat(dst, a.Value(i))
	case *array.String:
		return putBytes(dst, []byte(a.Value(i)))
	case *array.LargeString:
		return putBytes(dst, []byte(a.Value(i)))
	case *array.Binary:
		return putBytes(dst, a.Value(i))
	case *array.LargeBinary:
		return putBytes(dst, a.Value(i))
	}
	panic(fmt.Sprintf("silver: key column type %s", a.DataType())) // refused by checkKeyType
}

// keyColumns finds the key columns of a record by name (exact, then ignoring case). A
// column the record lacks is nil (a NULL in every row).
func keyColumns(rec arrow.RecordBatch, keys []string) []arrow.Array {
	out := make([]arrow.Array, len(keys))
	for i, k := range keys {
		if j := fieldIndexFold(rec.Schema(), k); j >= 0 {
			out[i] = rec.Column(j)
		}
	}
	return out
}

// encodeKey appends the key of row i to dst.
func encodeKey(dst []byte, cols []arrow.Array, i int) []byte {
	for _, c := range cols {
		dst = appendColumn(dst, c, i)
	}
	return dst
}

// firstComponent returns the encoding of the key's first column: the prefix of enc that
// encodes it (what statistics of the leading key column bound).
func firstComponent(enc []byte, t arrow.DataType) []byte {
	if len(enc) == 0 || enc[0] == 0x00 {
		return enc[:min(1, len(enc))]
	}
	switch t.ID() {
	case arrow.BOOL:
		return enc[:min(2, len(enc))]
	case arrow.DECIMAL128:
		return enc[:min(17, len(enc))]
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		for i := 1; i+1 < len(enc); i++ {
			if enc[i] == 0x00 {
				if enc[i+1] == 0x01 {
					return enc[:i+2]
				}
				i++ // 0x00 0xFF: an escaped zero byte
			}
		}
		return enc
	}
	return enc[:min(9, len(enc))]
}

// statBound encodes a statistics bound (minValues/maxValues of the leading key column,
// docs/reference/delta-protocol.md §4.2) as a first-column encoding; ok is false for a
// type or value it cannot read (the file is then treated as holding any key).
func statBound(raw json.RawMessage, t arrow.DataType) ([]byte, bool) {
	dst := []byte{0x01}
	switch t := t.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type:
		var v int64
		if json.Unmarshal(raw, &v) != nil {
			return nil, false
		}
		return putInt(dst, v), true
	case *arrow.Date32Type:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return nil, false
		}
		return putInt(dst, int64(arrow.Date32FromTime(d))), true
	case *arrow.TimestampType:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		ts, ok := parseStatTime(s, t.TimeZone != "")
		if !ok {
			return nil, false
		}
		v, err := arrow.TimestampFromTime(ts, t.Unit)
		if err != nil {
			return nil, false
		}
		return putInt(dst, int64(v)), true
	case *arrow.Decimal128Type:
		r, ok := new(big.Rat).SetString(strings.TrimSpace(string(raw)))
		if !ok {
			return nil, false
		}
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)))
		if !r.IsInt() {
			return nil, false
		}
		if r.Num().BitLen() > 127 {
			return nil, false
		}
		return putDecimal(dst, decimal128.FromBigInt(r.Num())), true
	case *arrow.StringType, *arrow.LargeStringType:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		return putBytes(dst, []byte(s)), true
	}
	return nil, false
}

// parseStatTime reads a timestamp bound: "2024-05-01T12:00:00.123Z" (timestamp, any
// offset) or "2024-05-01T12:00:00.123" (timestamp_ntz; a space separator too).
func parseStatTime(s string, zoned bool) (time.Time, bool) {
	s = strings.Replace(s, " ", "T", 1)
	if zoned {
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil
	}
	t, err := time.Parse("2006-01-02T15:04:05.999999999", s)
	return t, err == nil
}

func fieldIndexFold(s *arrow.Schema, name string) int {
	for i, f := range s.Fields() {
		if f.Name == name {
			return i
		}
	}
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}
