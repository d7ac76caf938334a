package mssql

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mssqldrv "github.com/microsoft/go-mssqldb"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/sourcetest"
)

var ctx = context.Background()

// A source-table read sends the session prefix on its own connection, then the SELECT on
// the same connection, then the reset; rows come in batches of BatchRows.
func TestReadTableSessionAndBatches(t *testing.T) {
	d, s := newScripted(t, Options{}, func(q string, _ []any) result {
		if strings.HasPrefix(q, "SELECT") {
			r := result{cols: []string{"id", "code"}}
			for i := int64(1); i <= 5; i++ {
				r.rows = append(r.rows, []driver.Value{i, "k" + string(rune('a'+i))})
			}
			return r
		}
		return result{}
	})
	lt := 250 * time.Millisecond
	rows, err := d.ReadTable(ctx, source.TableRead{
		Table:       source.Table{Schema: "dbo", Name: "orders", Isolation: source.Snapshot, LockTimeout: &lt},
		Columns:     []source.Column{colI, {Name: "code", DataType: "nvarchar", MaxLength: 10, Present: true}},
		Keys:        []source.Column{colI},
		Range:       source.KeyRange{Lo: source.Key{int64(1)}},
		ReadOptions: source.ReadOptions{BatchRows: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, rec.NumRows())
		rec.Release()
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 3 || sizes[0] != 2 || sizes[1] != 2 || sizes[2] != 1 {
		t.Errorf("batch sizes %v, want [2 2 1]", sizes)
	}
	log := s.log()
	if len(log) != 3 {
		t.Fatalf("statements %v", log)
	}
	if log[0].query != "SET LOCK_TIMEOUT 250; SET TRANSACTION ISOLATION LEVEL SNAPSHOT;" || len(log[0].args) != 0 {
		t.Errorf("prefix %q (parameterless batch expected)", log[0].query)
	}
	if !strings.HasPrefix(log[1].query, "SELECT t.[id], t.[code] FROM [dbo].[orders] AS t WHERE [id] >= CAST(@p1 AS int)") {
		t.Errorf("query %q", log[1].query)
	}
	if log[2].query != sessionReset {
		t.Errorf("reset %q", log[2].query)
	}
	if log[0].conn != log[1].conn || log[1].conn != log[2].conn {
		t.Errorf("prefix, read and reset on different connections: %v", log)
	}
}

func TestReadTableByteCap(t *testing.T) {
	d, _ := newScripted(t, Options{}, func(q string, _ []any) result {
		if strings.HasPrefix(q, "SELECT") {
			return result{cols: []string{"s"}, rows: [][]driver.Value{{strings.Repeat("x", 100)}, {strings.Repeat("y", 100)}, {"z"}}}
		}
		return result{}
	})
	rows, err := d.ReadTable(ctx, source.TableRead{Table: tbl, Columns: []source.Column{{Name: "s", DataType: "varchar", MaxLength: -1, Present: true}}, ReadOptions: source.ReadOptions{BatchBytes: 50}})
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
		if rec.NumRows() != 1 {
			t.Errorf("batch of %d rows over a 50-byte cap", rec.NumRows())
		}
		rec.Release()
		n++
	}
	if n != 3 {
		t.Errorf("%d batches, want 3", n)
	}
}

func TestReadTableLockTimeout(t *testing.T) {
	d, _ := newScripted(t, Options{}, func(q string, _ []any) result {
		if strings.HasPrefix(q, "SELECT") {
			return result{err: mssqldrv.Error{Number: 1222, Message: "Lock request time out period exceeded."}}
		}
		return result{}
	})
	_, err := d.ReadTable(ctx, source.TableRead{Table: tbl, Columns: []source.Column{colI}})
	var lt *source.LockTimeoutError
	if !errors.As(err, &lt) || lt.Table != "[dbo].[orders]" {
		t.Fatalf("got %v", err)
	}
}

// Metadata and change-table reads take no session prefix.
func TestReadChangesNoPrefixAndAbsentColumns(t *testing.T) {
	d, s := newScripted(t, Options{SourceTimeZone: "UTC"}, func(q string, _ []any) result {
		switch {
		case q == sqlMaxLSN:
			return one("max_lsn", lsnB.String())
		case strings.HasPrefix(q, "EXEC sys.sp_cdc_get_captured_columns"):
			return result{cols: []string{"source_schema", "source_table", "column_name", "column_id", "ordinal_position", "data_type"},
				rows: [][]driver.Value{{"dbo", "orders", "id", int64(1), int64(1), "int"}}}
		case strings.HasPrefix(q, "SELECT c.name"):
			return result{cols: []string{"name", "column_id", "is_computed", "collation_name", "is_nullable"},
				rows: [][]driver.Value{{"id", int64(1), false, nil, false}}}
		case strings.Contains(q, "FROM cdc.[dbo_orders_CT]"):
			ts := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
			return result{cols: []string{"_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts", "id", "note"},
				rows: [][]driver.Value{{lsnA.String(), lsnA.String(), int64(2), int64(1), ts, int64(7), nil}}}
		}
		return result{err: errors.New("unexpected " + q)}
	})
	cols := []source.Column{colI, {Name: "note", DataType: "nvarchar", MaxLength: 40, Present: true}}
	rows, err := d.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsnA, To: lsnB, Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	got := sourcetest.Drain(ctx, t, rows)
	if len(got) != 1 || got[0]["_start_lsn"] != lsnA.String() || got[0]["_operation"] != int64(2) || got[0]["id"] != int64(7) || got[0]["note"] != nil {
		t.Errorf("rows %v", got)
	}
	if ts := got[0]["_commit_ts"].(time.Time); !ts.Equal(time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)) {
		t.Errorf("commit ts %v", ts)
	}
	for _, c := range s.log() {
		if strings.Contains(c.query, "SET ") {
			t.Errorf("change read sent %q", c.query)
		}
		if strings.Contains(c.query, "FROM cdc.[dbo_orders_CT]") && !strings.Contains(c.query, "NULL AS [note]") {
			t.Errorf("a column the instance lacks must be read as NULL: %s", c.query)
		}
	}
}

func TestReadChangesPermissionProbe(t *testing.T) {
	for _, c := range []struct {
		name  string
		probe driver.Value
		check func(error) bool
	}{
		{"no grant", int64(0), func(err error) bool {
			var pe *source.PermissionError
			return errors.As(err, &pe) && pe.Grant == "GRANT SELECT ON cdc.[dbo_orders_CT] TO [reader]"
		}},
		{"instance gone", nil, func(err error) bool {
			var nf *source.CaptureInstanceNotFoundError
			return errors.As(err, &nf) && nf.Name == "dbo_orders"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, _ := newScripted(t, Options{SourceTimeZone: "UTC"}, func(q string, _ []any) result {
				switch {
				case strings.HasPrefix(q, "EXEC sys.sp_cdc_get_captured_columns"):
					return result{cols: []string{"source_schema", "source_table", "column_name", "column_id", "data_type"}, rows: [][]driver.Value{{"dbo", "orders", "id", int64(1), "int"}}}
				case strings.HasPrefix(q, "SELECT c.name"):
					return result{cols: []string{"name", "column_id"}}
				case strings.Contains(q, "HAS_PERMS_BY_NAME"):
					return result{cols: []string{"p", "u"}, rows: [][]driver.Value{{c.probe, "reader"}}}
				}
				return result{err: mssqldrv.Error{Number: 229, Message: "The SELECT permission was denied on the object 'dbo_orders_CT', database 'shop', schema 'cdc'."}}
			})
			_, err := d.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsnA, To: lsnB, Columns: []source.Column{colI}})
			if !c.check(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestTransientRetried(t *testing.T) {
	calls := 0
	d, _ := newScripted(t, Options{}, func(string, []any) result {
		calls++
		if calls < 3 {
			return result{err: mssqldrv.Error{Number: 1205, Message: "deadlock victim"}}
		}
		return one("m", lsnB.String())
	})
	got, err := d.MaxLSN(ctx)
	if err != nil || got != lsnB || calls != 3 {
		t.Fatalf("MaxLSN = %v, %v after %d calls", got, err, calls)
	}
	calls = -10
	if _, err := d.MaxLSN(ctx); !source.IsTransient(err) || calls != -6 {
		t.Fatalf("after 4 attempts: %v, calls %d", err, calls+10)
	}
}

func TestMinLSNZeroIsNotFound(t *testing.T) {
	for _, v := range []driver.Value{nil, "0x00000000000000000000"} {
		d, _ := newScripted(t, Options{}, func(string, []any) result { return one("m", v) })
		_, err := d.MinLSN(ctx, "dbo_orders")
		var nf *source.CaptureInstanceNotFoundError
		if !errors.As(err, &nf) {
			t.Errorf("min lsn %v: %v", v, err)
		}
	}
}

func TestCaptureInstancesParsedAndSorted(t *testing.T) {
	d, _ := newScripted(t, Options{}, func(string, []any) result {
		return result{cols: []string{"source_schema", "source_table", "capture_instance", "start_lsn", "create_date", "index_column_list"},
			rows: [][]driver.Value{
				{"dbo", "orders", "dbo_orders_v2", lsnB.Bytes(), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), "[id], [line]"},
				{"dbo", "orders", "dbo_orders", lsnA.Bytes(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "[id]"},
			}}
	})
	list, err := d.CaptureInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "dbo_orders" || list[0].StartLSN != lsnA || list[1].IndexColumns[1] != "line" {
		t.Errorf("got %+v", list)
	}
}

func TestCDCNotEnabled(t *testing.T) {
	d, _ := newScripted(t, Options{Host: "h", Database: "shop"}, func(string, []any) result {
		return result{err: mssqldrv.Error{Number: 22901, Message: "The database 'shop' is not enabled for Change Data Capture."}}
	})
	_, err := d.CaptureInstances(ctx)
	var ce *source.CDCNotEnabledError
	if !errors.As(err, &ce) || ce.Database != "shop" {
		t.Fatalf("got %v", err)
	}
}

// Detection by version first: before 2022 the fallback offset is used with a warning,
// and CURRENT_TIMEZONE_ID() is never sent.
func TestZoneDetection(t *testing.T) {
	t.Run("before 2022", func(t *testing.T) {
		var logBuf bytes.Buffer
		d, s := newScripted(t, Options{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}, func(q string, _ []any) result {
			switch q {
			case sqlCanNameZone:
				return one("c", int64(0))
			case sqlServerOffset:
				return one("o", int64(-180))
			}
			return result{cols: []string{"l", "t"}, rows: [][]driver.Value{{lsnA.String(), time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)}}}
		})
		if _, ok, err := d.CommitTime(ctx, lsnA); err != nil || !ok {
			t.Fatal(err)
		}
		for _, c := range s.log() {
			if strings.Contains(c.query, "CURRENT_TIMEZONE_ID") {
				t.Error("CURRENT_TIMEZONE_ID() sent to a server before 2022")
			}
		}
		if !strings.Contains(logBuf.String(), "UTC-03:00") {
			t.Errorf("no warning with the offset: %q", logBuf.String())
		}
		last := s.log()[len(s.log())-1]
		if !strings.Contains(last.query, "SYSDATETIMEOFFSET()") {
			t.Errorf("fixed-offset conversion not used: %s", last.query)
		}
	})
	t.Run("2022 named zone uses the range offset", func(t *testing.T) {
		d, s := newScripted(t, Options{}, func(q string, _ []any) result {
			switch {
			case q == sqlCanNameZone:
				return one("c", int64(1))
			case q == sqlZoneID:
				return one("z", "E. South America Standard Time")
			case strings.HasPrefix(q, "SELECT CASE WHEN DATEDIFF"):
				return one("o", int64(-180))
			}
			return result{cols: []string{"l", "t"}, rows: [][]driver.Value{{lsnA.String(), time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)}}}
		})
		if _, ok, err := d.CommitTime(ctx, lsnA); err != nil || !ok {
			t.Fatal(err)
		}
		last := s.log()[len(s.log())-1]
		if !strings.Contains(last.query, "DATEADD(minute, -@p1, m.tran_end_time)") || last.args[0] != int32(-180) {
			t.Errorf("range offset not used: %s %v", last.query, last.args)
		}
	})
	t.Run("fall-back range reads the drops", func(t *testing.T) {
		d, s := newScripted(t, Options{SourceTimeZone: "Central Europe Standard Time"}, func(q string, _ []any) result {
			switch {
			case strings.HasPrefix(q, "SELECT CASE WHEN DATEDIFF"):
				return one("o", nil)
			case strings.Contains(q, "LAG(m.tran_end_time)"):
				return result{cols: []string{"l", "t"}, rows: [][]driver.Value{{lsnA.String(), "2026-10-25 02:01:00.000"}}}
			}
			return result{cols: []string{"l", "t"}, rows: [][]driver.Value{{lsnA.String(), time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC)}}}
		})
		c, ok, err := d.CommitTime(ctx, lsnA)
		if err != nil || !ok || !c.Equal(time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC)) {
			t.Fatalf("%v %v %v", c, ok, err)
		}
		last := s.log()[len(s.log())-1]
		if !strings.Contains(last.query, "(VALUES (CONVERT(binary(10), @p2, 1), CONVERT(datetime, @p3, 121)))") || last.args[2] != "2026-10-25 02:01:00.000" {
			t.Errorf("drops not bound: %s %v", last.query, last.args)
		}
	})
}

func TestSplitChangesMergesSharedEnds(t *testing.T) {
	d, _ := newScripted(t, Options{}, func(string, []any) result {
		return result{cols: []string{"l", "n"}, rows: [][]driver.Value{
			{lsnA.String(), int64(10)}, {lsnA.String(), int64(10)}, {lsnB.String(), int64(7)},
		}}
	})
	tiles, err := d.SplitChanges(ctx, "dbo_orders", lsn.Zero, lsnB, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(tiles) != 2 || tiles[0].Rows != 20 || tiles[0].Next != lsnA.Next() || tiles[1].Last != lsnB {
		t.Errorf("tiles %+v", tiles)
	}
}

func TestKeyBoundAndBuckets(t *testing.T) {
	d, s := newScripted(t, Options{}, func(q string, _ []any) result {
		switch {
		case strings.Contains(q, "OFFSET"):
			return result{cols: []string{"code", "id"}, rows: [][]driver.Value{{"N", int64(3)}}}
		case strings.Contains(q, "[__$b]"):
			return result{cols: []string{"b", "n", "s"}, rows: [][]driver.Value{{int64(-1), int64(4), "-10"}, {int64(2), int64(9), "190"}}}
		}
		return result{}
	})
	k, ok, err := d.KeyBound(ctx, tbl, []source.Column{colS, colI}, source.KeyRange{Lo: source.Key{"n", int64(1)}}, 10)
	if err != nil || !ok || k[0] != "N" || k[1] != int64(3) {
		t.Fatalf("KeyBound = %v %v %v", k, ok, err)
	}
	b, err := d.KeyBuckets(ctx, tbl, colI, 100, nil, nil)
	if err != nil || len(b) != 2 || b[0] != (source.Bucket{Index: -1, Rows: 4, KeySum: "-10"}) {
		t.Fatalf("KeyBuckets = %v %v", b, err)
	}
	// Both are source-table reads: each after its own prefix.
	prefixes := 0
	for _, c := range s.log() {
		if strings.HasPrefix(c.query, "SET LOCK_TIMEOUT -1; SET TRANSACTION ISOLATION LEVEL READ COMMITTED;") {
			prefixes++
		}
	}
	if prefixes != 4 {
		t.Errorf("%d prefix/reset batches, want 4", prefixes)
	}
}

// KeyAfter returns the one key its statement selects, after the session prefix; no row is
// "none after".
func TestKeyAfter(t *testing.T) {
	empty := false
	d, s := newScripted(t, Options{}, func(q string, _ []any) result {
		if strings.Contains(q, "[__$u]") && !empty {
			return result{cols: []string{"code", "id"}, rows: [][]driver.Value{{"o", int64(0)}}}
		}
		return result{}
	})
	k, ok, err := d.KeyAfter(ctx, tbl, []source.Column{colS, colI}, source.Key{"n", int64(1)})
	if err != nil || !ok || k[0] != "o" || k[1] != int64(0) {
		t.Fatalf("KeyAfter = %v %v %v", k, ok, err)
	}
	empty = true
	if k, ok, err := d.KeyAfter(ctx, tbl, []source.Column{colS, colI}, source.Key{"z", int64(1)}); err != nil || ok {
		t.Fatalf("KeyAfter past the last key = %v %v %v, want none", k, ok, err)
	}
	prefixes := 0
	for _, c := range s.log() {
		if strings.HasPrefix(c.query, "SET LOCK_TIMEOUT -1; SET TRANSACTION ISOLATION LEVEL READ COMMITTED;") {
			prefixes++
		}
	}
	if prefixes != 4 {
		t.Errorf("%d prefix/reset batches, want 4", prefixes)
	}
}

// A caller that stops after the first batch still resets the session on Close, and a
// lock timeout met while fetching is a *source.LockTimeoutError.
func TestReadTableEarlyCloseAndFetchError(t *testing.T) {
	d, s := newScripted(t, Options{}, func(q string, _ []any) result {
		if strings.HasPrefix(q, "SELECT") {
			return result{cols: []string{"id"}, n: 10, gen: func(i int, dest []driver.Value) { dest[0] = int64(i) },
				failAt: 4, failErr: mssqldrv.Error{Number: 1222, Message: "Lock request time out period exceeded."}}
		}
		return result{}
	})
	read := func(batch int) (source.Rows, error) {
		rows, err := d.ReadTable(ctx, source.TableRead{Table: tbl, Columns: []source.Column{colI}, ReadOptions: source.ReadOptions{BatchRows: batch}})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := rows.Next(ctx)
		if rec != nil {
			rec.Release()
		}
		return rows, err
	}
	rows, err := read(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	log := s.log()
	if last := log[len(log)-1]; last.query != sessionReset {
		t.Errorf("early close did not reset the session: %q", last.query)
	}
	rows, err = read(5)
	var lt *source.LockTimeoutError
	if !errors.As(err, &lt) {
		t.Errorf("fetch error: %v", err)
	}
	rows.Close()
}

// A column dropped from the source table (in sp_cdc_get_captured_columns, not in
// sys.columns: Present false) is still in the change table with the values captured before
// the DROP (docs/reference/sqlserver-cdc.md §6.2): the change read selects it.
func TestReadChangesDroppedColumnReadsChangeTable(t *testing.T) {
	d, s := newScripted(t, Options{SourceTimeZone: "UTC"}, func(q string, _ []any) result {
		switch {
		case q == sqlMaxLSN:
			return one("max_lsn", lsnB.String())
		case strings.HasPrefix(q, "EXEC sys.sp_cdc_get_captured_columns"):
			return result{cols: []string{"source_schema", "source_table", "column_name", "column_id", "ordinal_position", "data_type"},
				rows: [][]driver.Value{{"dbo", "orders", "id", int64(1), int64(1), "int"}, {"dbo", "orders", "note", int64(2), int64(2), "nvarchar"}}}
		case strings.HasPrefix(q, "SELECT c.name"):
			return result{cols: []string{"name", "column_id", "is_computed", "collation_name", "is_nullable"},
				rows: [][]driver.Value{{"id", int64(1), false, nil, false}}}
		case strings.Contains(q, "FROM cdc.[dbo_orders_CT]"):
			ts := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
			return result{cols: []string{"_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts", "id", "note"},
				rows: [][]driver.Value{{lsnA.String(), lsnA.String(), int64(2), int64(1), ts, int64(7), "before drop"}}}
		}
		return result{err: errors.New("unexpected " + q)}
	})
	cols := []source.Column{colI, {Name: "note", DataType: "nvarchar", MaxLength: 40, Present: false, Nullable: true}}
	rows, err := d.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsnA, To: lsnB, Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	got := sourcetest.Drain(ctx, t, rows)
	if len(got) != 1 || got[0]["note"] != "before drop" {
		t.Errorf("rows %v: want the change table's value of the dropped column", got)
	}
	for _, c := range s.log() {
		if strings.Contains(c.query, "FROM cdc.[dbo_orders_CT]") && !strings.Contains(c.query, "c.[note]") {
			t.Errorf("a dropped column must be read from the change table: %s", c.query)
		}
	}
}

// A change read checks max_lsn on its own session before reading: a session on a secondary
// behind the range's end is refused (a *source.ReplicaBehindError inside a
// *source.TransientError) and the read is retried on a new session, which reads the range
// once it is caught up. Without the check the lagging session would return a short range.
func TestReadChangesRefusesLaggingSession(t *testing.T) {
	var maxCalls atomic.Int64
	d, s := newScripted(t, Options{SourceTimeZone: "UTC", Retry: Retry{Retries: 2, Base: 1}}, func(q string, _ []any) result {
		switch {
		case q == sqlMaxLSN:
			if maxCalls.Add(1) == 1 {
				return one("max_lsn", lsnA.String()) // the first session's replica is behind lsnB
			}
			return one("max_lsn", lsnB.String())
		case q == sqlNetworkWait:
			return one("wait_time_ms", int64(0))
		case strings.HasPrefix(q, "EXEC sys.sp_cdc_get_captured_columns"):
			return result{cols: []string{"source_schema", "source_table", "column_name", "column_id", "ordinal_position", "data_type"},
				rows: [][]driver.Value{{"dbo", "orders", "id", int64(1), int64(1), "int"}}}
		case strings.HasPrefix(q, "SELECT c.name"):
			return result{cols: []string{"name", "column_id", "is_computed", "collation_name", "is_nullable"},
				rows: [][]driver.Value{{"id", int64(1), false, nil, false}}}
		case strings.Contains(q, "FROM cdc.[dbo_orders_CT]"):
			return result{cols: []string{"_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts", "id"},
				rows: [][]driver.Value{{lsnA.String(), lsnA.String(), int64(2), int64(1), nil, int64(1)}, {lsnB.String(), lsnB.String(), int64(2), int64(1), nil, int64(2)}}}
		}
		return result{err: errors.New("unexpected " + q)}
	})
	rows, err := d.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsnA, To: lsnB, Columns: []source.Column{colI}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sourcetest.Drain(ctx, t, rows); len(got) != 2 {
		t.Errorf("rows %v, want both commits", got)
	}
	reads := 0
	for _, c := range s.log() {
		if strings.Contains(c.query, "FROM cdc.[dbo_orders_CT]") {
			reads++
		}
	}
	if maxCalls.Load() != 2 || reads != 1 {
		t.Errorf("%d max_lsn checks and %d reads: want the lagging session refused before reading, then one read", maxCalls.Load(), reads)
	}

	// Always behind: the typed error, after the retries.
	maxCalls.Store(-100)
	d2, _ := newScripted(t, Options{SourceTimeZone: "UTC", Retry: Retry{Retries: 1, Base: 1}}, func(q string, _ []any) result {
		if q == sqlMaxLSN {
			return one("max_lsn", lsnA.String())
		}
		if strings.HasPrefix(q, "EXEC sys.sp_cdc_get_captured_columns") {
			return result{cols: []string{"source_schema", "source_table", "column_name", "column_id", "ordinal_position", "data_type"},
				rows: [][]driver.Value{{"dbo", "orders", "id", int64(1), int64(1), "int"}}}
		}
		if strings.HasPrefix(q, "SELECT c.name") {
			return result{cols: []string{"name", "column_id", "is_computed", "collation_name", "is_nullable"}, rows: [][]driver.Value{{"id", int64(1), false, nil, false}}}
		}
		return result{err: errors.New("unexpected " + q)}
	})
	_, err = d2.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsnA, To: lsnB, Columns: []source.Column{colI}})
	var rb *source.ReplicaBehindError
	if !errors.As(err, &rb) || !source.IsTransient(err) || rb.MaxLSN != lsnA || rb.To != lsnB {
		t.Fatalf("err %v: want a transient *source.ReplicaBehindError (max %s, to %s)", err, lsnA, lsnB)
	}
}

// A change table without __$command_id answers the read with error 207 naming the column:
// that is a *source.CommandIDMissingError naming the option; WithoutCommandID reads NULL
// for it and orders by (start_lsn, seqval, operation).
func TestReadChangesWithoutCommandID(t *testing.T) {
	d, s := newScripted(t, Options{SourceTimeZone: "UTC"}, func(q string, _ []any) result {
		switch {
		case q == sqlMaxLSN:
			return one("max_lsn", lsnB.String())
		case q == sqlNetworkWait:
			return one("wait_time_ms", int64(0))
		case strings.HasPrefix(q, "EXEC sys.sp_cdc_get_captured_columns"):
			return result{cols: []string{"source_schema", "source_table", "column_name", "column_id", "ordinal_position", "data_type"},
				rows: [][]driver.Value{{"dbo", "orders", "id", int64(1), int64(1), "int"}}}
		case strings.HasPrefix(q, "SELECT c.name"):
			return result{cols: []string{"name", "column_id", "is_computed", "collation_name", "is_nullable"}, rows: [][]driver.Value{{"id", int64(1), false, nil, false}}}
		case strings.Contains(q, "c.[__$command_id]"):
			return result{err: mssqldrv.Error{Number: 207, Message: "Invalid column name '__$command_id'."}}
		case strings.Contains(q, "FROM cdc.[dbo_orders_CT]"):
			return result{cols: []string{"_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts", "id"},
				rows: [][]driver.Value{{lsnA.String(), lsnA.String(), int64(2), nil, nil, int64(1)}}}
		}
		return result{err: errors.New("unexpected " + q)}
	})
	read := source.ChangeRead{CaptureInstance: "dbo_orders", From: lsnA, To: lsnB, Columns: []source.Column{colI}}
	_, err := d.ReadChanges(ctx, read)
	var cm *source.CommandIDMissingError
	if !errors.As(err, &cm) || cm.CaptureInstance != "dbo_orders" || !strings.Contains(err.Error(), "includeCommandId") {
		t.Fatalf("%v, want *CommandIDMissingError naming includeCommandId", err)
	}
	read.WithoutCommandID = true
	rows, err := d.ReadChanges(ctx, read)
	if err != nil {
		t.Fatal(err)
	}
	if got := sourcetest.Drain(ctx, t, rows); len(got) != 1 || got[0]["_command_id"] != nil {
		t.Fatalf("rows %v", got)
	}
	last := s.log()[len(s.log())-2].query
	if !strings.Contains(last, "ORDER BY c.[__$start_lsn], c.[__$seqval], c.[__$operation]") {
		t.Errorf("order: %s", last)
	}
}

// A table read at a snapshot's stamp (TableRead.AtLeast) checks max_lsn on its own
// session after the prefix and before the SELECT: a session behind the stamp is refused
// and the read retried on a new session; one always behind is a transient
// *source.ReplicaBehindError naming the table, and no SELECT of the table was sent.
func TestReadTableAtStampRefusesLaggingSession(t *testing.T) {
	tbl := source.Table{Schema: "dbo", Name: "orders"}
	var maxCalls atomic.Int64
	d, s := newScripted(t, Options{Retry: Retry{Retries: 2, Base: 1}}, func(q string, _ []any) result {
		switch {
		case q == sqlMaxLSN:
			if maxCalls.Add(1) == 1 {
				return one("max_lsn", lsnA.String())
			}
			return one("max_lsn", lsnB.String())
		case strings.HasPrefix(q, "SELECT t.[id]"):
			return result{cols: []string{"id"}, rows: [][]driver.Value{{int64(1)}, {int64(2)}}}
		}
		return result{}
	})
	rows, err := d.ReadTable(ctx, source.TableRead{Table: tbl, Columns: []source.Column{colI}, AtLeast: lsnB})
	if err != nil {
		t.Fatal(err)
	}
	if got := sourcetest.Drain(ctx, t, rows); len(got) != 2 {
		t.Errorf("rows %v, want 2", got)
	}
	var order []string
	for _, c := range s.log() {
		switch {
		case c.query == sqlMaxLSN:
			order = append(order, "max")
		case strings.HasPrefix(c.query, "SELECT t.[id]"):
			order = append(order, "select")
		}
	}
	if strings.Join(order, ",") != "max,max,select" {
		t.Errorf("statements %v: want the lagging session refused before its SELECT, then one read", order)
	}

	d2, s2 := newScripted(t, Options{Retry: Retry{Retries: 1, Base: 1}}, func(q string, _ []any) result {
		if q == sqlMaxLSN {
			return one("max_lsn", lsnA.String())
		}
		return result{}
	})
	_, err = d2.ReadTable(ctx, source.TableRead{Table: tbl, Columns: []source.Column{colI}, AtLeast: lsnB})
	var rb *source.ReplicaBehindError
	if !errors.As(err, &rb) || !source.IsTransient(err) || rb.MaxLSN != lsnA || rb.To != lsnB || rb.Table != "dbo.orders" {
		t.Fatalf("err %v: want a transient *source.ReplicaBehindError naming the table (max %s, stamp %s)", err, lsnA, lsnB)
	}
	for _, c := range s2.log() {
		if strings.HasPrefix(c.query, "SELECT t.[id]") {
			t.Errorf("the table was read on a session behind the stamp: %q", c.query)
		}
	}
}

// ServerNow is SYSUTCDATETIME() read as UTC: the driver's time, whatever its location,
// keeps its wall clock (datetime2 has no zone; SYSUTCDATETIME is UTC).
func TestServerNowIsUTC(t *testing.T) {
	at := time.Date(2026, 9, 30, 2, 0, 1, 234_567_800, time.FixedZone("driver", 3600))
	d, _ := newScripted(t, Options{SourceTimeZone: "UTC"}, func(q string, _ []any) result {
		if q == sqlServerNow {
			return result{cols: []string{"now"}, rows: [][]driver.Value{{at}}}
		}
		return result{err: errors.New("unexpected " + q)}
	})
	got, err := d.ServerNow(context.Background())
	if want := time.Date(2026, 9, 30, 2, 0, 1, 234_567_800, time.UTC); err != nil || !got.Equal(want) || got.Location() != time.UTC {
		t.Fatalf("ServerNow = %v, %v; want %v", got, err, want)
	}
}
