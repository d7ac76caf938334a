package cdcsim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// call runs fn and turns a panic into a test failure naming the case.
func call(t *testing.T, name string, fn func() error) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s: panic: %v", name, p)
			err = nil
		}
	}()
	return fn()
}

// isInvalid, isNotFound, ... match the typed error a bad input must return.
func isInvalid(err error) bool {
	var e *source.InvalidArgumentError
	return errors.As(err, &e)
}

func isNotFound(err error) bool {
	var e *source.CaptureInstanceNotFoundError
	return errors.As(err, &e)
}

func isTableErr(err error) bool {
	var e *TableError
	return errors.As(err, &e)
}

func isTxnErr(err error) bool {
	var e *TxnError
	return errors.As(err, &e)
}

func isValueErr(err error) bool {
	var e *ValueError
	return errors.As(err, &e)
}

func isCaptureErr(err error) bool {
	var e *CaptureError
	return errors.As(err, &e)
}

func isUnsupported(err error) bool {
	var e *bronze.UnsupportedTypeError
	return errors.As(err, &e)
}

func isCollision(err error) bool {
	var e *bronze.ColumnCollisionError
	return errors.As(err, &e)
}

func isClosed(err error) bool    { return errors.Is(err, source.ErrClosed) }
func isCancelled(err error) bool { return errors.Is(err, context.Canceled) }

// TestSourceBadInputIsTypedError calls every source.Source method of the simulator with
// input outside its contract and wants the documented typed error, never a panic.
func TestSourceBadInputIsTypedError(t *testing.T) {
	ctx := context.Background()
	db := ordersDB(t, Config{Seed: 1})
	insert(t, db, 1, 2, 3)
	orders := source.Table{Name: "orders"}
	id := source.Column{Name: "id", DataType: "int", Present: true}
	note := source.Column{Name: "note", DataType: "nvarchar", MaxLength: 50, Present: true}
	ghost := source.Column{Name: "ghost", DataType: "int", Present: true}
	one, minus := int64(1), int64(-1)
	_ = minus
	cases := []struct {
		name string
		want func(error) bool
		fn   func() error
	}{
		{"MinLSN unknown instance", isNotFound, func() error { _, err := db.MinLSN(ctx, "nope"); return err }},
		{"MinLSN empty name", isInvalid, func() error { _, err := db.MinLSN(ctx, ""); return err }},
		{"MinLSN name with ]", isInvalid, func() error { _, err := db.MinLSN(ctx, "dbo_orders]"); return err }},
		{"CapturedColumns name with control char", isInvalid, func() error { _, err := db.CapturedColumns(ctx, "a\x00"); return err }},
		{"ReadChanges name over 100 chars", isInvalid, func() error {
			_, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: strings.Repeat("x", 101)})
			return err
		}},
		{"LSNAtOrBefore zero time", isInvalid, func() error { _, _, err := db.LSNAtOrBefore(ctx, time.Time{}); return err }},
		{"ReadTable no columns", isInvalid, func() error { _, err := db.ReadTable(ctx, source.TableRead{Table: orders}); return err }},
		{"ReadTable negative lock timeout", isInvalid, func() error {
			neg := -time.Second
			_, err := db.ReadTable(ctx, source.TableRead{Table: source.Table{Name: "orders", LockTimeout: &neg}, Columns: []source.Column{id}})
			return err
		}},
		{"NthCommitAfter n=0", isInvalid, func() error { _, _, err := db.NthCommitAfter(ctx, lsn.Zero, 0); return err }},
		{"NthCommitAfter n<0", isInvalid, func() error { _, _, err := db.NthCommitAfter(ctx, lsn.Zero, -5); return err }},
		{"CapturedColumns unknown", isNotFound, func() error { _, err := db.CapturedColumns(ctx, "nope"); return err }},
		{"DDLHistory unknown", isNotFound, func() error { _, err := db.DDLHistory(ctx, "nope", lsn.Zero, lsn.Zero); return err }},
		{"ReadChanges unknown", isNotFound, func() error {
			_, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "nope"})
			return err
		}},
		{"ReadChanges unmappable column", isUnsupported, func() error {
			_, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", Columns: []source.Column{{Name: "g", DataType: "vector"}}})
			return err
		}},
		{"ReadChanges metadata-name column", isCollision, func() error {
			_, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", Columns: []source.Column{{Name: "_operation", DataType: "int"}}})
			return err
		}},
		{"SplitChanges n=0", isInvalid, func() error { _, err := db.SplitChanges(ctx, "dbo_orders", lsn.Zero, db.Idle(), 0); return err }},
		{"SplitChanges n<0", isInvalid, func() error { _, err := db.SplitChanges(ctx, "dbo_orders", lsn.Zero, db.Idle(), -1); return err }},
		{"SplitChanges unknown", isNotFound, func() error { _, err := db.SplitChanges(ctx, "nope", lsn.Zero, db.Idle(), 2); return err }},
		{"ReadTable unknown table", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: source.Table{Name: "nope"}, Columns: []source.Column{id}})
			return err
		}},
		{"ReadTable empty table name", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Columns: []source.Column{id}})
			return err
		}},
		{"ReadTable unknown column", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: []source.Column{ghost}})
			return err
		}},
		{"ReadTable unknown key column", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: []source.Column{id}, Keys: []source.Column{ghost}})
			return err
		}},
		{"ReadTable bound arity", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: []source.Column{id}, Keys: []source.Column{id}, Range: source.KeyRange{Lo: source.Key{1, 2}}})
			return err
		}},
		{"ReadTable empty bound", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: []source.Column{id}, Keys: []source.Column{id}, Range: source.KeyRange{Hi: source.Key{}}})
			return err
		}},
		{"ReadTable string for int", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: []source.Column{id}, Keys: []source.Column{id}, Range: source.KeyRange{Lo: source.Key{"abc"}}})
			return err
		}},
		{"ReadTable bool for int", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: []source.Column{id}, Keys: []source.Column{id}, Range: source.KeyRange{Lo: source.Key{true}}})
			return err
		}},
		{"ReadTable int out of range", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: []source.Column{id}, Keys: []source.Column{id}, Range: source.KeyRange{Hi: source.Key{int64(1) << 40}}})
			return err
		}},
		{"ReadTable struct for string", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: []source.Column{id}, Keys: []source.Column{note}, Range: source.KeyRange{Hi: source.Key{struct{}{}}}})
			return err
		}},
		{"ReadTable bounds without keys", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: []source.Column{id}, Range: source.KeyRange{Lo: source.Key{1}}})
			return err
		}},
		{"ReadTable bad isolation", isInvalid, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: source.Table{Name: "orders", Isolation: "read_uncommitted"}, Columns: []source.Column{id}})
			return err
		}},
		{"ReadTable unmappable column", isUnsupported, func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: []source.Column{{Name: "id", DataType: "vector", Present: true}}})
			return err
		}},
		{"KeyExtent unknown column", isInvalid, func() error { _, _, _, err := db.KeyExtent(ctx, orders, ghost, nil, nil); return err }},
		{"KeyExtent int bounds on string", isInvalid, func() error { _, _, _, err := db.KeyExtent(ctx, orders, note, &one, nil); return err }},
		{"KeyMax no keys", isInvalid, func() error { _, _, err := db.KeyMax(ctx, orders, nil); return err }},
		{"KeyMax unknown table", isInvalid, func() error { _, _, err := db.KeyMax(ctx, source.Table{Name: "nope"}, []source.Column{id}); return err }},
		{"KeyBound n<0", isInvalid, func() error {
			_, _, err := db.KeyBound(ctx, orders, []source.Column{id}, source.KeyRange{}, -1)
			return err
		}},
		{"KeyBound no keys", isInvalid, func() error { _, _, err := db.KeyBound(ctx, orders, nil, source.KeyRange{}, 1); return err }},
		{"KeyBound no keys with bound", isInvalid, func() error {
			_, _, err := db.KeyBound(ctx, orders, nil, source.KeyRange{Lo: source.Key{1}}, 1)
			return err
		}},
		{"KeyBound bound arity", isInvalid, func() error {
			_, _, err := db.KeyBound(ctx, orders, []source.Column{id}, source.KeyRange{Lo: source.Key{1, "x"}}, 1)
			return err
		}},
		{"KeyBound string for int", isInvalid, func() error {
			_, _, err := db.KeyBound(ctx, orders, []source.Column{id}, source.KeyRange{Lo: source.Key{"x"}}, 1)
			return err
		}},
		{"KeyTiles n=0", isInvalid, func() error { _, err := db.KeyTiles(ctx, orders, []source.Column{id}, 0); return err }},
		{"KeyTiles no keys", isInvalid, func() error { _, err := db.KeyTiles(ctx, orders, nil, 3); return err }},
		{"KeyBuckets width=0", isInvalid, func() error { _, err := db.KeyBuckets(ctx, orders, id, 0, nil, nil); return err }},
		{"KeyBuckets width<0", isInvalid, func() error { _, err := db.KeyBuckets(ctx, orders, id, -3, nil, nil); return err }},
		{"KeyBuckets string key", isInvalid, func() error { _, err := db.KeyBuckets(ctx, orders, note, 10, nil, nil); return err }},
		{"KeyBuckets unknown column", isInvalid, func() error { _, err := db.KeyBuckets(ctx, orders, ghost, 10, nil, nil); return err }},
		{"SizeEstimate unknown table", isInvalid, func() error { _, err := db.SizeEstimate(ctx, source.Table{Name: "nope"}); return err }},
	}
	for _, c := range cases {
		err := call(t, c.name, c.fn)
		if !c.want(err) {
			t.Errorf("%s: got %T %v, want the typed error", c.name, err, err)
		}
	}
}

// TestSourceCancelledAndClosed: a cancelled ctx fails every method with ctx's error, and a
// closed DB with source.ErrClosed.
func TestSourceCancelledAndClosed(t *testing.T) {
	db := ordersDB(t, Config{Seed: 1})
	insert(t, db, 1, 2)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		want func(error) bool
	}{{cancelled, isCancelled}, {context.Background(), isClosed}} {
		if c.ctx == context.Background() {
			mustT(t, db.Close())
		}
		for name, fn := range everyMethod(c.ctx, db) {
			if err := call(t, name, fn); !c.want(err) {
				t.Errorf("%s: got %T %v", name, err, err)
			}
		}
	}
}

func everyMethod(ctx context.Context, db *DB) map[string]func() error {
	orders := source.Table{Name: "orders"}
	id := source.Column{Name: "id", DataType: "int", Present: true}
	keys := []source.Column{id}
	return map[string]func() error{
		"MaxLSN":           func() error { _, err := db.MaxLSN(ctx); return err },
		"MinLSN":           func() error { _, err := db.MinLSN(ctx, "dbo_orders"); return err },
		"CommitTime":       func() error { _, _, err := db.CommitTime(ctx, db.Idle()); return err },
		"CommitAtOrBefore": func() error { _, _, err := db.CommitAtOrBefore(ctx, db.Idle()); return err },
		"LSNAtOrBefore":    func() error { _, _, err := db.LSNAtOrBefore(ctx, time.Now()); return err },
		"NthCommitAfter":   func() error { _, _, err := db.NthCommitAfter(ctx, lsn.Zero, 1); return err },
		"CaptureInstances": func() error { _, err := db.CaptureInstances(ctx); return err },
		"CapturedColumns":  func() error { _, err := db.CapturedColumns(ctx, "dbo_orders"); return err },
		"DDLHistory":       func() error { _, err := db.DDLHistory(ctx, "dbo_orders", lsn.Zero, db.Idle()); return err },
		"ReadChanges": func() error {
			_, err := db.ReadChanges(ctx, source.ChangeRead{CaptureInstance: "dbo_orders", From: lsn.Zero, To: db.Idle()})
			return err
		},
		"SplitChanges": func() error { _, err := db.SplitChanges(ctx, "dbo_orders", lsn.Zero, db.Idle(), 2); return err },
		"ReadTable": func() error {
			_, err := db.ReadTable(ctx, source.TableRead{Table: orders, Columns: keys})
			return err
		},
		"KeyExtent":    func() error { _, _, _, err := db.KeyExtent(ctx, orders, id, nil, nil); return err },
		"KeyMax":       func() error { _, _, err := db.KeyMax(ctx, orders, keys); return err },
		"KeyBound":     func() error { _, _, err := db.KeyBound(ctx, orders, keys, source.KeyRange{}, 1); return err },
		"KeyTiles":     func() error { _, err := db.KeyTiles(ctx, orders, keys, 2); return err },
		"KeyBuckets":   func() error { _, err := db.KeyBuckets(ctx, orders, id, 10, nil, nil); return err },
		"SizeEstimate": func() error { _, err := db.SizeEstimate(ctx, orders); return err },
	}
}

var _ = fmt.Sprint
