package workload

import (
	"fmt"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// DefError: a TableDef the generator cannot write (its Kind does not fit its key columns,
// or its key is not the table's unique index), or a table it was not given.
type DefError struct {
	Table  string
	Reason string
}

func (e *DefError) Error() string { return fmt.Sprintf("workload: table %s: %s", e.Table, e.Reason) }

// keyColumns is how many key columns each Kind writes.
var keyColumns = map[KeyKind]int{IntKey: 1, CompositeKey: 2, StringKey: 1, GUIDKey: 1, HeapKey: 0}

// checkDef checks that d's Kind fits its Spec.Key.
func checkDef(d TableDef) error {
	want, ok := keyColumns[d.Kind]
	if !ok {
		return &DefError{Table: d.Spec.Name, Reason: fmt.Sprintf("unknown key kind %d", d.Kind)}
	}
	if len(d.Spec.Key) != want {
		return &DefError{Table: d.Spec.Name, Reason: fmt.Sprintf("key kind %d writes %d key columns, the spec has %d", d.Kind, want, len(d.Spec.Key))}
	}
	return nil
}

// checkDB refuses a generator made on a nil DB.
func (g *Generator) checkDB() error {
	if g.db == nil {
		return &source.InvalidArgumentError{Arg: "db", Reason: "nil cdcsim.DB"}
	}
	return nil
}

// sameKey checks that d's key columns are the table's unique index, in order.
func sameKey(db *cdcsim.DB, d TableDef) error {
	got, err := db.KeyColumns(d.Spec.Name)
	if err != nil {
		return err
	}
	ok := len(got) == len(d.Spec.Key)
	for i := 0; ok && i < len(got); i++ {
		ok = strings.EqualFold(got[i], d.Spec.Key[i])
	}
	if !ok {
		return &DefError{Table: d.Spec.Name, Reason: fmt.Sprintf("the spec's key %v is not the table's unique index %v", d.Spec.Key, got)}
	}
	return nil
}
