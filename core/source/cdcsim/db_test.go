package cdcsim

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

func ordersDB(t *testing.T, cfg Config) *DB {
	t.Helper()
	db := New(cfg)
	err := db.CreateTable(TableSpec{Name: "orders", Columns: []source.Column{
		{Name: "id", DataType: "int"},
		{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Nullable: true},
		{Name: "note", DataType: "nvarchar", MaxLength: 50, Nullable: true},
	}, Key: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("orders", CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	return db
}

// readAll drains rows into per-row maps.
func readAll(t *testing.T, r source.Rows) []map[string]any {
	t.Helper()
	defer r.Close()
	var out []map[string]any
	for {
		rec, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			m := map[string]any{}
			for j, f := range rec.Schema().Fields() {
				m[f.Name] = cellValue(rec.Column(j), i)
			}
			out = append(out, m)
		}
		rec.Release()
	}
}

func cellValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch x := a.(type) {
	case *array.String:
		return x.Value(i)
	case *array.Int32:
		return int64(x.Value(i))
	case *array.Int64:
		return x.Value(i)
	case *array.Decimal128:
		return x.Value(i).ToString(x.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Timestamp:
		return x.Value(i).ToTime(arrow.Microsecond)
	}
	return a.ValueStr(i)
}

func TestInsertUpdateDeleteReadsAsChangeRows(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{Seed: 1})
	at, err := db.Exec(func(tx *Txn) error {
		if _, err := tx.Insert("orders", Row{"id": 1, "amount": "10.5", "note": "a"}); err != nil {
			return err
		}
		return tx.Update("orders", []any{1}, Row{"amount": 11})
	})
	if err != nil {
		t.Fatal(err)
	}
	cols, err := db.CapturedColumns(ctx, "dbo_orders")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsn.Zero, To: at, Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, rows)
	if len(got) != 3 {
		t.Fatalf("got %d rows, want 3: %v", len(got), got)
	}
	wantOps := []int64{2, 3, 4}
	for i, r := range got {
		if r["_operation"] != wantOps[i] || r["_start_lsn"] != at.String() {
			t.Errorf("row %d = %v", i, r)
		}
	}
	if got[2]["amount"] != "11.00" || got[1]["amount"] != "10.50" {
		t.Errorf("amounts: %v %v", got[1]["amount"], got[2]["amount"])
	}
	ct, ok, err := db.CommitTime(ctx, at)
	if err != nil || !ok || !got[0]["_commit_ts"].(time.Time).Equal(ct) {
		t.Errorf("commit time %v %v %v vs %v", ct, ok, err, got[0]["_commit_ts"])
	}
}
