package deltalog

import (
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
	for i := range arrowSchemasKept {
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
