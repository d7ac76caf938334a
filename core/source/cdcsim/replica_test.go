package cdcsim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// A change read landing on a lagging secondary is refused: its session's max_lsn is below
// the range's end, so the read would come back short and look complete. The next read
// (the secondary caught up, or another session) reads everything.
func TestLaggingReplicaReadRefused(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{Seed: 2})
	a := insert(t, db, 1)
	insert(t, db, 2)
	m := maxOf(ctx, t, db)
	cols, err := db.CapturedColumns(ctx, "dbo_orders")
	mustT(t, err)
	db.LagReplica(a, 1)
	_, err = db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", To: m, Columns: cols})
	var rb *source.ReplicaBehindError
	if !errors.As(err, &rb) || !source.IsTransient(err) || rb.MaxLSN != a || rb.To != m {
		t.Fatalf("read on the lagging secondary: %v, want a transient *ReplicaBehindError at %s", err, a)
	}
	if got := changes(t, db, "dbo_orders"); len(got) != 2 {
		t.Fatalf("next read %d rows, want 2", len(got))
	}
	// A range the secondary has already replayed reads normally there.
	db.LagReplica(a, 1)
	rows, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", To: a, Columns: cols})
	mustT(t, err)
	if got := readAll(t, rows); len(got) != 1 {
		t.Fatalf("range up to the secondary's max: %d rows", len(got))
	}
}

// Restore puts tables, change tables, the mapping and the log position back; the commits
// after it reuse the lost LSNs with the clock's new times; a backup restores twice.
func TestBackupRestore(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{Seed: 4})
	insert(t, db, 1)
	b, err := db.Backup()
	mustT(t, err)
	m0 := maxOf(ctx, t, db)
	db.Advance(time.Minute)
	lost := insert(t, db, 2)
	mustT(t, db.Restore(b))
	if m := maxOf(ctx, t, db); m != m0 {
		t.Fatalf("max_lsn after restore %s, want %s", m, m0)
	}
	if n, _ := db.RowCount("orders"); n != 1 {
		t.Fatalf("%d rows after restore, want 1", n)
	}
	if got := changes(t, db, "dbo_orders"); len(got) != 1 {
		t.Fatalf("%d change rows after restore, want 1", len(got))
	}
	db.Advance(time.Hour)
	again := insert(t, db, 3)
	if again != lost {
		t.Fatalf("commit after restore at %s, want the lost LSN %s", again, lost)
	}
	mustT(t, db.Restore(b))
	if n, _ := db.RowCount("orders"); n != 1 {
		t.Fatalf("second restore: %d rows", n)
	}
	tx := db.Begin()
	if err := db.Restore(b); !errors.Is(err, ErrOpenTransactions) {
		t.Fatalf("restore with an open transaction: %v", err)
	}
	tx.Rollback()
}

// A computed column: a SELECT of the table computes it, the change table holds NULL, and
// ReadTable reads NULL like the change rows (one rule for every path, docs/types.md).
func TestComputedColumn(t *testing.T) {
	ctx := context.Background()
	db := New(Config{Seed: 5})
	mustT(t, db.CreateTable(TableSpec{Name: "c", Key: []string{"id"}, Columns: []source.Column{
		{Name: "id", DataType: "int"}, {Name: "v", DataType: "int", Nullable: true},
		{Name: "twice", DataType: "int", Nullable: true, Computed: true},
	}, Compute: map[string]func(Row) any{"twice": func(r Row) any {
		if v, ok := r["v"].(int64); ok {
			return v * 2
		}
		return nil
	}}}))
	_, err := db.EnableCapture("c", CaptureOptions{})
	mustT(t, err)
	_, err = db.Exec(func(tx *Txn) error {
		_, err := tx.Insert("c", Row{"id": 1, "v": 21})
		return err
	})
	mustT(t, err)
	if row, _, _ := db.Get("c", []any{1}); row["twice"] != int64(42) {
		t.Fatalf("Get: %v, want twice 42", row)
	}
	_, err = db.Exec(func(tx *Txn) error { _, err := tx.Insert("c", Row{"id": 2, "twice": 4}); return err })
	var te *TxnError
	if !errors.As(err, &te) {
		t.Fatalf("insert into a computed column: %v", err)
	}
	cols, err := db.CapturedColumns(ctx, "dbo_c")
	mustT(t, err)
	if !cols[2].Computed {
		t.Fatalf("captured columns %+v: twice not computed", cols)
	}
	ch := changes(t, db, "dbo_c")
	if len(ch) != 1 || ch[0]["twice"] != nil {
		t.Fatalf("change rows %v: want twice NULL", ch)
	}
	rows, err := db.ReadTable(ctx, source.TableRead{Table: source.Table{Name: "c"}, Columns: cols})
	mustT(t, err)
	if got := readAll(t, rows); len(got) != 1 || got[0]["twice"] != nil || got[0]["v"] != int64(21) {
		t.Fatalf("table rows %v: want twice NULL", got)
	}
}

// With NullStartLSNUntilCaptured a new instance lists start_lsn NULL until capture reaches
// it, and source.InstancesOf leaves such a newer instance out.
func TestNullStartLSN(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{Seed: 6, ManualCapture: true, NullStartLSNUntilCaptured: true})
	insert(t, db, 1)
	db.RunCapture()
	_, err := db.EnableCapture("orders", CaptureOptions{Name: "dbo_orders_v2"})
	mustT(t, err)
	list, err := db.CaptureInstances(ctx)
	mustT(t, err)
	if len(list) != 2 || !list[1].StartLSN.IsZero() || list[0].StartLSN.IsZero() {
		t.Fatalf("instances %+v: want the new one's start_lsn NULL", list)
	}
	if got := source.InstancesOf(list, "dbo", "orders"); len(got) != 1 || got[0].Name != "dbo_orders" {
		t.Fatalf("InstancesOf %+v: want only the established instance", got)
	}
	insert(t, db, 2)
	db.RunCapture()
	list, err = db.CaptureInstances(ctx)
	mustT(t, err)
	if list[1].StartLSN == lsn.Zero || len(source.InstancesOf(list, "dbo", "orders")) != 2 {
		t.Fatalf("after capture: %+v", list)
	}
}

// A change table without __$command_id: a read that asks for it is a
// *source.CommandIDMissingError naming the option; WithoutCommandID reads it ordered by
// (start_lsn, seqval, operation) with _command_id NULL.
func TestChangeTableWithoutCommandID(t *testing.T) {
	ctx := context.Background()
	db := New(Config{Seed: 8})
	mustT(t, db.CreateTable(TableSpec{Name: "orders", Key: []string{"id"}, Columns: []source.Column{{Name: "id", DataType: "int"}, {Name: "amount", DataType: "int", Nullable: true}}}))
	_, err := db.EnableCapture("orders", CaptureOptions{WithoutCommandID: true})
	mustT(t, err)
	_, err = db.Exec(func(tx *Txn) error {
		if _, err := tx.Insert("orders", Row{"id": 1, "amount": 1}); err != nil {
			return err
		}
		return tx.Update("orders", []any{1}, Row{"amount": 2})
	})
	mustT(t, err)
	cols, err := db.CapturedColumns(ctx, "dbo_orders")
	mustT(t, err)
	_, err = db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", To: maxOf(ctx, t, db), Columns: cols})
	var cm *source.CommandIDMissingError
	if !errors.As(err, &cm) || !strings.Contains(err.Error(), "includeCommandId") {
		t.Fatalf("%v, want *CommandIDMissingError naming includeCommandId", err)
	}
	rows, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", To: maxOf(ctx, t, db), Columns: cols, WithoutCommandID: true})
	mustT(t, err)
	got := readAll(t, rows)
	if len(got) != 3 || got[0]["_operation"] != int64(2) || got[1]["_operation"] != int64(3) || got[2]["_operation"] != int64(4) {
		t.Fatalf("rows %v, want 2,3,4", got)
	}
	for _, r := range got {
		if r["_command_id"] != nil {
			t.Fatalf("row %v: _command_id not NULL", r)
		}
	}
}
