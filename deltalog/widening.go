package deltalog

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Type widening (docs/reference/delta-protocol.md §6.6, the typeWidening table feature,
// reader and writer, at reader 3 / writer 7): a column's type may change to a wider one
// when the table property delta.enableTypeWidening is "true". Each change is recorded in
// the column's metadata, key delta.typeChanges, a JSON list of {"fromType", "toType"}
// kept by every later schema change; files written before read their old, narrower type,
// which readers convert to the table's.

// PropEnableTypeWidening is the table property that lets writers widen a column's type.
const PropEnableTypeWidening = "delta.enableTypeWidening"

// typeChangesKey is the field metadata key holding a column's type changes.
const typeChangesKey = "delta.typeChanges"

// TypeChange is one entry of a column's delta.typeChanges: types in their JSON form
// ("integer", "decimal(10,2)"). FieldPath is set only for a map key/value or array
// element changed inside the column.
type TypeChange struct {
	FromType  string `json:"fromType"`
	ToType    string `json:"toType"`
	FieldPath string `json:"fieldPath,omitempty"`
}

// Widens reports whether the typeWidening feature allows changing a column of type from to
// type to (docs/reference/delta-protocol.md §6.6): byte → short → int → long; float →
// double; byte, short or int → double; date → timestamp_ntz; decimal(p,s) →
// decimal(p+k1,s+k2) with k1 >= k2 >= 0; byte, short or int → decimal(10+k1,k2) and long →
// decimal(20+k1,k2) with k1 >= k2 >= 0. Equal types are no change (false).
func Widens(from, to DataType) bool {
	rank := map[PrimitiveType]int{TypeByte: 1, TypeShort: 2, TypeInteger: 3, TypeLong: 4}
	switch t := to.(type) {
	case PrimitiveType:
		f, ok := from.(PrimitiveType)
		if !ok || f == t {
			return false
		}
		switch t {
		case TypeShort, TypeInteger, TypeLong:
			return rank[f] > 0 && rank[f] < rank[t]
		case TypeDouble:
			return f == TypeFloat || (rank[f] > 0 && rank[f] < rank[TypeLong])
		case TypeTimestampNTZ:
			return f == TypeDate
		}
	case *DecimalType:
		switch f := from.(type) {
		case *DecimalType:
			k1, k2 := t.Precision-f.Precision, t.Scale-f.Scale
			return k1 >= k2 && k2 >= 0 && (k1 > 0 || k2 > 0)
		case PrimitiveType:
			digits := map[PrimitiveType]int{TypeByte: 10, TypeShort: 10, TypeInteger: 10, TypeLong: 20}[f]
			// decimal(d+k1, k2) with k1 >= k2 >= 0: at least d integer digits.
			return digits > 0 && t.Precision-t.Scale >= digits
		}
	}
	return false
}

// TypeChanges is field f's delta.typeChanges (nil when it has none).
func (f StructField) TypeChanges() ([]TypeChange, error) {
	raw, ok := f.Metadata[typeChangesKey]
	if !ok {
		return nil, nil
	}
	var out []TypeChange
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, &SchemaError{Path: f.Name, Reason: fmt.Sprintf("%s: %v", typeChangesKey, err)}
	}
	return out, nil
}

// widenField is old retyped to to, its metadata (kept, as the protocol requires) with the
// change appended to delta.typeChanges.
func widenField(old StructField, to DataType) (StructField, error) {
	changes, err := old.TypeChanges()
	if err != nil {
		return old, err
	}
	changes = append(changes, TypeChange{FromType: typeName(old.Type), ToType: typeName(to)})
	raw, err := json.Marshal(changes)
	if err != nil {
		return old, err
	}
	md := make(map[string]json.RawMessage, len(old.Metadata)+1)
	for k, v := range old.Metadata {
		md[k] = v
	}
	md[typeChangesKey] = raw
	old.Type, old.Metadata = to, md
	return old, nil
}

// typeName is a primitive or decimal type's JSON name ("integer", "decimal(10,2)").
func typeName(t DataType) string { return strings.Trim(typeString(t), `"`) }

// checkTypeChanges validates every column's delta.typeChanges (reader requirement of
// typeWidening: fail on a change not supported): each a widening Widens allows, on the
// column itself (no fieldPath: this package widens no nested field).
func checkTypeChanges(s *StructType) error {
	for _, f := range s.Fields {
		changes, err := f.TypeChanges()
		if err != nil {
			return err
		}
		for _, c := range changes {
			from, ferr := parsePrimitive(c.FromType, f.Name)
			to, terr := parsePrimitive(c.ToType, f.Name)
			if c.FieldPath != "" || ferr != nil || terr != nil || !Widens(from, to) {
				return &SchemaError{Path: f.Name, Reason: fmt.Sprintf("%s records a change from %s to %s%s, not a type widening this reader supports",
					typeChangesKey, c.FromType, c.ToType, pathNote(c.FieldPath))}
			}
		}
	}
	return nil
}

func pathNote(p string) string {
	if p == "" {
		return ""
	}
	return " at " + p
}
