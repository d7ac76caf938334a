package deltalog

import (
	"errors"
	"fmt"
	"testing"
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
