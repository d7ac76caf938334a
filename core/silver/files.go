package silver

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Tags silver puts on its add actions (docs/silver.md § Files): the hex encodings
// (docs/silver.md § Keys) of the first and last key of the file, which is sorted by key.
// Delta keeps add tags in commits and checkpoints; a file without them (written by another
// engine) is located by its statistics, or read whenever its key range is unknown.
const (
	TagKeyMin = "mssqlcdc.keyMin"
	TagKeyMax = "mssqlcdc.keyMax"
	// TagLayer is "delta" on the files of the delta layer (docs/silver.md § Deletion
	// vectors), absent on base files.
	TagLayer = "mssqlcdc.layer"
)

const layerDelta = "delta"

type jsonRaw = json.RawMessage

func rawInt(n int64) jsonRaw { return jsonRaw(strconv.FormatInt(n, 10)) }

// keyColumnsInfo are silver's key columns with their types.
type keyColumnsInfo struct {
	names []string
	types []arrow.DataType
}

// newKeyColumns checks the key columns against schema (silver's, or bronze's: the
// captured columns are the same) and returns them with the schema's names.
func newKeyColumns(schema *arrow.Schema, keys []string) (keyColumnsInfo, error) {
	if len(keys) == 0 {
		return keyColumnsInfo{}, &KeyError{Reason: "no key columns: set silver.keys in the table spec (the source table's primary key)"}
	}
	var kc keyColumnsInfo
	for _, k := range keys {
		i := fieldIndexFold(schema, k)
		if i < 0 {
			return keyColumnsInfo{}, &KeyError{Column: k, Reason: "not a captured column of bronze"}
		}
		f := schema.Field(i)
		if err := checkKeyType(f.Name, f.Type); err != nil {
			return keyColumnsInfo{}, err
		}
		if slices.Contains(kc.names, f.Name) {
			return keyColumnsInfo{}, &KeyError{Column: k, Reason: "named twice"}
		}
		kc.names = append(kc.names, f.Name)
		kc.types = append(kc.types, f.Type)
	}
	return kc, nil
}

// firstBounds are the leading key column's statistics bounds of a file, encoded; ok is
// false when the file has no usable statistics for it.
func (kc keyColumnsInfo) firstBounds(a *deltalog.Add) (lo, hi []byte, ok bool) {
	st, has, err := deltalog.ParseStats(a.Stats)
	if err != nil || !has {
		return nil, nil, false
	}
	name := kc.names[0]
	lookup := func(m map[string]jsonRaw) (jsonRaw, bool) {
		if v, ok := m[name]; ok {
			return v, true
		}
		for k, v := range m {
			if strings.EqualFold(k, name) {
				return v, true
			}
		}
		return nil, false
	}
	if nc, ok := lookup(st.NullCount); ok && string(nc) != "0" {
		// NULL keys sort first (0x00): the file may hold keys from the very bottom.
		if rawHi, ok := lookup(st.MaxValues); ok {
			if hi, ok := statBound(rawHi, kc.types[0]); ok {
				return []byte{0x00}, hi, true
			}
		}
		if string(nc) == string(rawInt(st.NumRecords)) {
			return []byte{0x00}, []byte{0x00}, true // only NULLs
		}
		return nil, nil, false
	}
	rawLo, ok1 := lookup(st.MinValues)
	rawHi, ok2 := lookup(st.MaxValues)
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	lo, ok1 = statBound(rawLo, kc.types[0])
	hi, ok2 = statBound(rawHi, kc.types[0])
	return lo, hi, ok1 && ok2
}

// fileMayHold reports whether the file may hold a key in [lo, hi) (nil bounds open),
// judged by its key tags, else its leading key column's statistics.
func (kc keyColumnsInfo) fileMayHold(a *deltalog.Add, lo, hi []byte) bool {
	if lo == nil && hi == nil {
		return true
	}
	r := kc.rangeOf(a)
	return r.overlaps(kc, lo, hi)
}

// keyRange is what is known of the keys a file holds.
type keyRange struct {
	// known is false when nothing is: the file may hold any key.
	known bool
	// exact: min and max are full keys (tags); otherwise they bound the leading column
	// (statistics) and compare with a key's first component.
	exact    bool
	min, max []byte
}

func (kc keyColumnsInfo) rangeOf(a *deltalog.Add) keyRange {
	if lo, hi, ok := tagRange(a); ok {
		return keyRange{known: true, exact: true, min: lo, max: hi}
	}
	if lo, hi, ok := kc.firstBounds(a); ok {
		return keyRange{known: true, min: lo, max: hi}
	}
	return keyRange{}
}

func tagRange(a *deltalog.Add) (lo, hi []byte, ok bool) {
	l, ok1 := a.Tags[TagKeyMin]
	h, ok2 := a.Tags[TagKeyMax]
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	lo, err1 := hex.DecodeString(l)
	hi, err2 := hex.DecodeString(h)
	return lo, hi, err1 == nil && err2 == nil
}

// cmpKey compares key k with bound b of the range: the whole key when exact, else k's
// first component.
func (r keyRange) cmpKey(kc keyColumnsInfo, k, b []byte) int {
	if !r.exact {
		k = firstComponent(k, kc.types[0])
	}
	return bytes.Compare(k, b)
}

// overlaps reports whether the file may hold a key in [lo, hi).
func (r keyRange) overlaps(kc keyColumnsInfo, lo, hi []byte) bool {
	if !r.known {
		return true
	}
	if lo != nil && r.cmpKey(kc, lo, r.max) > 0 {
		return false // every key of the file is below lo
	}
	if hi != nil {
		c := r.cmpKey(kc, hi, r.min)
		if c < 0 || (c == 0 && r.exact) {
			return false // every key of the file is at or above hi
		}
	}
	return true
}

// inside reports whether every key the file holds lies in [lo, hi): only an exact range
// can say so.
func (r keyRange) inside(lo, hi []byte) bool {
	return r.known && r.exact && (lo == nil || bytes.Compare(r.min, lo) >= 0) && (hi == nil || bytes.Compare(r.max, hi) < 0)
}
