package cdcsim

import (
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// TestSimulatorBadInputIsTypedError calls the simulator's own API (tables, transactions,
// DDL, capture, cleanup, look-ups) with input outside its contract and wants a typed error,
// never a panic.
func TestSimulatorBadInputIsTypedError(t *testing.T) {
	db := ordersDB(t, Config{Seed: 1})
	insert(t, db, 1, 2, 3)
	mustT(t, db.CreateTable(TableSpec{Name: "heap", Columns: []source.Column{{Name: "v", DataType: "int", Nullable: true}}}))
	ended := db.Begin()
	ended.Rollback()
	cases := []struct {
		name string
		want func(error) bool
		fn   func() error
	}{
		{"CreateTable empty name", isTableErr, func() error {
			return db.CreateTable(TableSpec{Columns: []source.Column{{Name: "a", DataType: "int"}}})
		}},
		{"CreateTable no columns", isTableErr, func() error { return db.CreateTable(TableSpec{Name: "x"}) }},
		{"CreateTable column without type", isTableErr, func() error {
			return db.CreateTable(TableSpec{Name: "x", Columns: []source.Column{{Name: "a"}}})
		}},
		{"CreateTable duplicate column", isTableErr, func() error {
			return db.CreateTable(TableSpec{Name: "x", Columns: []source.Column{{Name: "a", DataType: "int"}, {Name: "A", DataType: "int"}}})
		}},
		{"CreateTable unknown key", isTableErr, func() error {
			return db.CreateTable(TableSpec{Name: "x", Columns: []source.Column{{Name: "a", DataType: "int"}}, Key: []string{"b"}})
		}},
		{"CreateTable duplicate key column", isTableErr, func() error {
			return db.CreateTable(TableSpec{Name: "x", Columns: []source.Column{{Name: "a", DataType: "int"}}, Key: []string{"a", "A"}})
		}},
		{"CreateTable exists", isTableErr, func() error {
			return db.CreateTable(TableSpec{Name: "ORDERS", Columns: []source.Column{{Name: "a", DataType: "int"}}})
		}},
		{"Columns unknown", isTableErr, func() error { _, err := db.Columns("nope"); return err }},
		{"KeyColumns unknown", isTableErr, func() error { _, err := db.KeyColumns("nope"); return err }},
		{"RowCount unknown", isTableErr, func() error { _, err := db.RowCount("nope"); return err }},
		{"RandomKey unknown", isTableErr, func() error { _, _, err := db.RandomKey("nope", func(int) int { return 0 }); return err }},
		{"RandomKey nil pick", isInvalid, func() error { _, _, err := db.RandomKey("orders", nil); return err }},
		{"RandomKey pick out of range", isInvalid, func() error { _, _, err := db.RandomKey("orders", func(n int) int { return n }); return err }},
		{"RandomKey pick negative", isInvalid, func() error { _, _, err := db.RandomKey("orders", func(int) int { return -1 }); return err }},
		{"Get unknown table", isTableErr, func() error { _, _, err := db.Get("nope", []any{1}); return err }},
		{"Get nil key", isTableErr, func() error { _, _, err := db.Get("orders", nil); return err }},
		{"Get key arity", isTableErr, func() error { _, _, err := db.Get("orders", []any{1, 2}); return err }},
		{"Get string for int", isValueErr, func() error { _, _, err := db.Get("orders", []any{"one"}); return err }},
		{"Get heap key not int", isTableErr, func() error { _, _, err := db.Get("heap", []any{"x"}); return err }},
		{"Exec nil fn", isInvalid, func() error { _, err := db.Exec(nil); return err }},
		{"Insert unknown table", isTableErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { _, err := tx.Insert("nope", Row{"id": 9}); return err })
			return err
		}},
		{"Insert unknown column", isTxnErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { _, err := tx.Insert("orders", Row{"id": 9, "ghost": 1}); return err })
			return err
		}},
		{"Insert nil row", isTxnErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { _, err := tx.Insert("orders", nil); return err })
			return err
		}},
		{"Insert wrong type", isValueErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { _, err := tx.Insert("orders", Row{"id": "nine"}); return err })
			return err
		}},
		{"Insert duplicate key", isTxnErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { _, err := tx.Insert("orders", Row{"id": 1}); return err })
			return err
		}},
		{"Insert after rollback", isTxnErr, func() error { _, err := ended.Insert("orders", Row{"id": 9}); return err }},
		{"Update after rollback", isTxnErr, func() error { return ended.Update("orders", []any{1}, Row{"note": "x"}) }},
		{"Delete after rollback", isTxnErr, func() error { return ended.Delete("orders", []any{1}) }},
		{"Commit after rollback", isTxnErr, func() error { _, err := ended.Commit(); return err }},
		{"Update nil key", isTableErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { return tx.Update("orders", nil, Row{"note": "x"}) })
			return err
		}},
		{"Update missing row", isTxnErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { return tx.Update("orders", []any{99}, Row{"note": "x"}) })
			return err
		}},
		{"Update key to NULL", isTxnErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { return tx.Update("orders", []any{1}, Row{"id": nil}) })
			return err
		}},
		{"UpdateAsDeleteInsert wrong arity", isTableErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { return tx.UpdateAsDeleteInsert("orders", []any{1, 2}, Row{"note": "x"}) })
			return err
		}},
		{"Delete missing row", isTxnErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { return tx.Delete("orders", []any{99}) })
			return err
		}},
		{"Delete key of wrong type", isValueErr, func() error {
			_, err := db.Exec(func(tx *Txn) error { return tx.Delete("orders", []any{struct{}{}}) })
			return err
		}},
		{"EnableCapture unknown table", isTableErr, func() error { _, err := db.EnableCapture("nope", CaptureOptions{}); return err }},
		{"EnableCapture duplicate name", isCaptureErr, func() error { _, err := db.EnableCapture("orders", CaptureOptions{Name: "DBO_ORDERS"}); return err }},
		{"EnableCapture unknown column", isCaptureErr, func() error {
			_, err := db.EnableCapture("orders", CaptureOptions{Name: "o2", Columns: []string{"ghost"}})
			return err
		}},
		{"EnableCapture name with ]", isCaptureErr, func() error { _, err := db.EnableCapture("orders", CaptureOptions{Name: "a]b"}); return err }},
		{"EnableCapture name with control char", isCaptureErr, func() error { _, err := db.EnableCapture("orders", CaptureOptions{Name: "a\nb"}); return err }},
		{"EnableCapture name over 100 chars", isCaptureErr, func() error {
			_, err := db.EnableCapture("orders", CaptureOptions{Name: string(make([]byte, 101))})
			return err
		}},
		{"DisableCapture unknown", isCaptureErr, func() error { return db.DisableCapture("nope") }},
		{"Cleanup unknown", isNotFound, func() error { return db.Cleanup("nope", lsn.Zero) }},
		{"Cleanup above max", isInvalid, func() error { return db.Cleanup("dbo_orders", lsn.Max) }},
		{"MoveMinLSN unknown", isNotFound, func() error { return db.MoveMinLSN("nope", lsn.Zero) }},
		{"PurgeBelowMin unknown", isNotFound, func() error { return db.PurgeBelowMin("nope") }},
		{"AddColumn unknown table", isTableErr, func() error {
			_, err := db.AddColumn("nope", source.Column{Name: "c", DataType: "int", Nullable: true})
			return err
		}},
		{"AddColumn existing", isTableErr, func() error {
			_, err := db.AddColumn("orders", source.Column{Name: "NOTE", DataType: "int", Nullable: true})
			return err
		}},
		{"AddColumn no type", isTableErr, func() error { _, err := db.AddColumn("orders", source.Column{Name: "c", Nullable: true}); return err }},
		{"AddColumn not null", isTableErr, func() error { _, err := db.AddColumn("orders", source.Column{Name: "c", DataType: "int"}); return err }},
		{"DropColumn unknown", isTableErr, func() error { _, err := db.DropColumn("orders", "ghost"); return err }},
		{"DropColumn key", isTableErr, func() error { _, err := db.DropColumn("orders", "id"); return err }},
		{"AlterColumn unknown", isTableErr, func() error {
			_, err := db.AlterColumn("orders", source.Column{Name: "ghost", DataType: "int"})
			return err
		}},
		{"AlterColumn key", isTableErr, func() error {
			_, err := db.AlterColumn("orders", source.Column{Name: "id", DataType: "bigint"})
			return err
		}},
	}
	for _, c := range cases {
		err := call(t, c.name, c.fn)
		if !c.want(err) {
			t.Errorf("%s: got %T %v, want the typed error", c.name, err, err)
		}
	}
}

// TestCommitBeforeReadNil: a nil transaction queued for the next read is refused, not a
// crash of that read.
func TestCommitBeforeReadNil(t *testing.T) {
	db := ordersDB(t, Config{Seed: 1})
	insert(t, db, 1)
	if err := call(t, "CommitBeforeRead(nil)", func() error { return db.CommitBeforeRead(nil) }); !isInvalid(err) {
		t.Fatalf("got %T %v", err, err)
	}
	r, err := db.ReadTable(t.Context(), source.TableRead{Table: source.Table{Name: "orders"}, Columns: []source.Column{{Name: "id", DataType: "int", Present: true}}})
	mustT(t, err)
	if rows := readAll(t, r); len(rows) != 1 {
		t.Fatalf("read %d rows, want 1", len(rows))
	}
}
