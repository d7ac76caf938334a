package workload

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

func run(t *testing.T, seed uint64, n int) (*cdcsim.DB, *Generator) {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: seed})
	g := New(db, Config{Seed: seed, TxnSize: 5})
	if err := g.Create(Standard()...); err != nil {
		t.Fatal(err)
	}
	if err := g.Load("orders", 50, 20); err != nil {
		t.Fatal(err)
	}
	if err := g.Step(n); err != nil {
		t.Fatal(err)
	}
	return db, g
}

// opsOf reads every change row of an instance and counts operations; it also checks the
// read converts every column to Arrow.
func opsOf(t *testing.T, db *cdcsim.DB, ci string) (map[int32]int, int) {
	t.Helper()
	ctx := context.Background()
	cols, err := db.CapturedColumns(ctx, ci)
	if err != nil {
		t.Fatal(err)
	}
	maxL, _ := db.MaxLSN(ctx)
	rows, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: lsn.Zero, To: maxL, Columns: cols, ReadOptions: source.ReadOptions{BatchRows: 64}})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	counts := map[int32]int{}
	total := 0
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() > 64 {
			t.Fatalf("batch of %d rows, cap 64", rec.NumRows())
		}
		op := rec.Column(2)
		for i := 0; i < int(rec.NumRows()); i++ {
			v := op.(interface{ Value(int) int32 }).Value(i)
			counts[v]++
			total++
		}
		rec.Release()
	}
	return counts, total
}

func TestStepWritesEveryOperationOnEveryTable(t *testing.T) {
	db, g := run(t, 3, 400)
	if g.Stats.Inserts == 0 || g.Stats.Updates == 0 || g.Stats.Deletes == 0 || g.Stats.KeyUpdates == 0 {
		t.Fatalf("stats %+v: every statement kind should appear", g.Stats)
	}
	for _, d := range Standard() {
		counts, _ := opsOf(t, db, "dbo_"+d.Spec.Name)
		for _, op := range []int32{1, 2, 3, 4} {
			if counts[op] == 0 {
				t.Errorf("%s: no operation %d in %v", d.Spec.Name, op, counts)
			}
		}
		if counts[3] != counts[4] {
			t.Errorf("%s: %d before images, %d after images", d.Spec.Name, counts[3], counts[4])
		}
	}
}

func TestTableReadsEveryType(t *testing.T) {
	db, _ := run(t, 4, 200)
	ctx := context.Background()
	cols, err := db.CapturedColumns(ctx, "dbo_all_types")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: "all_types"}, Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += int(rec.NumRows())
		rec.Release()
	}
	want, _ := db.RowCount("all_types")
	if n != want || n == 0 {
		t.Fatalf("read %d rows, table has %d", n, want)
	}
}

func TestSameSeedSameHistory(t *testing.T) {
	a, ga := run(t, 9, 150)
	b, gb := run(t, 9, 150)
	if ga.Stats != gb.Stats {
		t.Fatalf("stats differ: %+v vs %+v", ga.Stats, gb.Stats)
	}
	ma, _ := a.MaxLSN(context.Background())
	mb, _ := b.MaxLSN(context.Background())
	if ma != mb || a.Now() != b.Now() {
		t.Fatalf("max LSN %s vs %s, clock %v vs %v", ma, mb, a.Now(), b.Now())
	}
	_, na := opsOf(t, a, "dbo_orders")
	_, nb := opsOf(t, b, "dbo_orders")
	if na != nb {
		t.Fatalf("change rows %d vs %d", na, nb)
	}
	c, gc := run(t, 10, 150)
	mc, _ := c.MaxLSN(context.Background())
	if gc.Stats == ga.Stats && mc == ma {
		t.Fatalf("another seed wrote the same history")
	}
}

func TestRunForAdvancesTheClockAtTheRate(t *testing.T) {
	db := cdcsim.New(cdcsim.Config{Seed: 5})
	g := New(db, Config{Seed: 5, Rate: 4, Tables: []string{"orders"}})
	if err := g.Create(Orders(), Events()); err != nil {
		t.Fatal(err)
	}
	start := db.Now()
	if err := g.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if g.Stats.Transactions != 40 || !db.Now().Equal(start.Add(10*time.Second)) {
		t.Fatalf("%d transactions, clock +%v", g.Stats.Transactions, db.Now().Sub(start))
	}
	if n, _ := db.RowCount("events"); n != 0 {
		t.Fatalf("events got %d rows though Tables names only orders", n)
	}
}
