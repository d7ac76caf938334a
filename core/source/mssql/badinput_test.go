package mssql

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// TestBadInputRefusedBeforeAnyQuery: every Source method given input outside its contract
// returns a *source.InvalidArgumentError (or the bronze type error) without sending a
// statement, and never panics.
func TestBadInputRefusedBeforeAnyQuery(t *testing.T) {
	d, s := newScripted(t, Options{}, func(q string, _ []any) result {
		t.Errorf("statement sent for bad input: %.80s", q)
		return result{}
	})
	st := source.Table{Schema: "dbo", Name: "orders"}
	id := source.Column{Name: "id", DataType: "int", Present: true}
	note := source.Column{Name: "note", DataType: "nvarchar", MaxLength: 20, Collation: "Latin1_General_CI_AS", Present: true}
	keys := []source.Column{id}
	neg := -time.Second
	one := int64(1)
	to := lsn.MustParse("0x10")
	type tc struct {
		name string
		fn   func() error
	}
	var cases []tc
	for _, bad := range []string{"", "a]b", "a\x01b", strings.Repeat("x", 101), "\xff"} {
		q := source.QuoteForMessage(bad)
		cases = append(cases,
			tc{"MinLSN " + q, func() error { _, err := d.MinLSN(ctx, bad); return err }},
			tc{"CapturedColumns " + q, func() error { _, err := d.CapturedColumns(ctx, bad); return err }},
			tc{"DDLHistory " + q, func() error { _, err := d.DDLHistory(ctx, bad, lsn.Zero, to); return err }},
			tc{"ReadChanges " + q, func() error {
				_, err := d.ReadChanges(ctx, source.ChangeRead{CaptureInstance: bad, From: lsn.Zero, To: to})
				return err
			}},
			tc{"SplitChanges " + q, func() error { _, err := d.SplitChanges(ctx, bad, lsn.Zero, to, 2); return err }},
		)
	}
	for _, bad := range []source.Table{{Schema: "dbo", Name: ""}, {Schema: "d]bo", Name: "t"}, {Schema: "dbo", Name: "t\n"}} {
		cases = append(cases,
			tc{"ReadTable table " + bad.Schema + "." + bad.Name, func() error {
				_, err := d.ReadTable(ctx, source.TableRead{Table: bad, Columns: keys})
				return err
			}},
			tc{"SizeEstimate table " + bad.Schema + "." + bad.Name, func() error { _, err := d.SizeEstimate(ctx, bad); return err }},
			tc{"KeyMax table " + bad.Schema + "." + bad.Name, func() error { _, _, err := d.KeyMax(ctx, bad, keys); return err }},
		)
	}
	cases = append(cases,
		tc{"NthCommitAfter n=0", func() error { _, _, err := d.NthCommitAfter(ctx, lsn.Zero, 0); return err }},
		tc{"SplitChanges n=-1", func() error { _, err := d.SplitChanges(ctx, "dbo_orders", lsn.Zero, to, -1); return err }},
		tc{"LSNAtOrBefore zero time", func() error { _, _, err := d.LSNAtOrBefore(ctx, time.Time{}); return err }},
		tc{"ReadTable no columns", func() error { _, err := d.ReadTable(ctx, source.TableRead{Table: st}); return err }},
		tc{"ReadTable column named a]b", func() error {
			_, err := d.ReadTable(ctx, source.TableRead{Table: st, Columns: []source.Column{{Name: "a]b", DataType: "int", Present: true}}})
			return err
		}},
		tc{"ReadTable bound arity", func() error {
			_, err := d.ReadTable(ctx, source.TableRead{Table: st, Columns: keys, Keys: keys, Range: source.KeyRange{Lo: source.Key{int64(1), int64(2)}}})
			return err
		}},
		tc{"ReadTable empty bound", func() error {
			_, err := d.ReadTable(ctx, source.TableRead{Table: st, Columns: keys, Keys: keys, Range: source.KeyRange{Hi: source.Key{}}})
			return err
		}},
		tc{"ReadTable string bound for int", func() error {
			_, err := d.ReadTable(ctx, source.TableRead{Table: st, Columns: keys, Keys: keys, Range: source.KeyRange{Lo: source.Key{struct{}{}}}})
			return err
		}},
		tc{"ReadTable bounds without keys", func() error {
			_, err := d.ReadTable(ctx, source.TableRead{Table: st, Columns: keys, Range: source.KeyRange{Lo: source.Key{int64(1)}}})
			return err
		}},
		tc{"ReadTable bad collation", func() error {
			bad := note
			bad.Collation = "x; DROP TABLE t"
			_, err := d.ReadTable(ctx, source.TableRead{Table: st, Columns: keys, Keys: []source.Column{bad}, Range: source.KeyRange{Lo: source.Key{"a"}}})
			return err
		}},
		tc{"ReadTable negative lock timeout", func() error {
			b := st
			b.LockTimeout = &neg
			_, err := d.ReadTable(ctx, source.TableRead{Table: b, Columns: keys})
			return err
		}},
		tc{"ReadTable negative batch rows", func() error {
			_, err := d.ReadTable(ctx, source.TableRead{Table: st, Columns: keys, ReadOptions: source.ReadOptions{BatchRows: -5}})
			return err
		}},
		tc{"ReadChanges negative batch bytes", func() error {
			_, err := d.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", To: to, ReadOptions: source.ReadOptions{BatchBytes: -1}})
			return err
		}},
		tc{"ReadTable isolation", func() error {
			b := st
			b.Isolation = "read_uncommitted"
			_, err := d.ReadTable(ctx, source.TableRead{Table: b, Columns: keys})
			return err
		}},
		tc{"KeyExtent int bounds on a string key", func() error { _, _, _, err := d.KeyExtent(ctx, st, note, &one, nil); return err }},
		tc{"KeyMax no keys", func() error { _, _, err := d.KeyMax(ctx, st, nil); return err }},
		tc{"KeyBound no keys", func() error { _, _, err := d.KeyBound(ctx, st, nil, source.KeyRange{}, 1); return err }},
		tc{"KeyBound n<0", func() error { _, _, err := d.KeyBound(ctx, st, keys, source.KeyRange{}, -1); return err }},
		tc{"KeyAfter no keys", func() error { _, _, err := d.KeyAfter(ctx, st, nil, source.Key{int64(1)}); return err }},
		tc{"KeyAfter nil key", func() error { _, _, err := d.KeyAfter(ctx, st, keys, nil); return err }},
		tc{"KeyAfter arity", func() error {
			_, _, err := d.KeyAfter(ctx, st, keys, source.Key{int64(1), int64(2), int64(3)})
			return err
		}},
		tc{"KeyTiles n=0", func() error { _, err := d.KeyTiles(ctx, st, keys, 0); return err }},
		tc{"KeyTiles no keys", func() error { _, err := d.KeyTiles(ctx, st, nil, 3); return err }},
		tc{"KeyBuckets width=0", func() error { _, err := d.KeyBuckets(ctx, st, id, 0, nil, nil); return err }},
		tc{"KeyBuckets string key", func() error { _, err := d.KeyBuckets(ctx, st, note, 10, nil, nil); return err }},
	)
	for _, c := range cases {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic: %v", c.name, p)
				}
			}()
			return c.fn()
		}()
		var ia *source.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("%s: got %T %v, want *source.InvalidArgumentError", c.name, err, err)
		}
	}
	if n := len(s.log()); n != 0 {
		t.Errorf("%d statements sent", n)
	}
}

// TestClosedAndCancelled: after Close every method is source.ErrClosed; a cancelled ctx
// is context.Canceled, not a transient error retried.
func TestClosedAndCancelled(t *testing.T) {
	d, _ := newScripted(t, Options{}, func(string, []any) result { return one("m", "0x00000000000000000010") })
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.MaxLSN(cancelled); !errors.Is(err, context.Canceled) || source.IsTransient(err) {
		t.Errorf("cancelled MaxLSN: %T %v", err, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	st := source.Table{Schema: "dbo", Name: "orders"}
	keys := []source.Column{{Name: "id", DataType: "int", Present: true}}
	for name, fn := range map[string]func() error{
		"MaxLSN":           func() error { _, err := d.MaxLSN(ctx); return err },
		"MinLSN":           func() error { _, err := d.MinLSN(ctx, "dbo_orders"); return err },
		"CaptureInstances": func() error { _, err := d.CaptureInstances(ctx); return err },
		"ReadChanges": func() error {
			_, err := d.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", To: lsn.Max})
			return err
		},
		"ReadTable":    func() error { _, err := d.ReadTable(ctx, source.TableRead{Table: st, Columns: keys}); return err },
		"KeyTiles":     func() error { _, err := d.KeyTiles(ctx, st, keys, 2); return err },
		"SizeEstimate": func() error { _, err := d.SizeEstimate(ctx, st); return err },
	} {
		if err := fn(); !errors.Is(err, source.ErrClosed) {
			t.Errorf("%s after Close: %T %v", name, err, err)
		}
	}
}

// TestOptionsBadInput: Open refuses bad options with *source.InvalidArgumentError before
// dialling.
func TestOptionsBadInput(t *testing.T) {
	for name, o := range map[string]Options{
		"empty":        {},
		"dsn and host": {DSN: "sqlserver://h/db", Host: "h"},
		"dsn scheme":   {DSN: "postgres://h/db"},
		"port":         {Host: "h", Database: "d", Port: 70000},
		"encrypt":      {Host: "h", Database: "d", Encrypt: "maybe"},
		"dial timeout": {Host: "h", Database: "d", DialTimeout: -time.Second},
		"batch rows":   {Host: "h", Database: "d", BatchRows: -1},
		"zone":         {Host: "h", Database: "d", SourceTimeZone: "Mars/Olympus;"},
	} {
		_, err := Open(o)
		var ia *source.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("%s: got %T %v", name, err, err)
		}
	}
}

// TestRowsNextAfterClose: Next on closed Rows is source.ErrClosed, not io.EOF (a
// cut-short read must not pass for a whole one); Close twice is fine.
func TestRowsNextAfterClose(t *testing.T) {
	d, _ := newScripted(t, Options{}, func(q string, _ []any) result {
		if strings.HasPrefix(q, "SELECT") {
			return result{cols: []string{"id"}, n: 10, gen: func(i int, dest []driver.Value) { dest[0] = int64(i) }}
		}
		return result{}
	})
	rows, err := d.ReadTable(ctx, source.TableRead{Table: tbl, Columns: []source.Column{colI}, ReadOptions: source.ReadOptions{BatchRows: 2}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rows.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rows.Next(ctx); !errors.Is(err, source.ErrClosed) {
		t.Fatalf("Next after Close: %v, want source.ErrClosed", err)
	}
}
