package storage_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

func TestPutGetJSON(t *testing.T) {
	ctx := context.Background()
	st, err := localstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	type doc struct{ A int }
	var d doc
	if ok, err := storage.GetJSON(ctx, st, "x/doc.json", &d); ok || err != nil {
		t.Fatalf("missing key: %v %v", ok, err)
	}
	if err := storage.PutJSON(ctx, st, "x/doc.json", doc{A: 7}); err != nil {
		t.Fatal(err)
	}
	if ok, err := storage.GetJSON(ctx, st, "x/doc.json", &d); !ok || err != nil || d.A != 7 {
		t.Fatalf("read back %+v %v %v", d, ok, err)
	}
	if err := storage.PutJSON(ctx, st, "x/bad.json", func() {}); err == nil || !strings.Contains(err.Error(), "x/bad.json") {
		t.Fatalf("unencodable value: %v", err)
	}
	if err := st.Put(ctx, "x/torn.json", strings.NewReader("{"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.GetJSON(ctx, st, "x/torn.json", &d); err == nil || !strings.Contains(err.Error(), "decode x/torn.json") {
		t.Fatalf("torn document: %v", err)
	}
}
