package deltalog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// Snapshots with the same schema string share one parsed Arrow schema; another string is
// parsed on its own, and a string evicted from the kept ones is parsed again, equal.
func TestArrowSchemaSharedBySchemaString(t *testing.T) {
	schema := func(col string) string {
		return fmt.Sprintf(`{"type":"struct","fields":[{"name":%q,"type":"long","nullable":true,"metadata":{}}]}`, col)
	}
	snap := func(col string) *Snapshot { return &Snapshot{metadata: Metadata{SchemaString: schema(col)}} }
	a1, err := snap("a").ArrowSchema()
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := snap("a").ArrowSchema()
	b, _ := snap("b").ArrowSchema()
	if a1 != a2 {
		t.Error("two snapshots of one schema string parsed it twice")
	}
	if b == a1 || b.Field(0).Name != "b" || a1.Field(0).Name != "a" {
		t.Errorf("schemas a %v, b %v", a1, b)
	}
	for i := range schemasKept {
		if _, err := snap(fmt.Sprint("c", i)).ArrowSchema(); err != nil {
			t.Fatal(err)
		}
	}
	a3, _ := snap("a").ArrowSchema()
	if a3 == a1 || !a3.Equal(a1) {
		t.Errorf("after eviction: same pointer %v, equal %v", a3 == a1, a3.Equal(a1))
	}
	if _, err := (&Snapshot{metadata: Metadata{SchemaString: "{"}}).ArrowSchema(); err == nil {
		t.Error("a malformed schema string parsed")
	}
}

// CanWrite takes a schema's column features from the kept parse: a second check of the
// same metadata allocates nothing, and a schema whose column uses a feature is refused
// every time, not only at its first parse.
func TestCanWriteUsesTheKeptSchema(t *testing.T) {
	p := Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureAppendOnly}}
	plain := Metadata{SchemaString: `{"type":"struct","fields":[{"name":"kept","type":"long","nullable":true,"metadata":{}}]}`}
	inv := Metadata{SchemaString: `{"type":"struct","fields":[{"name":"kept","type":"long","nullable":true,"metadata":{"delta.invariants":"{\"expression\":{\"expression\":\"kept > 0\"}}"}}]}`}
	if err := CanWrite(p, plain); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() {
		if err := CanWrite(p, plain); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CanWrite of a kept schema allocates %v times", n)
	}
	for i := range 3 {
		var fe *UnsupportedFeatureError
		if err := CanWrite(p, inv); !errors.As(err, &fe) || fe.Feature != FeatureInvariants {
			t.Errorf("check %d: %v, want invariants refused", i, err)
		}
	}
}

// SetSchema remembers a schema it found to change nothing: the same schema again is
// answered without parsing or mapping (no allocation), and a schema that adds a column,
// changes a nullability or a type, with type widening off or on, is still decided in
// full, before and after.
func TestSetSchemaRemembersAnUnchangedSchema(t *testing.T) {
	const str = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"v","type":"integer","nullable":true,"metadata":{}}]}`
	snap := func(widen string) *Snapshot {
		return &Snapshot{version: 3, protocol: Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
			metadata: Metadata{SchemaString: str, Configuration: map[string]string{PropEnableTypeWidening: widen}}}
	}
	cur := func(fs ...arrow.Field) *arrow.Schema {
		return arrow.NewSchema(append([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, fs...), nil)
	}
	v := arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	same := cur(v)
	tx := &Transaction{snap: snap("false")}
	for i := range 2 {
		if err := tx.SetSchema(cur(v)); err != nil || tx.metadata != nil || tx.protocol != nil {
			t.Fatalf("set %d: %v, metadata %v", i, err, tx.metadata)
		}
	}
	if n := testing.AllocsPerRun(20, func() {
		if err := tx.SetSchema(same); err != nil || tx.metadata != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("SetSchema of a remembered schema allocates %v times", n)
	}

	added := cur(v, arrow.Field{Name: "w", Type: arrow.BinaryTypes.String, Nullable: true})
	if err := tx.SetSchema(added); err != nil || tx.metadata == nil || !strings.Contains(tx.metadata.SchemaString, `"w"`) {
		t.Errorf("added column: %v, metadata %v", err, tx.metadata)
	}
	if err := tx.SetSchema(same); err != nil || tx.metadata != nil {
		t.Errorf("the same schema after another: %v, metadata %v", err, tx.metadata)
	}
	required := v
	required.Nullable = false
	var sc *SchemaChangeError
	if err := tx.SetSchema(cur(required)); !errors.As(err, &sc) {
		t.Errorf("nullability change: %v, want a SchemaChangeError", err)
	}
	wide := arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	if err := tx.SetSchema(cur(wide)); !errors.As(err, &sc) {
		t.Errorf("int to long without the property: %v, want a SchemaChangeError", err)
	}
	txw := &Transaction{snap: snap("true")}
	for i := range 2 {
		if err := txw.SetSchema(cur(wide)); err != nil || txw.metadata == nil || !strings.Contains(txw.metadata.SchemaString, `"long"`) {
			t.Fatalf("int to long with the property, set %d: %v, metadata %v", i, err, txw.metadata)
		}
	}
	if err := txw.SetSchema(same); err != nil || txw.metadata != nil {
		t.Errorf("the same schema with the property: %v, metadata %v", err, txw.metadata)
	}
	if err := tx.SetSchema(cur(wide)); !errors.As(err, &sc) {
		t.Errorf("int to long without the property, after the widening table: %v, want a SchemaChangeError", err)
	}
}
