package workload

import (
	"errors"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// TestBadInputIsTypedError: a definition whose Kind does not fit its key, a key that is
// not the table's, an unknown table, negative counts and a nil DB are typed errors, never
// a panic (an IntKey definition of a heap used to index Spec.Key[0] and crash).
func TestBadInputIsTypedError(t *testing.T) {
	isDef := func(err error) bool { var e *DefError; return errors.As(err, &e) }
	isInvalid := func(err error) bool { var e *source.InvalidArgumentError; return errors.As(err, &e) }
	heap := Events()
	heap.Kind = IntKey
	short := OrderLines()
	short.Spec.Key = short.Spec.Key[:1]
	odd := Orders()
	odd.Kind = KeyKind(42)
	fresh := func() (*cdcsim.DB, *Generator) {
		db := cdcsim.New(cdcsim.Config{Seed: 1})
		return db, New(db, Config{Seed: 1})
	}
	cases := []struct {
		name string
		want func(error) bool
		fn   func() error
	}{
		{"Create IntKey heap", isDef, func() error { _, g := fresh(); return g.Create(heap) }},
		{"Create composite with one key column", isDef, func() error { _, g := fresh(); return g.Create(short) }},
		{"Create unknown kind", isDef, func() error { _, g := fresh(); return g.Create(odd) }},
		{"Adopt IntKey def of a heap", isDef, func() error {
			db, g := fresh()
			if err := db.CreateTable(Events().Spec); err != nil {
				return err
			}
			return g.Adopt(heap)
		}},
		{"Adopt def whose key is not the table's", isDef, func() error {
			db, g := fresh()
			if err := db.CreateTable(Orders().Spec); err != nil {
				return err
			}
			d := Orders()
			d.Spec.Key = []string{"customer"}
			return g.Adopt(d)
		}},
		{"Adopt unknown table", func(err error) bool { var e *cdcsim.TableError; return errors.As(err, &e) }, func() error { _, g := fresh(); return g.Adopt(Orders()) }},
		{"Load unknown table", isDef, func() error { _, g := fresh(); return g.Load("nope", 1, 1) }},
		{"Load negative n", isInvalid, func() error {
			_, g := fresh()
			if err := g.Create(Orders()); err != nil {
				return err
			}
			return g.Load("orders", -1, 1)
		}},
		{"Step no tables", isDef, func() error { _, g := fresh(); return g.Step(1) }},
		{"Step negative n", isInvalid, func() error {
			_, g := fresh()
			if err := g.Create(Orders()); err != nil {
				return err
			}
			return g.Step(-1)
		}},
		{"nil DB Create", isInvalid, func() error { return New(nil, Config{}).Create(Orders()) }},
		{"nil DB Step", isInvalid, func() error { return New(nil, Config{}).Step(1) }},
		{"nil DB Load", isInvalid, func() error { return New(nil, Config{}).Load("orders", 1, 1) }},
	}
	for _, c := range cases {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic: %v", c.name, p)
				}
			}()
			return c.fn()
		}()
		if !c.want(err) {
			t.Errorf("%s: got %T %v, want the typed error", c.name, err, err)
		}
	}
}
