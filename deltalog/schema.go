package deltalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// DataType is a Delta data type (docs/reference/delta-protocol.md §5.1): a
// PrimitiveType, *DecimalType, *StructType, *ArrayType or *MapType.
type DataType interface {
	deltaType()
}

// PrimitiveType is a primitive type by its JSON name: "string", "long", "integer",
// "short", "byte", "float", "double", "boolean", "binary", "date", "timestamp",
// "timestamp_ntz", "void" (decimals are *DecimalType).
type PrimitiveType string

// The primitive types this package maps to Arrow.
const (
	TypeString       PrimitiveType = "string"
	TypeLong         PrimitiveType = "long"
	TypeInteger      PrimitiveType = "integer"
	TypeShort        PrimitiveType = "short"
	TypeByte         PrimitiveType = "byte"
	TypeFloat        PrimitiveType = "float"
	TypeDouble       PrimitiveType = "double"
	TypeBoolean      PrimitiveType = "boolean"
	TypeBinary       PrimitiveType = "binary"
	TypeDate         PrimitiveType = "date"
	TypeTimestamp    PrimitiveType = "timestamp"
	TypeTimestampNTZ PrimitiveType = "timestamp_ntz"
	TypeVoid         PrimitiveType = "void"
)

// DecimalType is decimal(Precision,Scale), precision 1..38.
type DecimalType struct {
	Precision, Scale int
}

// StructType is a struct: the table schema is one.
type StructType struct {
	Fields []StructField
}

// StructField is one field of a struct. Metadata holds the column metadata as raw JSON
// values (delta.columnMapping.*, delta.invariants, comments, ...); unknown keys are kept.
type StructField struct {
	Name     string
	Type     DataType
	Nullable bool
	Metadata map[string]json.RawMessage
}

// ArrayType is an array of ElementType.
type ArrayType struct {
	ElementType  DataType
	ContainsNull bool
}

// MapType is a map from KeyType to ValueType.
type MapType struct {
	KeyType           DataType
	ValueType         DataType
	ValueContainsNull bool
}

func (PrimitiveType) deltaType() {}
func (*DecimalType) deltaType()  {}
func (*StructType) deltaType()   {}
func (*ArrayType) deltaType()    {}
func (*MapType) deltaType()      {}

var decimalRE = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$`)

// ParseSchema parses a schemaString. Errors are *SchemaError.
func ParseSchema(s string) (*StructType, error) {
	t, err := parseType([]byte(s), "")
	if err != nil {
		return nil, err
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, &SchemaError{Reason: "top-level type is not a struct"}
	}
	return st, nil
}

func parseType(data []byte, path string) (DataType, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var name string
		if err := json.Unmarshal(data, &name); err != nil {
			return nil, &SchemaError{Path: path, Reason: err.Error()}
		}
		return parsePrimitive(name, path)
	}
	var obj struct {
		Type              string            `json:"type"`
		Fields            []json.RawMessage `json:"fields"`
		ElementType       json.RawMessage   `json:"elementType"`
		ContainsNull      bool              `json:"containsNull"`
		KeyType           json.RawMessage   `json:"keyType"`
		ValueType         json.RawMessage   `json:"valueType"`
		ValueContainsNull bool              `json:"valueContainsNull"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, &SchemaError{Path: path, Reason: err.Error()}
	}
	switch obj.Type {
	case "struct":
		st := &StructType{Fields: make([]StructField, 0, len(obj.Fields))}
		for _, raw := range obj.Fields {
			var f struct {
				Name     string                     `json:"name"`
				Type     json.RawMessage            `json:"type"`
				Nullable bool                       `json:"nullable"`
				Metadata map[string]json.RawMessage `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &f); err != nil {
				return nil, &SchemaError{Path: path, Reason: err.Error()}
			}
			fp := joinPath(path, f.Name)
			ft, err := parseType(f.Type, fp)
			if err != nil {
				return nil, err
			}
			st.Fields = append(st.Fields, StructField{Name: f.Name, Type: ft, Nullable: f.Nullable, Metadata: f.Metadata})
		}
		return st, nil
	case "array":
		et, err := parseType(obj.ElementType, path+"[]")
		if err != nil {
			return nil, err
		}
		return &ArrayType{ElementType: et, ContainsNull: obj.ContainsNull}, nil
	case "map":
		kt, err := parseType(obj.KeyType, path+".key")
		if err != nil {
			return nil, err
		}
		vt, err := parseType(obj.ValueType, path+".value")
		if err != nil {
			return nil, err
		}
		return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: obj.ValueContainsNull}, nil
	}
	return nil, &SchemaError{Path: path, Reason: fmt.Sprintf("unknown type %q", obj.Type)}
}

func parsePrimitive(name, path string) (DataType, error) {
	switch p := PrimitiveType(name); p {
	case TypeString, TypeLong, TypeInteger, TypeShort, TypeByte, TypeFloat, TypeDouble,
		TypeBoolean, TypeBinary, TypeDate, TypeTimestamp, TypeTimestampNTZ, TypeVoid:
		return p, nil
	}
	if name == "decimal" { // Spark's shorthand for decimal(10,0)
		return &DecimalType{Precision: 10, Scale: 0}, nil
	}
	if m := decimalRE.FindStringSubmatch(name); m != nil {
		p, _ := strconv.Atoi(m[1])
		s, _ := strconv.Atoi(m[2])
		if p < 1 || p > 38 || s > p {
			return nil, &SchemaError{Path: path, Reason: fmt.Sprintf("invalid %s", name)}
		}
		return &DecimalType{Precision: p, Scale: s}, nil
	}
	return nil, &SchemaError{Path: path, Reason: fmt.Sprintf("unsupported type %q", name)}
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// String returns the schema as schemaString JSON.
func (s *StructType) String() string {
	b, _ := s.MarshalJSON() // marshalling our own types cannot fail
	return string(b)
}

// MarshalJSON writes Delta's JSON schema form; field metadata is always present ({} when
// empty), as Spark and Kernel write it.
func (s *StructType) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	writeType(&buf, s)
	return buf.Bytes(), nil
}

func writeType(buf *bytes.Buffer, t DataType) {
	switch t := t.(type) {
	case PrimitiveType:
		writeString(buf, string(t))
	case *DecimalType:
		fmt.Fprintf(buf, `"decimal(%d,%d)"`, t.Precision, t.Scale)
	case *StructType:
		buf.WriteString(`{"type":"struct","fields":[`)
		for i, f := range t.Fields {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(`{"name":`)
			writeString(buf, f.Name)
			buf.WriteString(`,"type":`)
			writeType(buf, f.Type)
			fmt.Fprintf(buf, `,"nullable":%t,"metadata":`, f.Nullable)
			if len(f.Metadata) == 0 {
				buf.WriteString("{}")
			} else {
				b, _ := json.Marshal(f.Metadata) // sorted keys, raw values
				buf.Write(b)
			}
			buf.WriteByte('}')
		}
		buf.WriteString("]}")
	case *ArrayType:
		buf.WriteString(`{"type":"array","elementType":`)
		writeType(buf, t.ElementType)
		fmt.Fprintf(buf, `,"containsNull":%t}`, t.ContainsNull)
	case *MapType:
		buf.WriteString(`{"type":"map","keyType":`)
		writeType(buf, t.KeyType)
		buf.WriteString(`,"valueType":`)
		writeType(buf, t.ValueType)
		fmt.Fprintf(buf, `,"valueContainsNull":%t}`, t.ValueContainsNull)
	}
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	buf.Write(b)
}

// FieldNames are the top-level field names in order.
func (s *StructType) FieldNames() []string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return names
}

// Field returns the top-level field with this name, compared ignoring case as Delta
// requires (docs/reference/delta-protocol.md §5.1).
func (s *StructType) Field(name string) (StructField, bool) {
	for _, f := range s.Fields {
		if strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return StructField{}, false
}

// UsesType reports whether the schema has a field of primitive type p at any depth.
func (s *StructType) UsesType(p PrimitiveType) bool { return usesType(s, p) }

func usesType(t DataType, p PrimitiveType) bool {
	switch t := t.(type) {
	case PrimitiveType:
		return t == p
	case *StructType:
		for _, f := range t.Fields {
			if usesType(f.Type, p) {
				return true
			}
		}
	case *ArrayType:
		return usesType(t.ElementType, p)
	case *MapType:
		return usesType(t.KeyType, p) || usesType(t.ValueType, p)
	}
	return false
}

// Arrow timestamp types for Delta's timestamp (UTC-adjusted) and timestamp_ntz.
var (
	ArrowTimestamp    = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	ArrowTimestampNTZ = &arrow.TimestampType{Unit: arrow.Microsecond}
)

// ToArrow maps a Delta schema to Arrow: string→utf8, long/integer/short/byte→int64/32/16/8,
// float/double→float32/64, boolean, binary, date→date32, timestamp→timestamp[us, UTC],
// timestamp_ntz→timestamp[us], decimal(p,s)→decimal128(p,s), void→null, struct, array→list,
// map→map. Field metadata becomes Arrow metadata: each value's JSON text, except that
// JSON strings are unquoted. Errors are *SchemaError.
func ToArrow(s *StructType) (*arrow.Schema, error) {
	fields, err := arrowFields(s, "")
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

func arrowFields(s *StructType, path string) ([]arrow.Field, error) {
	out := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		fp := joinPath(path, f.Name)
		t, err := arrowType(f.Type, fp)
		if err != nil {
			return nil, err
		}
		out[i] = arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable, Metadata: arrowMetadata(f.Metadata)}
	}
	return out, nil
}

func arrowType(t DataType, path string) (arrow.DataType, error) {
	switch t := t.(type) {
	case PrimitiveType:
		switch t {
		case TypeString:
			return arrow.BinaryTypes.String, nil
		case TypeLong:
			return arrow.PrimitiveTypes.Int64, nil
		case TypeInteger:
			return arrow.PrimitiveTypes.Int32, nil
		case TypeShort:
			return arrow.PrimitiveTypes.Int16, nil
		case TypeByte:
			return arrow.PrimitiveTypes.Int8, nil
		case TypeFloat:
			return arrow.PrimitiveTypes.Float32, nil
		case TypeDouble:
			return arrow.PrimitiveTypes.Float64, nil
		case TypeBoolean:
			return arrow.FixedWidthTypes.Boolean, nil
		case TypeBinary:
			return arrow.BinaryTypes.Binary, nil
		case TypeDate:
			return arrow.FixedWidthTypes.Date32, nil
		case TypeTimestamp:
			return ArrowTimestamp, nil
		case TypeTimestampNTZ:
			return ArrowTimestampNTZ, nil
		case TypeVoid:
			return arrow.Null, nil
		}
	case *DecimalType:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
	case *StructType:
		fields, err := arrowFields(t, path)
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	case *ArrayType:
		et, err := arrowType(t.ElementType, path+"[]")
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: "element", Type: et, Nullable: t.ContainsNull}), nil
	case *MapType:
		kt, err := arrowType(t.KeyType, path+".key")
		if err != nil {
			return nil, err
		}
		vt, err := arrowType(t.ValueType, path+".value")
		if err != nil {
			return nil, err
		}
		m := arrow.MapOf(kt, vt)
		m.SetItemNullable(t.ValueContainsNull)
		return m, nil
	}
	return nil, &SchemaError{Path: path, Reason: fmt.Sprintf("no Arrow type for %v", t)}
}

func arrowMetadata(md map[string]json.RawMessage) arrow.Metadata {
	if len(md) == 0 {
		return arrow.Metadata{}
	}
	keys := make([]string, 0, len(md))
	vals := make([]string, 0, len(md))
	for k, v := range md {
		keys = append(keys, k)
		var s string
		if json.Unmarshal(v, &s) == nil {
			vals = append(vals, s)
		} else {
			vals = append(vals, string(v))
		}
	}
	return arrow.NewMetadata(keys, vals)
}

// FromArrow maps an Arrow schema to Delta, the inverse of ToArrow. Any timestamp with a
// time zone maps to timestamp, one without to timestamp_ntz; large string/binary map like
// their small forms; unsigned integers, float16, intervals and other types with no Delta
// equivalent are a *SchemaError naming the field. Arrow metadata values that are valid
// JSON objects, arrays, numbers or booleans are kept as such, others as JSON strings.
func FromArrow(s *arrow.Schema) (*StructType, error) {
	return deltaStruct(s.Fields(), "")
}

func deltaStruct(fields []arrow.Field, path string) (*StructType, error) {
	st := &StructType{Fields: make([]StructField, len(fields))}
	for i, f := range fields {
		fp := joinPath(path, f.Name)
		t, err := deltaType(f.Type, fp)
		if err != nil {
			return nil, err
		}
		st.Fields[i] = StructField{Name: f.Name, Type: t, Nullable: f.Nullable, Metadata: deltaMetadata(f.Metadata)}
	}
	return st, nil
}

func deltaType(t arrow.DataType, path string) (DataType, error) {
	switch t := t.(type) {
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return TypeString, nil
	case *arrow.Int64Type:
		return TypeLong, nil
	case *arrow.Int32Type:
		return TypeInteger, nil
	case *arrow.Int16Type:
		return TypeShort, nil
	case *arrow.Int8Type:
		return TypeByte, nil
	case *arrow.Float32Type:
		return TypeFloat, nil
	case *arrow.Float64Type:
		return TypeDouble, nil
	case *arrow.BooleanType:
		return TypeBoolean, nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return TypeBinary, nil
	case *arrow.Date32Type:
		return TypeDate, nil
	case *arrow.TimestampType:
		if t.TimeZone == "" {
			return TypeTimestampNTZ, nil
		}
		return TypeTimestamp, nil
	case *arrow.NullType:
		return TypeVoid, nil
	case *arrow.Decimal128Type:
		if t.Precision < 1 || t.Precision > 38 {
			return nil, &SchemaError{Path: path, Reason: fmt.Sprintf("decimal precision %d: want from 1 up to 38", t.Precision)}
		}
		return &DecimalType{Precision: int(t.Precision), Scale: int(t.Scale)}, nil
	case *arrow.StructType:
		return deltaStruct(t.Fields(), path)
	case *arrow.ListType:
		et, err := deltaType(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return &ArrayType{ElementType: et, ContainsNull: t.ElemField().Nullable}, nil
	case *arrow.LargeListType:
		et, err := deltaType(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return &ArrayType{ElementType: et, ContainsNull: t.ElemField().Nullable}, nil
	case *arrow.MapType:
		kt, err := deltaType(t.KeyType(), path+".key")
		if err != nil {
			return nil, err
		}
		vt, err := deltaType(t.ItemType(), path+".value")
		if err != nil {
			return nil, err
		}
		return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: t.ItemField().Nullable}, nil
	}
	return nil, &SchemaError{Path: path, Reason: fmt.Sprintf("Arrow type %s has no Delta equivalent", t)}
}

func deltaMetadata(md arrow.Metadata) map[string]json.RawMessage {
	if md.Len() == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, md.Len())
	for i, k := range md.Keys() {
		v := md.Values()[i]
		t := strings.TrimSpace(v)
		if t != "" && t[0] != '"' && json.Valid([]byte(t)) {
			out[k] = json.RawMessage(t)
			continue
		}
		b, _ := json.Marshal(v)
		out[k] = b
	}
	return out
}
