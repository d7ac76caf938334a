package deltalog

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// A schema using every type, nesting and column metadata, as Spark writes it.
const lgAllTypes = `{"type":"struct","fields":[` +
	`{"name":"s","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"l","type":"long","nullable":false,"metadata":{"comment":"a long"}},` +
	`{"name":"i","type":"integer","nullable":true,"metadata":{}},` +
	`{"name":"sh","type":"short","nullable":true,"metadata":{}},` +
	`{"name":"b","type":"byte","nullable":true,"metadata":{}},` +
	`{"name":"f","type":"float","nullable":true,"metadata":{}},` +
	`{"name":"d","type":"double","nullable":true,"metadata":{}},` +
	`{"name":"bo","type":"boolean","nullable":true,"metadata":{}},` +
	`{"name":"bi","type":"binary","nullable":true,"metadata":{}},` +
	`{"name":"dt","type":"date","nullable":true,"metadata":{}},` +
	`{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},` +
	`{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},` +
	`{"name":"dec","type":"decimal(19,4)","nullable":true,"metadata":{"delta.columnMapping.id":5}},` +
	`{"name":"st","type":{"type":"struct","fields":[{"name":"x","type":"integer","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},` +
	`{"name":"arr","type":{"type":"array","elementType":"string","containsNull":false},"nullable":true,"metadata":{}},` +
	`{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"long","containsNull":true},"valueContainsNull":true},"nullable":true,"metadata":{}}` +
	`]}`

func TestSchemaJSONRoundTrip(t *testing.T) {
	st, err := ParseSchema(lgAllTypes)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.String(); got != lgAllTypes {
		t.Errorf("re-encoded schema\n%s\nwant\n%s", got, lgAllTypes)
	}
	if !st.UsesType(TypeTimestampNTZ) {
		t.Error("UsesType(timestamp_ntz) = false")
	}
}

func TestSchemaArrowRoundTrip(t *testing.T) {
	st, err := ParseSchema(lgAllTypes)
	if err != nil {
		t.Fatal(err)
	}
	as, err := ToArrow(st)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]arrow.DataType{
		"s": arrow.BinaryTypes.String, "l": arrow.PrimitiveTypes.Int64, "i": arrow.PrimitiveTypes.Int32,
		"sh": arrow.PrimitiveTypes.Int16, "b": arrow.PrimitiveTypes.Int8, "f": arrow.PrimitiveTypes.Float32,
		"d": arrow.PrimitiveTypes.Float64, "bo": arrow.FixedWidthTypes.Boolean, "bi": arrow.BinaryTypes.Binary,
		"dt": arrow.FixedWidthTypes.Date32, "ts": ArrowTimestamp, "ntz": ArrowTimestampNTZ,
		"dec": &arrow.Decimal128Type{Precision: 19, Scale: 4},
	}
	for name, typ := range want {
		f, ok := as.FieldsByName(name)
		if !ok || !arrow.TypeEqual(f[0].Type, typ) {
			t.Errorf("field %s: %v, want %v", name, f, typ)
		}
	}
	if f, _ := as.FieldsByName("l"); f[0].Nullable || f[0].Metadata.FindKey("comment") < 0 {
		t.Errorf("field l: %+v", f[0])
	}
	back, err := FromArrow(as)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.String(); got != lgAllTypes {
		t.Errorf("Delta -> Arrow -> Delta\n%s\nwant\n%s", got, lgAllTypes)
	}
}

func TestSchemaErrors(t *testing.T) {
	for _, s := range []string{
		`{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}}]}`,
		`{"type":"struct","fields":[{"name":"d","type":"decimal(40,2)","nullable":true,"metadata":{}}]}`,
		`"long"`,
		`{`,
	} {
		var se *SchemaError
		if _, err := ParseSchema(s); !errors.As(err, &se) {
			t.Errorf("ParseSchema(%s) = %v, want *SchemaError", s, err)
		}
	}
	st, err := ParseSchema(`{"type":"struct","fields":[{"name":"d","type":"decimal(10, 4)","nullable":true,"metadata":{}},{"name":"e","type":"decimal","nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Fields[0].Type.(*DecimalType); d.Precision != 10 || d.Scale != 4 {
		t.Errorf("decimal(10, 4) parsed as %+v", d)
	}
	if d := st.Fields[1].Type.(*DecimalType); d.Precision != 10 || d.Scale != 0 {
		t.Errorf("decimal parsed as %+v", d)
	}
	var se *SchemaError
	_, err = FromArrow(arrow.NewSchema([]arrow.Field{{Name: "u", Type: arrow.PrimitiveTypes.Uint32}}, nil))
	if !errors.As(err, &se) || se.Path != "u" {
		t.Errorf("FromArrow(uint32) = %v", err)
	}
}

func TestProtocolFor(t *testing.T) {
	plain, _ := ParseSchema(`{"type":"struct","fields":[{"name":"ts","type":"timestamp","nullable":true,"metadata":{}}]}`)
	if p := ProtocolFor(plain); p.MinReaderVersion != 1 || p.MinWriterVersion != 2 || p.ReaderFeatures != nil || p.WriterFeatures != nil {
		t.Errorf("ProtocolFor(timestamp) = %+v", p)
	}
	ntz, _ := ParseSchema(`{"type":"struct","fields":[{"name":"a","type":{"type":"array","elementType":"timestamp_ntz","containsNull":true},"nullable":true,"metadata":{}}]}`)
	p := ProtocolFor(ntz)
	if p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || len(p.ReaderFeatures) != 1 || p.ReaderFeatures[0] != "timestampNtz" || len(p.WriterFeatures) != 1 || p.WriterFeatures[0] != "timestampNtz" {
		t.Errorf("ProtocolFor(timestamp_ntz) = %+v", p)
	}
	up, changed := UpgradeProtocol(Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, ntz)
	if !changed || up.MinReaderVersion != 3 || up.MinWriterVersion != 7 ||
		!up.HasWriterFeature("appendOnly") || !up.HasWriterFeature("invariants") || !up.HasWriterFeature("timestampNtz") || !up.HasReaderFeature("timestampNtz") {
		t.Errorf("UpgradeProtocol(1/2) = %+v %v", up, changed)
	}
	if _, changed := UpgradeProtocol(p, ntz); changed {
		t.Error("UpgradeProtocol changed a protocol that already has timestampNtz")
	}
}

func TestCanWrite(t *testing.T) {
	md := Metadata{SchemaString: `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}`}
	ok := []Protocol{
		{MinReaderVersion: 1, MinWriterVersion: 2},
		{MinReaderVersion: 1, MinWriterVersion: 4},
		{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"timestampNtz", "appendOnly", "domainMetadata"}},
		{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}},
	}
	for _, p := range ok {
		if err := CanWrite(p, md); err != nil {
			t.Errorf("CanWrite(%+v) = %v", p, err)
		}
	}
	refused := map[string]Protocol{
		"columnMapping": {MinReaderVersion: 2, MinWriterVersion: 5},
		"rowTracking":   {MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"appendOnly", "rowTracking"}},
		"futureFeature": {MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"futureFeature"}},
	}
	for feature, p := range refused {
		var fe *UnsupportedFeatureError
		if err := CanWrite(p, md); !errors.As(err, &fe) || fe.Feature != feature || fe.Reader {
			t.Errorf("CanWrite(%+v) = %v, want refusal of %s", p, err, feature)
		}
	}
	var ve *UnsupportedVersionError
	if err := CanWrite(Protocol{MinReaderVersion: 1, MinWriterVersion: 8}, md); !errors.As(err, &ve) || ve.Version != 8 {
		t.Errorf("writer 8: %v", err)
	}
	active := map[string]Metadata{
		"checkConstraints": {SchemaString: md.SchemaString, Configuration: map[string]string{"delta.constraints.pos": "a > 0"}},
		"invariants":       {SchemaString: `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{"delta.invariants":"{\"expression\":{\"expression\":\"a > 0\"}}"}}]}`},
		"generatedColumns": {SchemaString: `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{"delta.generationExpression":"1"}}]}`},
	}
	for feature, m := range active {
		var fe *UnsupportedFeatureError
		if err := CanWrite(Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, m); !errors.As(err, &fe) || fe.Feature != feature {
			t.Errorf("CanWrite with active %s = %v", feature, err)
		}
	}
}

// A decimal precision out of range reads plainly (it said "is outside 1..38").
func TestSchemaDecimalRangeReadsPlainly(t *testing.T) {
	var se *SchemaError
	_, err := FromArrow(arrow.NewSchema([]arrow.Field{{Name: "d", Type: &arrow.Decimal128Type{Precision: 39, Scale: 2}}}, nil))
	if !errors.As(err, &se) || se.Reason != "decimal precision 39: want from 1 up to 38" {
		t.Errorf("FromArrow(decimal(39,2)) = %v", err)
	}
}
