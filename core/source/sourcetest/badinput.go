package sourcetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// testBadInput: input outside a method's contract is a *source.InvalidArgumentError, the
// same from every implementation, and never a panic: capture instance names that cannot
// be inlined as cdc.[<ci>_CT] (empty, ']', control characters, over 100 characters), n or
// width below 1, a zero time, a bound of the wrong arity or Go type, a read of no columns,
// a negative lock timeout, an isolation level that is not allowed.
func testBadInput(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": 1, "v": 1, "note": "a"})))
	src := env.Source()
	st := source.Table{Schema: "dbo", Name: env.Name(tbl)}
	id := source.Column{Name: "id", DataType: "int", Present: true}
	keys := []source.Column{id}
	to := maxLSN(ctx, t, src)
	neg := -time.Millisecond
	type call struct {
		name string
		fn   func() error
	}
	var calls []call
	for _, bad := range []string{"", "a]b", "a\nb", strings.Repeat("x", source.MaxCaptureInstanceLen+1)} {
		calls = append(calls,
			call{"MinLSN " + source.QuoteForMessage(bad), func() error { _, err := src.MinLSN(ctx, bad); return err }},
			call{"CapturedColumns " + source.QuoteForMessage(bad), func() error { _, err := src.CapturedColumns(ctx, bad); return err }},
			call{"DDLHistory " + source.QuoteForMessage(bad), func() error { _, err := src.DDLHistory(ctx, bad, lsn.Zero, to); return err }},
			call{"ReadChanges " + source.QuoteForMessage(bad), func() error {
				_, err := src.ReadChanges(ctx, source.ChangeRead{CaptureInstance: bad, From: lsn.Zero, To: to})
				return err
			}},
			call{"SplitChanges " + source.QuoteForMessage(bad), func() error { _, err := src.SplitChanges(ctx, bad, lsn.Zero, to, 2); return err }},
		)
	}
	calls = append(calls,
		call{"NthCommitAfter n=0", func() error { _, _, err := src.NthCommitAfter(ctx, lsn.Zero, 0); return err }},
		call{"SplitChanges n=0", func() error { _, err := src.SplitChanges(ctx, ci, lsn.Zero, to, 0); return err }},
		call{"LSNAtOrBefore zero time", func() error { _, _, err := src.LSNAtOrBefore(ctx, time.Time{}); return err }},
		call{"KeyTiles n=0", func() error { _, err := src.KeyTiles(ctx, st, keys, 0); return err }},
		call{"KeyTiles no keys", func() error { _, err := src.KeyTiles(ctx, st, nil, 2); return err }},
		call{"KeyMax no keys", func() error { _, _, err := src.KeyMax(ctx, st, nil); return err }},
		call{"KeyBound n<0", func() error { _, _, err := src.KeyBound(ctx, st, keys, source.KeyRange{}, -1); return err }},
		call{"KeyBuckets width=0", func() error { _, err := src.KeyBuckets(ctx, st, id, 0, nil, nil); return err }},
		call{"KeyBuckets string key", func() error {
			_, err := src.KeyBuckets(ctx, st, source.Column{Name: "note", DataType: "nvarchar", MaxLength: 40, Present: true}, 10, nil, nil)
			return err
		}},
		call{"ReadTable no columns", func() error { _, err := src.ReadTable(ctx, source.TableRead{Table: st}); return err }},
		call{"ReadTable bound arity", func() error {
			_, err := src.ReadTable(ctx, source.TableRead{Table: st, Columns: keys, Keys: keys, Range: source.KeyRange{Lo: source.Key{int64(1), int64(2)}}})
			return err
		}},
		call{"ReadTable bound type", func() error {
			_, err := src.ReadTable(ctx, source.TableRead{Table: st, Columns: keys, Keys: keys, Range: source.KeyRange{Lo: source.Key{struct{}{}}}})
			return err
		}},
		call{"ReadTable bounds without keys", func() error {
			_, err := src.ReadTable(ctx, source.TableRead{Table: st, Columns: keys, Range: source.KeyRange{Hi: source.Key{int64(1)}}})
			return err
		}},
		call{"ReadTable negative lock timeout", func() error {
			bad := st
			bad.LockTimeout = &neg
			_, err := src.ReadTable(ctx, source.TableRead{Table: bad, Columns: keys})
			return err
		}},
		call{"ReadTable negative batch rows", func() error {
			_, err := src.ReadTable(ctx, source.TableRead{Table: st, Columns: keys, ReadOptions: source.ReadOptions{BatchRows: -1}})
			return err
		}},
		call{"ReadChanges negative batch bytes", func() error {
			_, err := src.ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: lsn.Zero, To: to, ReadOptions: source.ReadOptions{BatchBytes: -1}})
			return err
		}},
		call{"ReadTable isolation", func() error {
			bad := st
			bad.Isolation = "read_uncommitted"
			_, err := src.ReadTable(ctx, source.TableRead{Table: bad, Columns: keys})
			return err
		}},
	)
	for _, c := range calls {
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
}

// testRowsAfterClose: Next on Rows closed mid-read, or closed twice, is source.ErrClosed,
// never io.EOF (which would make a caller take a cut-short read for a whole one).
func testRowsAfterClose(ctx context.Context, t *testing.T, env Env) {
	tbl, ci := ordersTable(ctx, t, env)
	for i := 1; i <= 3; i++ {
		must(t, env.Exec(ctx, Insert(tbl, map[string]any{"id": i, "v": i, "note": "a"})))
	}
	src := env.Source()
	cols, err := src.CapturedColumns(ctx, ci)
	must(t, err)
	to := maxLSN(ctx, t, src)
	opt := source.ReadOptions{BatchRows: 1}
	ch, err := src.ReadChanges(ctx, source.ChangeRead{CaptureInstance: ci, From: lsn.Zero, To: to, Columns: cols, ReadOptions: opt})
	must(t, err)
	tr, err := src.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: env.Name(tbl)}, Columns: cols, ReadOptions: opt})
	must(t, err)
	for name, rows := range map[string]source.Rows{"ReadChanges": ch, "ReadTable": tr} {
		rec, err := rows.Next(ctx)
		must(t, err)
		rec.Release()
		must(t, rows.Close())
		if err := rows.Close(); err != nil {
			t.Errorf("%s: second Close: %v", name, err)
		}
		if rec, err := rows.Next(ctx); !errors.Is(err, source.ErrClosed) {
			if rec != nil {
				rec.Release()
			}
			t.Errorf("%s: Next after Close: %v, want source.ErrClosed", name, err)
		}
	}
}
