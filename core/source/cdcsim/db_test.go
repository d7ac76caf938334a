package cdcsim

import (
	"context"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/sourcetest"
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

// readAll drains rows into per-row maps (sourcetest.Drain).
func readAll(t *testing.T, r source.Rows) []map[string]any {
	t.Helper()
	return sourcetest.Drain(context.Background(), t, r)
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
