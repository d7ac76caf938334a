package snapshot

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// integerTypes are the SQL Server integer types: uniform ranges are cut on them (bit is not
// one, docs/reference/original-library.md §9.2).
var integerTypes = map[string]bool{"tinyint": true, "smallint": true, "int": true, "bigint": true}

// timeLayout writes date and datetime key values: UTC, fraction as needed.
const timeLayout = "2006-01-02T15:04:05.999999999Z07:00"

// encodeKey turns a source.Key into JSON-able values: int64 and float64 as numbers, bool,
// strings as is, time.Time as RFC 3339 text, []byte as 0x hex, nil as null.
func encodeKey(k source.Key) ([]any, error) {
	if k == nil {
		return nil, nil
	}
	out := make([]any, len(k))
	for i, v := range k {
		switch x := v.(type) {
		case nil, int64, bool, string:
			out[i] = x
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("key value %v: not a JSON number", x)
			}
			out[i] = x
		case time.Time:
			out[i] = x.UTC().Format(timeLayout)
		case []byte:
			out[i] = "0x" + strings.ToUpper(hex.EncodeToString(x))
		default:
			return nil, fmt.Errorf("key value of type %T: not a key type", v)
		}
	}
	return out, nil
}

// decodeKey turns JSON values back into a source.Key for the key columns cols. Numbers
// may arrive as float64 (encoding/json) or json.Number.
func decodeKey(vals []any, cols []source.Column) (source.Key, error) {
	if vals == nil {
		return nil, nil
	}
	if len(vals) != len(cols) {
		return nil, &KeyError{Column: joinNames(cols), Reason: fmt.Sprintf("bound has %d values for %d key columns", len(vals), len(cols))}
	}
	k := make(source.Key, len(vals))
	for i, v := range vals {
		kv, err := decodeValue(v, cols[i])
		if err != nil {
			return nil, &KeyError{Column: cols[i].Name, Reason: err.Error()}
		}
		k[i] = kv
	}
	return k, nil
}

func decodeValue(v any, c source.Column) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.DataType {
	case "tinyint", "smallint", "int", "bigint":
		switch x := v.(type) {
		case float64:
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return nil, fmt.Errorf("%v is not an exact integer", x)
			}
			return int64(x), nil
		case json.Number:
			return x.Int64()
		case int64:
			return x, nil
		}
	case "bit":
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case "real", "float":
		switch x := v.(type) {
		case float64:
			return x, nil
		case json.Number:
			return x.Float64()
		}
	case "date", "datetime", "datetime2", "smalldatetime", "datetimeoffset":
		if s, ok := v.(string); ok {
			t, err := time.Parse(timeLayout, s)
			if err != nil {
				return nil, err
			}
			return t.UTC(), nil
		}
	case "binary", "varbinary", "image", "timestamp", "rowversion":
		if s, ok := v.(string); ok && strings.HasPrefix(s, "0x") {
			return hex.DecodeString(s[2:])
		}
	default:
		if s, ok := v.(string); ok {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%v (%T) does not fit type %s", v, v, c.DataType)
}

func joinNames(cols []source.Column) string { return strings.Join(keyNames(cols), ",") }

// keyNames are the columns' names, in order.
func keyNames(cols []source.Column) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return names
}
