package stream

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// docs/reference/known-failures.md §G19: a NOT NULL ntext (text, image) column is NULL in
// the change table's delete and before-image rows, as Microsoft documents. Bronze declares
// every captured column nullable, so the stream writes those rows (never refusing the NULL
// as a NOT NULL violation), and the rebuilt table is still right: the delete removes the
// row, the after-image holds the value.
func TestNotNullTextNullInDeleteAndBeforeImage(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 31})
	if err := e.db.CreateTable(cdcsim.TableSpec{Name: "docs", Key: []string{"id"}, Columns: []source.Column{
		{Name: "id", DataType: "int"}, {Name: "body", DataType: "ntext"}, {Name: "raw", DataType: "image"}, {Name: "v", DataType: "int", Nullable: true},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.EnableCapture("docs", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	e.spec.Source.CaptureInstance = "dbo_docs"
	e.spec.Options.StartingLsn = "earliest"
	e.exec(func(tx *cdcsim.Txn) error {
		for _, id := range []int{1, 2} {
			if _, err := tx.Insert("docs", cdcsim.Row{"id": id, "body": "hello", "raw": []byte{1}, "v": 0}); err != nil {
				return err
			}
		}
		return nil
	})
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("docs", []any{2}, cdcsim.Row{"v": 1}) })
	e.exec(func(tx *cdcsim.Txn) error { return tx.Delete("docs", []any{1}) })
	if res := e.mustDrain(Options{}); res.Rows != 5 {
		t.Fatalf("streamed %d rows, want 5 (2 inserts, an update pair, a delete)", res.Rows)
	}
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	schema, err := snap.ArrowSchema()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"body", "raw"} {
		if i := schema.FieldIndices(name); len(i) != 1 || !schema.Field(i[0]).Nullable {
			t.Fatalf("bronze column %s: %v, want one nullable column", name, schema)
		}
	}
	it, err := snap.Scan(context.Background(), deltalog.ScanOptions{Columns: []string{bronze.ColOperation, "id", "body", "raw"}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	nulls := map[int32]int{}
	for {
		rec, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			op := rec.Column(0).(interface{ Value(int) int32 }).Value(i)
			if rec.Column(2).IsNull(i) && rec.Column(3).IsNull(i) {
				nulls[op]++
			} else if op == bronze.OpDelete || op == bronze.OpUpdateBefore {
				t.Errorf("operation %d row holds a text or image value", op)
			}
		}
		rec.Release()
	}
	if nulls[bronze.OpDelete] != 1 || nulls[bronze.OpUpdateBefore] != 1 || nulls[bronze.OpInsert] != 0 || nulls[bronze.OpUpdateAfter] != 0 {
		t.Fatalf("rows with NULL body and raw by operation: %v; want the delete and the before-image only", nulls)
	}
	st, _, err := rebuild.FromBronze(context.Background(), snap, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Rows) != 1 {
		t.Fatalf("rebuilt table has %d rows, want only id 2", len(st.Rows))
	}
}
