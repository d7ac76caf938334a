package cdcsim

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Batches are sized from the previous one (rows.reserve). Values that grow from batch to
// batch, NULLs, and batches cut by bytes at varying row counts must still come back whole
// and in order.
func TestBatchesSizedFromThePreviousOne(t *testing.T) {
	db := New(Config{Seed: 1})
	mustT(t, db.CreateTable(TableSpec{Name: "grow", Key: []string{"id"}, Columns: []source.Column{
		{Name: "id", DataType: "bigint"},
		{Name: "s", DataType: "nvarchar", MaxLength: 4000, Nullable: true},
	}}))
	const n = 300
	// Row i's value is i characters long (NULL every 5th row), so each batch needs more
	// value bytes than the one before it reserved.
	want := func(i int) (string, bool) {
		if i%5 == 4 {
			return "", false
		}
		return strings.Repeat(string(rune('a'+i%26)), i), true
	}
	_, err := db.Exec(func(tx *Txn) error {
		for i := range n {
			r := Row{"id": int64(i)}
			if s, ok := want(i); ok {
				r["s"] = s
			}
			if _, err := tx.Insert("grow", r); err != nil {
				return err
			}
		}
		return nil
	})
	mustT(t, err)
	cols := []source.Column{
		{Name: "id", DataType: "bigint", Present: true},
		{Name: "s", DataType: "nvarchar", MaxLength: 4000, Nullable: true, Present: true},
	}
	for _, opt := range []source.ReadOptions{{BatchRows: 7}, {BatchRows: 64}, {BatchBytes: 2000}} {
		rows, err := db.ReadTable(context.Background(), source.TableRead{Table: source.Table{Schema: "dbo", Name: "grow"}, Columns: cols, Keys: cols[:1], ReadOptions: opt})
		mustT(t, err)
		next, batches := 0, 0
		for {
			rec, err := rows.Next(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			mustT(t, err)
			batches++
			if opt.BatchRows > 0 && rec.NumRows() != int64(min(opt.BatchRows, n-next)) {
				t.Errorf("%+v: batch %d has %d rows, want %d", opt, batches, rec.NumRows(), min(opt.BatchRows, n-next))
			}
			ids := rec.Column(0).(*array.Int64)
			ss := rec.Column(1).(*array.String)
			for i := range int(rec.NumRows()) {
				s, ok := want(next)
				if ids.Value(i) != int64(next) || ss.IsValid(i) != ok || ss.Value(i) != s {
					t.Fatalf("%+v: row %d = (%d, %q, valid %v), want (%d, %q, valid %v)", opt, next, ids.Value(i), ss.Value(i), ss.IsValid(i), next, s, ok)
				}
				next++
			}
			rec.Release()
		}
		rows.Close()
		if next != n {
			t.Errorf("%+v: read %d rows, want %d", opt, next, n)
		}
		if opt.BatchBytes > 0 && batches < 10 {
			t.Errorf("%+v: %d batches; the byte cap should cut the growing rows into more", opt, batches)
		}
	}
}

// A read of fewer rows than a batch holds reserves what it returns, not 4,096 rows: a
// stream batch of about 1,000 change rows allocated four times its Arrow size. Every
// buffer of a 1,000-row change read is within an eighth (and 64 bytes of padding) of its
// length, the string values' included.
func TestReadReservesTheRowsItHas(t *testing.T) {
	db := New(Config{Seed: 1})
	mustT(t, db.CreateTable(TableSpec{Name: "t", Key: []string{"id"}, Columns: []source.Column{
		{Name: "id", DataType: "int"},
		{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Nullable: true},
		{Name: "s", DataType: "nvarchar", MaxLength: 100, Nullable: true},
	}}))
	_, err := db.EnableCapture("t", CaptureOptions{})
	mustT(t, err)
	const n = 1000
	for i := range n / 10 {
		_, err := db.Exec(func(tx *Txn) error {
			for k := range 10 {
				id := int64(i*10 + k)
				if _, err := tx.Insert("t", Row{"id": id, "amount": "12.50", "s": strings.Repeat("x", int(id%40))}); err != nil {
					return err
				}
			}
			return nil
		})
		mustT(t, err)
	}
	insts, err := db.CaptureInstances(context.Background())
	mustT(t, err)
	maxLSN, err := db.MaxLSN(context.Background())
	mustT(t, err)
	cols := []source.Column{
		{Name: "id", DataType: "int", Present: true},
		{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Nullable: true, Present: true},
		{Name: "s", DataType: "nvarchar", MaxLength: 100, Nullable: true, Present: true},
	}
	rows, err := db.ReadChanges(context.Background(), source.ChangeRead{CaptureInstance: insts[0].Name, From: insts[0].StartLSN, To: maxLSN, Columns: cols})
	mustT(t, err)
	defer rows.Close()
	rec, err := rows.Next(context.Background())
	mustT(t, err)
	defer rec.Release()
	if rec.NumRows() != n {
		t.Fatalf("%d rows, want %d", rec.NumRows(), n)
	}
	for i, c := range rec.Columns() {
		for k, b := range c.Data().Buffers() {
			if b == nil {
				continue
			}
			if b.Cap() > b.Len()+b.Len()/8+64 {
				t.Errorf("column %s buffer %d: %d bytes reserved for %d", rec.Schema().Field(i).Name, k, b.Cap(), b.Len())
			}
		}
	}
}
