package cdcsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

var ordersTable = source.Table{Schema: "dbo", Name: "orders"}

func mustT(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func insert(t *testing.T, db *DB, ids ...int) lsn.LSN {
	t.Helper()
	l, err := db.Exec(func(tx *Txn) error {
		for _, id := range ids {
			if _, err := tx.Insert("orders", Row{"id": id, "amount": id}); err != nil {
				return err
			}
		}
		return nil
	})
	mustT(t, err)
	return l
}

func changes(t *testing.T, db *DB, ci string) []map[string]any {
	t.Helper()
	ctx := context.Background()
	cols, err := db.CapturedColumns(ctx, ci)
	mustT(t, err)
	r, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: lsn.Zero, To: maxOf(ctx, t, db), Columns: cols})
	mustT(t, err)
	return readAll(t, r)
}

func tableRows(t *testing.T, db *DB, tbl source.Table, r source.KeyRange) ([]map[string]any, error) {
	t.Helper()
	cols, err := db.CapturedColumns(context.Background(), "dbo_orders")
	mustT(t, err)
	rows, err := db.ReadTable(context.Background(), source.TableRead{Table: tbl, Columns: cols, Keys: cols[:1], Range: r})
	if err != nil {
		return nil, err
	}
	return readAll(t, rows), nil
}

func TestInjectedFaults(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{})
	insert(t, db, 1, 2, 3, 4, 5)
	db.Inject(Fault{Method: "MaxLSN", Call: 2})
	if _, err := db.MaxLSN(ctx); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if _, err := db.MaxLSN(ctx); !source.IsTransient(err) || !errors.Is(err, ErrInjected) {
		t.Fatalf("second call: %v, want an injected transient error", err)
	}
	if _, err := db.MaxLSN(ctx); err != nil {
		t.Fatalf("third call: %v", err)
	}
	db.Inject(Fault{Method: "KeyMax", Kind: FaultLockTimeout})
	var lt *source.LockTimeoutError
	if _, _, err := db.KeyMax(ctx, ordersTable, []source.Column{{Name: "id", DataType: "int"}}); !errors.As(err, &lt) {
		t.Fatalf("KeyMax: %v, want *LockTimeoutError", err)
	}
	// A connection lost after two batches of two rows.
	db.Inject(Fault{Method: "ReadChanges", Kind: FaultLostConnection, AfterBatches: 2})
	cols, _ := db.CapturedColumns(ctx, "dbo_orders")
	rows, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", To: maxOf(ctx, t, db), Columns: cols, ReadOptions: source.ReadOptions{BatchRows: 2}})
	mustT(t, err)
	for i := 0; i < 2; i++ {
		rec, err := rows.Next(ctx)
		mustT(t, err)
		rec.Release()
	}
	if _, err := rows.Next(ctx); !source.IsTransient(err) || !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("third batch: %v, want a lost connection", err)
	}
	if got := db.Calls("ReadChanges"); got != 1 {
		t.Fatalf("Calls = %d", got)
	}
}

func TestLocksBlockReadCommittedNotSnapshot(t *testing.T) {
	db := ordersDB(t, Config{})
	insert(t, db, 1, 2, 10)
	tx := db.Begin()
	mustT(t, tx.Update("orders", []any{2}, Row{"amount": 99}))
	zero := time.Duration(0)
	locked := ordersTable
	locked.LockTimeout = &zero
	var lt *source.LockTimeoutError
	if _, err := tableRows(t, db, locked, source.KeyRange{}); !errors.As(err, &lt) {
		t.Fatalf("read over a locked row: %v, want *LockTimeoutError", err)
	}
	// A range that does not hold the locked row reads.
	if rows, err := tableRows(t, db, locked, source.KeyRange{Lo: source.Key{5}}); err != nil || len(rows) != 1 {
		t.Fatalf("range [5, ∞): %v, %v", rows, err)
	}
	snap := locked
	snap.Isolation = source.Snapshot
	rows, err := tableRows(t, db, snap, source.KeyRange{})
	if err != nil || len(rows) != 3 || rows[1]["amount"] != "2.00" {
		t.Fatalf("snapshot read: %v, %v; want the committed version", rows, err)
	}
	// Without a lock timeout the read waits for the writer.
	done := make(chan []map[string]any)
	go func() {
		rows, err := tableRows(t, db, ordersTable, source.KeyRange{})
		if err != nil {
			t.Error(err)
		}
		done <- rows
	}()
	time.Sleep(20 * time.Millisecond)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if rows := <-done; len(rows) != 3 || rows[1]["amount"] != "99.00" {
		t.Fatalf("waiting read: %v", rows)
	}
}

func TestCommitBeforeReadCommitsAfterTheStamp(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{})
	insert(t, db, 1)
	stamp, _ := db.MaxLSN(ctx)
	tx := db.Begin()
	_, err := tx.Insert("orders", Row{"id": 7})
	mustT(t, err)
	db.CommitBeforeRead(tx)
	// Key look-ups before the read are not blocked by the queued writer.
	zero := time.Duration(0)
	withTimeout := ordersTable
	withTimeout.LockTimeout = &zero
	if _, _, err := db.KeyMax(ctx, withTimeout, []source.Column{{Name: "id"}}); err != nil {
		t.Fatal(err)
	}
	rows, err := tableRows(t, db, ordersTable, source.KeyRange{})
	mustT(t, err)
	if len(rows) != 2 {
		t.Fatalf("read %d rows, want the queued insert too", len(rows))
	}
	after, _ := db.MaxLSN(ctx)
	if after.Compare(stamp) <= 0 {
		t.Fatalf("max LSN %s not past the stamp %s", after, stamp)
	}
}

func TestKeyUpdateShapes(t *testing.T) {
	for _, tc := range []struct {
		deleteInsert bool
		want         []int64
	}{{false, []int64{3, 4}}, {true, []int64{1, 2}}} {
		db := ordersDB(t, Config{KeyUpdateAsDeleteInsert: tc.deleteInsert})
		insert(t, db, 1)
		_, err := db.Exec(func(tx *Txn) error { return tx.Update("orders", []any{1}, Row{"id": 2}) })
		mustT(t, err)
		got := changes(t, db, "dbo_orders")[1:]
		if len(got) != 2 || got[0]["_operation"] != tc.want[0] || got[1]["_operation"] != tc.want[1] ||
			got[0]["_seqval"] != got[1]["_seqval"] || got[0]["id"] != int64(1) || got[1]["id"] != int64(2) {
			t.Fatalf("deleteInsert=%v: %v", tc.deleteInsert, got)
		}
		if _, ok, _ := db.Get("orders", []any{1}); ok {
			t.Fatal("old key still present")
		}
	}
}

func TestDDL(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{})
	_, err := db.Exec(func(tx *Txn) error {
		_, err := tx.Insert("orders", Row{"id": 1, "amount": 1, "note": "kept"})
		return err
	})
	mustT(t, err)
	addLSN, err := db.AddColumn("orders", source.Column{Name: "extra", DataType: "int", Nullable: true})
	mustT(t, err)
	_, err = db.Exec(func(tx *Txn) error { return tx.Update("orders", []any{1}, Row{"extra": 5}) })
	mustT(t, err)
	if n := len(changes(t, db, "dbo_orders")); n != 1 {
		t.Fatalf("an update of only the added column wrote change rows: %d rows", n)
	}
	if _, ok, _ := db.CommitTime(ctx, addLSN); ok {
		t.Fatal("a DDL LSN has a commit time")
	}
	_, err = db.DropColumn("orders", "note")
	mustT(t, err)
	_, err = db.Exec(func(tx *Txn) error { return tx.Update("orders", []any{1}, Row{"amount": 3}) })
	mustT(t, err)
	cols, _ := db.CapturedColumns(ctx, "dbo_orders")
	if len(cols) != 3 || cols[2].Name != "note" || cols[2].Present {
		t.Fatalf("captured columns after DROP: %+v", cols)
	}
	cols[2].Present = true
	if _, err := db.ReadTable(ctx, source.TableRead{Table: ordersTable, Columns: cols}); err == nil {
		t.Fatal("SELECT of a dropped column succeeded")
	}
	_, err = db.AlterColumn("orders", source.Column{Name: "amount", DataType: "decimal", Precision: 20, Scale: 4, Nullable: true})
	mustT(t, err)
	// The change table still has the column: read it (Present true) to see its values.
	r, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", To: maxOf(ctx, t, db), Columns: cols})
	mustT(t, err)
	rows := readAll(t, r)
	if rows[0]["note"] != "kept" || rows[1]["note"] != nil || rows[2]["note"] != nil {
		t.Fatalf("a dropped column is NULL from the drop on: %v", rows)
	}
	cols[2].Present = false
	rows = changes(t, db, "dbo_orders")
	if rows[0]["note"] != "kept" || rows[1]["note"] != nil {
		t.Fatalf("a dropped column (Present false) still reads its values captured before the DROP: %v", rows)
	}
	if rows[0]["amount"] != "1.0000" || rows[2]["amount"] != "3.0000" {
		t.Fatalf("change rows not converted by ALTER: %v", rows)
	}
	ddl, err := db.DDLHistory(ctx, "dbo_orders", lsn.Zero, lsn.Max)
	mustT(t, err)
	if len(ddl) != 3 || ddl[0].LSN != addLSN || ddl[0].RequiredColumnUpdate || !ddl[2].RequiredColumnUpdate || ddl[0].Time.IsZero() {
		t.Fatalf("DDL history %+v", ddl)
	}
}

func TestCaptureInstancesLimitsAndLag(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{ManualCapture: true})
	if _, err := db.EnableCapture("orders", CaptureOptions{Name: "v2"}); err != nil {
		t.Fatal(err)
	}
	var ce *CaptureError
	if _, err := db.EnableCapture("orders", CaptureOptions{Name: "v3"}); !errors.As(err, &ce) {
		t.Fatalf("third instance: %v", err)
	}
	l := insert(t, db, 1)
	if m, _ := db.MaxLSN(ctx); !m.IsZero() {
		t.Fatalf("max LSN %s before capture ran", m)
	}
	if rows, _ := tableRows(t, db, ordersTable, source.KeyRange{}); len(rows) != 1 {
		t.Fatal("the table does not show the committed row")
	}
	if m := db.RunCapture(); m != l {
		t.Fatalf("after capture max LSN %s, want %s", m, l)
	}
	list, _ := db.CaptureInstances(ctx)
	if len(list) != 2 || list[0].Name != "dbo_orders" || list[1].Name != "v2" {
		t.Fatalf("instances %+v", list)
	}
	mustT(t, db.DisableCapture("dbo_orders"))
	var nf *source.CaptureInstanceNotFoundError
	if _, err := db.MinLSN(ctx, "dbo_orders"); !errors.As(err, &nf) {
		t.Fatalf("MinLSN of a dropped instance: %v", err)
	}
}

func TestCleanupStopsAtFirstEntryOfSameTime(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{})
	insert(t, db, 1)
	db.Advance(time.Second)
	a := insert(t, db, 2)
	b := insert(t, db, 3) // same clock: same tran_end_time as a
	mustT(t, db.Cleanup("dbo_orders", b))
	m, err := db.MinLSN(ctx, "dbo_orders")
	mustT(t, err)
	if m != a {
		t.Fatalf("min LSN %s, want %s (first entry with the mark's tran_end_time)", m, a)
	}
	if rows := changes(t, db, "dbo_orders"); len(rows) != 2 {
		t.Fatalf("%d rows left, want 2", len(rows))
	}
}

func TestFallBackCommitTimesAndTimeToLSN(t *testing.T) {
	ctx := context.Background()
	ny, err := time.LoadLocation("America/New_York")
	mustT(t, err)
	// 2026-11-01 06:00 UTC is 02:00 EDT falling back to 01:00 EST.
	start := time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC)
	db := ordersDB(t, Config{Location: ny, Start: start})
	db.SetTime(time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)) // 01:30 EDT
	a := insert(t, db, 1)
	db.SetTime(time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC)) // 01:30 EST
	b := insert(t, db, 2)
	ta, _, _ := db.CommitTime(ctx, a)
	tb, _, _ := db.CommitTime(ctx, b)
	if !ta.Equal(time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)) || !tb.Equal(time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC)) {
		t.Fatalf("commit times %v, %v", ta, tb)
	}
	// 05:45 UTC reads 01:45 on the local clock, which B (01:30 EST) also shows: the bias
	// goes earlier, to before A.
	got, ok, err := db.LSNAtOrBefore(ctx, time.Date(2026, 11, 1, 5, 45, 0, 0, time.UTC))
	mustT(t, err)
	if ok && got.Compare(a) > 0 {
		t.Fatalf("LSNAtOrBefore in the repeated hour = %s, later than %s", got, a)
	}
	got, ok, _ = db.LSNAtOrBefore(ctx, time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC))
	if !ok || got != b {
		t.Fatalf("after the repeated hour: %s, %v", got, ok)
	}
}

func TestDatetimeRounding(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{})
	base := db.Now().Truncate(time.Second)
	db.SetTime(base.Add(1400 * time.Microsecond)) // 0.42 ticks of 1/300 s: rounds to .000
	a := insert(t, db, 1)
	db.SetTime(base.Add(5 * time.Millisecond)) // 1.5 ticks: rounds to 2/300 = .00667
	b := insert(t, db, 2)
	ta, _, _ := db.CommitTime(ctx, a)
	tb, _, _ := db.CommitTime(ctx, b)
	if !ta.Equal(base) || !tb.Equal(base.Add(7*time.Millisecond)) {
		t.Fatalf("commit times %v, %v; want %v and +7ms", ta, tb, base)
	}
}

func TestGUIDOrderIsSQLServers(t *testing.T) {
	c := source.Column{DataType: "uniqueidentifier"}
	lo := "FFFFFFFF-FFFF-FFFF-0000-000000000001"
	hi := "00000000-0000-0000-0000-000000000002"
	if compareValues(c, lo, hi) >= 0 {
		t.Fatal("the last six bytes must decide first")
	}
	ci := source.Column{DataType: "varchar", Collation: "SQL_Latin1_General_CP1_CI_AS"}
	if compareValues(ci, "abc", "ABC  ") != 0 || compareValues(source.Column{DataType: "varchar"}, "ABC", "abc") == 0 {
		t.Fatal("case and trailing-space rules")
	}
}

func TestClosedAndDisabled(t *testing.T) {
	ctx := context.Background()
	db := New(Config{CDCDisabled: true})
	var ne *source.CDCNotEnabledError
	if _, err := db.MaxLSN(ctx); !errors.As(err, &ne) {
		t.Fatalf("CDC disabled: %v", err)
	}
	db.Close()
	if _, err := db.MaxLSN(ctx); !errors.Is(err, source.ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}

func TestConcurrentWritersAndReaders(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{IdleEvery: time.Minute})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				id := w*1000 + i
				if _, err := db.Exec(func(tx *Txn) error {
					if _, err := tx.Insert("orders", Row{"id": id}); err != nil {
						return err
					}
					return tx.Update("orders", []any{id}, Row{"amount": i})
				}); err != nil {
					t.Error(err)
					return
				}
				db.Advance(time.Second)
			}
		}(w)
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cols, _ := db.CapturedColumns(ctx, "dbo_orders")
			prev := 0
			for i := 0; i < 30; i++ {
				rows, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", To: maxOf(ctx, t, db), Columns: cols, ReadOptions: source.ReadOptions{BatchRows: 50}})
				if err != nil {
					t.Error(err)
					return
				}
				n := 0
				for {
					rec, err := rows.Next(ctx)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Error(err)
						return
					}
					n += int(rec.NumRows())
					rec.Release()
				}
				if n < prev || n%3 != 0 {
					t.Errorf("read %d rows after %d: not whole transactions", n, prev)
				}
				prev = n
			}
		}()
	}
	wg.Wait()
	if got := len(changes(t, db, "dbo_orders")); got != 1200 {
		t.Fatalf("%d change rows, want 1200", got)
	}
}

func TestBoundsDecodedFromJSON(t *testing.T) {
	cases := []struct {
		col  source.Column
		in   any
		want any
	}{
		{source.Column{Name: "i", DataType: "int"}, float64(42), int64(42)},
		{source.Column{Name: "i", DataType: "bigint"}, "-7", int64(-7)},
		{source.Column{Name: "d", DataType: "decimal", Precision: 10, Scale: 2}, "3.5", "3.50"},
		{source.Column{Name: "t", DataType: "datetime2", DatetimePrecision: 7}, "2026-01-02T03:04:05.123456", time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)},
		{source.Column{Name: "dt", DataType: "date"}, "2026-01-02", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
		{source.Column{Name: "g", DataType: "uniqueidentifier"}, "6f9619ff-8b86-d011-b42d-00c04fc964ff", "6F9619FF-8B86-D011-B42D-00C04FC964FF"},
	}
	for _, tc := range cases {
		got, err := normalize(tc.col, tc.in)
		if err != nil || compareValues(tc.col, got, tc.want) != 0 {
			t.Errorf("%s(%v) = %v, %v; want %v", tc.col.DataType, tc.in, got, err, tc.want)
		}
	}
	b, err := normalize(source.Column{DataType: "varbinary"}, "0x0A0b")
	if err != nil || string(b.([]byte)) != "\x0a\x0b" {
		t.Errorf("binary from hex: %v %v", b, err)
	}
	var ve *ValueError
	if _, err := normalize(source.Column{DataType: "int"}, 1.5); !errors.As(err, &ve) {
		t.Errorf("1.5 as int: %v", err)
	}
	if _, err := normalize(source.Column{DataType: "tinyint"}, 300); !errors.As(err, &ve) {
		t.Errorf("300 as tinyint: %v", err)
	}
}

func TestSplitChangesCountsWholeCommits(t *testing.T) {
	db := ordersDB(t, Config{})
	var commits []lsn.LSN
	for c := 0; c < 4; c++ {
		commits = append(commits, insert(t, db, c*10+1, c*10+2, c*10+3, c*10+4, c*10+5))
	}
	// NTILE(3) over 20 rows is 7, 7, 6: tile 1 ends inside commit 2, which it keeps whole.
	tiles, err := db.SplitChanges(context.Background(), "dbo_orders", lsn.Zero, lsn.Max, 3)
	mustT(t, err)
	want := []source.Tile{{Last: commits[1], Rows: 10}, {Last: commits[2], Rows: 5}, {Last: commits[3], Rows: 5}}
	if len(tiles) != len(want) {
		t.Fatalf("tiles %+v", tiles)
	}
	for i, w := range want {
		if tiles[i].Last != w.Last || tiles[i].Rows != w.Rows || tiles[i].Next != w.Last.Next() {
			t.Fatalf("tile %d = %+v, want %+v", i, tiles[i], w)
		}
	}
}

func TestSplitUpdateIsDeleteInsert(t *testing.T) {
	db := ordersDB(t, Config{})
	insert(t, db, 1)
	_, err := db.Exec(func(tx *Txn) error { return tx.UpdateAsDeleteInsert("orders", []any{1}, Row{"amount": 2}) })
	mustT(t, err)
	got := changes(t, db, "dbo_orders")[1:]
	if len(got) != 2 || got[0]["_operation"] != int64(1) || got[1]["_operation"] != int64(2) ||
		got[0]["_seqval"] != got[1]["_seqval"] || got[0]["_command_id"] != got[1]["_command_id"] || got[1]["amount"] != "2.00" {
		t.Fatalf("split update rows %v", got)
	}
}

// The merged key order after writes equals a full sort, whatever the mix of writes.
func TestIncrementalOrderMatchesFullSort(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		db := New(Config{Seed: seed})
		mustT(t, db.CreateTable(TableSpec{Name: "t", Key: []string{"k"}, Columns: []source.Column{
			{Name: "k", DataType: "varchar", MaxLength: 10, Collation: "Latin1_General_CI_AS"}, {Name: "v", DataType: "int", Nullable: true}}}))
		rng := rand.New(rand.NewPCG(seed, 1))
		tbl := db.tables["dbo.t"]
		for round := 0; round < 30; round++ {
			_, _ = db.Exec(func(tx *Txn) error {
				for i := 0; i < 1+rng.IntN(int(seed%7)*10+3); i++ {
					k := fmt.Sprintf("%c%d", "aAbBcC"[rng.IntN(6)], rng.IntN(50))
					switch rng.IntN(4) {
					case 0, 1:
						_, _ = tx.Insert("t", Row{"k": k, "v": i})
					case 2:
						_ = tx.Update("t", []any{k}, Row{"v": -i})
					default:
						if rng.IntN(2) == 0 {
							_ = tx.Delete("t", []any{k})
						} else {
							_ = tx.Update("t", []any{k}, Row{"k": k + "x"})
						}
					}
				}
				return nil
			})
			db.mu.Lock()
			got := tbl.order()
			want := slices.Clone(tbl.list)
			slices.SortFunc(want, tbl.cmpRows())
			db.mu.Unlock()
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d round %d: merged order differs from a full sort (%d vs %d rows)", seed, round, len(got), len(want))
			}
		}
	}
}

// maxOf is db's max LSN: the end of a read of "everything captured" (a range past max_lsn
// is a *source.ReplicaBehindError).
func maxOf(ctx context.Context, tb testing.TB, db *DB) lsn.LSN {
	tb.Helper()
	m, err := db.MaxLSN(ctx)
	if err != nil {
		tb.Errorf("MaxLSN: %v", err)
	}
	return m
}

// A change row whose cdc.lsn_time_mapping row is gone keeps its place in a change read, with
// a NULL commit time (docs/reference/sqlserver-cdc.md §3.7): an inner join would drop it.
func TestChangeRowWithoutMappingRowIsKept(t *testing.T) {
	db := ordersDB(t, Config{})
	insert(t, db, 1)
	lost := insert(t, db, 2)
	insert(t, db, 3)
	mustT(t, db.ForgetCommitTime(lost))
	ctx := context.Background()
	if _, ok, err := db.CommitTime(ctx, lost); err != nil || ok {
		t.Fatalf("commit time of the forgotten commit: ok=%v err=%v", ok, err)
	}
	rows := changes(t, db, "dbo_orders")
	if len(rows) != 3 {
		t.Fatalf("%d change rows, want 3: %v", len(rows), rows)
	}
	for _, r := range rows {
		nullTime := r["_commit_ts"] == nil
		if (fmt.Sprint(r["id"]) == "2") != nullTime {
			t.Errorf("row %v: NULL commit time %v, want it only for id 2", r, nullTime)
		}
	}
	if err := db.ForgetCommitTime(maxOf(ctx, t, db)); err == nil {
		t.Fatal("forgetting the newest entry was accepted")
	}
}
