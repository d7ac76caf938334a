package mssql

import (
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

func TestNetworkWaitStatement(t *testing.T) {
	for _, want := range []string{"sys.dm_exec_session_wait_stats", "session_id = @@SPID",
		"wait_type = N'ASYNC_NETWORK_IO'", "ISNULL(SUM(wait_time_ms), 0)"} {
		if !strings.Contains(sqlNetworkWait, want) {
			t.Errorf("network wait statement lacks %q: %s", want, sqlNetworkWait)
		}
	}
	if sqlPing != "SELECT 1" {
		t.Errorf("ping %q", sqlPing)
	}
}

func TestPingOneRoundTrip(t *testing.T) {
	d, s := newScripted(t, Options{}, func(q string, _ []any) result {
		if q == sqlPing {
			return one("", int64(1))
		}
		return result{err: errors.New("unexpected " + q)}
	})
	rtt, err := d.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rtt <= 0 {
		t.Errorf("rtt %v, want positive", rtt)
	}
	if log := s.log(); len(log) != 1 || log[0].query != sqlPing {
		t.Errorf("statements %v", log)
	}
	d.Close()
	if _, err := d.Ping(ctx); !errors.Is(err, source.ErrClosed) {
		t.Errorf("ping after close: %v", err)
	}
}

// changeScript answers a one-column change read of three rows; waits are the successive
// answers of the network wait statement (nil: it fails).
func changeScript(waits ...any) func(q string, _ []any) result {
	var n atomic.Int64
	return func(q string, _ []any) result {
		switch {
		case q == sqlMaxLSN:
			return one("max_lsn", lsnB.String())
		case q == sqlNetworkWait:
			i := n.Add(1) - 1
			if int(i) >= len(waits) || waits[i] == nil {
				return result{err: errors.New("VIEW SERVER STATE permission was denied")}
			}
			return one("wait_time_ms", waits[i])
		case strings.HasPrefix(q, "EXEC sys.sp_cdc_get_captured_columns"):
			return result{cols: []string{"source_schema", "source_table", "column_name", "column_id", "ordinal_position", "data_type"},
				rows: [][]driver.Value{{"dbo", "orders", "id", int64(1), int64(1), "int"}}}
		case strings.HasPrefix(q, "SELECT c.name"):
			return result{cols: []string{"name", "column_id", "is_computed", "collation_name", "is_nullable"},
				rows: [][]driver.Value{{"id", int64(1), false, nil, false}}}
		case strings.Contains(q, "FROM cdc.[dbo_orders_CT]"):
			ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			r := result{cols: []string{"_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts", "id"}}
			for i := int64(1); i <= 3; i++ {
				r.rows = append(r.rows, []driver.Value{lsnA.String(), lsnA.String(), int64(2), int64(1), ts, i})
			}
			return r
		}
		return result{err: errors.New("unexpected " + q)}
	}
}

func readChanges(t *testing.T, d *DB, batchRows int) source.Rows {
	t.Helper()
	rows, err := d.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsnA, To: lsnB,
		Columns: []source.Column{colI}, ReadOptions: source.ReadOptions{BatchRows: batchRows}})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func networkWait(t *testing.T, rows source.Rows) (time.Duration, bool) {
	t.Helper()
	w, ok := rows.(source.NetworkWaiter)
	if !ok {
		t.Fatalf("%T does not implement source.NetworkWaiter", rows)
	}
	return w.NetworkWait()
}

// The wait is read on the read's own session just before the read and right after the
// last row, before the connection goes back to the pool; the growth is reported in ms.
func TestReadChangesNetworkWaitSameSession(t *testing.T) {
	d, s := newScripted(t, Options{SourceTimeZone: "UTC"}, changeScript(int64(100), int64(340)))
	rows := readChanges(t, d, 2)
	rec, err := rows.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if _, ok := networkWait(t, rows); ok {
		t.Error("wait reported before the read ended")
	}
	for {
		rec, err := rows.Next(ctx)
		if err != nil {
			break
		}
		rec.Release()
	}
	w, ok := networkWait(t, rows)
	if !ok || w != 240*time.Millisecond {
		t.Errorf("wait %v %v, want 240ms true", w, ok)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	var seq []string
	var conns []int64
	for _, c := range s.log() {
		switch {
		case c.query == sqlMaxLSN:
			seq, conns = append(seq, "max"), append(conns, c.conn)
		case c.query == sqlNetworkWait:
			seq, conns = append(seq, "wait"), append(conns, c.conn)
		case strings.Contains(c.query, "FROM cdc.[dbo_orders_CT]"):
			seq, conns = append(seq, "read"), append(conns, c.conn)
		}
	}
	if strings.Join(seq, ",") != "max,wait,read,wait" {
		t.Fatalf("statements %v, want max,wait,read,wait", seq)
	}
	if conns[0] != conns[1] || conns[1] != conns[2] || conns[2] != conns[3] {
		t.Errorf("max_lsn check, wait and read on different sessions: %v", conns)
	}
	if w2, ok := networkWait(t, rows); !ok || w2 != w {
		t.Errorf("wait after close %v %v", w2, ok)
	}
}

// An early Close still measures; a counter that went backwards counts 0; a failed reading
// leaves the wait unknown without failing the read.
func TestReadChangesNetworkWaitCases(t *testing.T) {
	for _, c := range []struct {
		name  string
		waits []any
		early bool
		want  time.Duration
		ok    bool
	}{
		{"early close", []any{int64(5), int64(12)}, true, 7 * time.Millisecond, true},
		{"no growth", []any{int64(9), int64(9)}, false, 0, true},
		{"counter reset", []any{int64(50), int64(0)}, false, 0, true},
		{"before fails", []any{nil, int64(10)}, false, 0, false},
		{"after fails", []any{int64(10), nil}, false, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, _ := newScripted(t, Options{SourceTimeZone: "UTC"}, changeScript(c.waits...))
			rows := readChanges(t, d, 1)
			n := 0
			for {
				if c.early && n == 1 {
					break
				}
				rec, err := rows.Next(ctx)
				if err != nil {
					break
				}
				n += int(rec.NumRows())
				rec.Release()
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if !c.early && n != 3 {
				t.Errorf("read %d rows, want 3 (a wait reading must not fail the read)", n)
			}
			w, ok := networkWait(t, rows)
			if w != c.want || ok != c.ok {
				t.Errorf("wait %v %v, want %v %v", w, ok, c.want, c.ok)
			}
		})
	}
}
