package stream

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// placesEnv is env over a table "places" (id, name, a sql_variant and a geography column)
// streamed as the columns option declares, instead of orders. The rebuild keys stay "id".
func placesEnv(t *testing.T, seed uint64, columns []string) *env {
	t.Helper()
	e := newEnv(t, cdcsim.Config{Seed: seed})
	if err := e.db.CreateTable(cdcsim.TableSpec{Name: "places", Key: []string{"id"}, Columns: []source.Column{
		{Name: "id", DataType: "int"},
		{Name: "name", DataType: "nvarchar", MaxLength: 40, Nullable: true},
		{Name: "v", DataType: "sql_variant", Nullable: true},
		{Name: "loc", DataType: "geography", Nullable: true},
		{Name: "visits", DataType: "int", Nullable: true},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.EnableCapture("places", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	e.spec.Source.CaptureInstance = "dbo_places"
	e.spec.Options.Columns = columns
	return e
}

func insertPlace(id int) func(tx *cdcsim.Txn) error {
	return func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("places", cdcsim.Row{"id": id, "name": "p" + string(rune('a'+id)), "v": int64(id),
			"loc": "POINT (1 2)", "visits": id * 10})
		return err
	}
}

// The columns option leaving out a sql_variant and a geography column: a snapshot and the
// stream read the rest (names matched ignoring case), and bronze never gets the left-out
// columns.
func TestColumnsLeaveOutVariantAndGeography(t *testing.T) {
	e := placesEnv(t, 41, []string{"ID", "name", "Visits"})
	e.spec.Bootstrap, e.spec.Options.StartingLsn = true, ""
	for i := 1; i <= 3; i++ {
		e.exec(insertPlace(i))
	}
	if _, err := snapshot.Run(t.Context(), e.standaloneDeps()); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	e.exec(insertPlace(4))
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("places", []any{2}, cdcsim.Row{"visits": 99, "v": "x"}) })
	e.exec(func(tx *cdcsim.Txn) error { return tx.Delete("places", []any{3}) })
	res := e.mustDrain(Options{})
	if res.Rows != 4 { // insert, update (before and after image), delete
		t.Fatalf("the stream read %+v, want 4 change rows", res)
	}
	st, lg := e.bronzeState()
	for _, c := range st.Columns {
		if strings.EqualFold(c, "v") || strings.EqualFold(c, "loc") {
			t.Errorf("bronze has the left-out column %s: %v", c, st.Columns)
		}
	}
	vi, ni := columnIndex(st.Columns, "visits"), columnIndex(st.Columns, "name")
	if vi < 0 || ni < 0 {
		t.Fatalf("bronze columns %v, want name and visits", st.Columns)
	}
	if len(st.Rows) != 3 || st.Rows["1"][vi] != "10" || st.Rows["2"][vi] != "99" || st.Rows["4"][ni] != "pe" || st.Rows["3"] != nil {
		t.Errorf("rebuilt rows %v (columns %v)", st.Rows, st.Columns)
	}
	if lg.Duplicates != 0 || lg.ChangeRows() < 3 {
		t.Errorf("bronze log %+v", lg)
	}
}

// The columns option is checked against the capture instance at the start of each
// invocation: a key column left out, or a declared column no instance captures (and
// bronze lacks), is a ConfigError naming it, before anything is read.
func TestColumnsCheckedAgainstTheInstance(t *testing.T) {
	for _, tc := range []struct {
		columns []string
		want    string
	}{
		{[]string{"name", "visits"}, "leaves out key column id"},
		{[]string{"id", "name", "nosuch"}, "nosuch: no capture instance"},
	} {
		e := placesEnv(t, 42, tc.columns)
		e.exec(insertPlace(1))
		_, err := e.run(Options{})
		var ce *config.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("columns %v: %v, want ConfigError %q", tc.columns, err, tc.want)
		}
		if snap, _ := e.lake.RawTable(e.spec.Bronze).Snapshot(t.Context()); snap != nil && snap.Version() >= 0 {
			t.Errorf("columns %v: bronze was written", tc.columns)
		}
	}
}

// The columns option composes with the computed-column rule (bronze.ReadColumns): a
// computed column is never read, declared or not. Declared, it is a ConfigError saying so
// (CDC stores NULL for it); left undeclared, the declared rest streams and bronze has no
// such column.
func TestColumnsAndComputedColumns(t *testing.T) {
	for _, declared := range [][]string{{"id", "v", "twice"}, {"id", "v"}} {
		e := newEnv(t, cdcsim.Config{Seed: 43})
		if err := e.db.CreateTable(cdcsim.TableSpec{Name: "calc", Key: []string{"id"}, Columns: []source.Column{
			{Name: "id", DataType: "int"},
			{Name: "v", DataType: "int", Nullable: true},
			{Name: "twice", DataType: "int", Nullable: true, Computed: true},
			{Name: "w", DataType: "int", Nullable: true},
		}, Compute: map[string]func(cdcsim.Row) any{"twice": func(r cdcsim.Row) any {
			if v, ok := r["v"].(int64); ok {
				return v * 2
			}
			return nil
		}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.EnableCapture("calc", cdcsim.CaptureOptions{}); err != nil {
			t.Fatal(err)
		}
		e.spec.Source.CaptureInstance = "dbo_calc"
		e.spec.Options.Columns = declared
		e.exec(func(tx *cdcsim.Txn) error {
			_, err := tx.Insert("calc", cdcsim.Row{"id": 1, "v": 5, "w": 7})
			return err
		})
		res, err := e.run(Options{})
		if len(declared) == 3 {
			var ce *config.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "twice is a computed column") {
				t.Errorf("declared %v: %+v, %v; want a ConfigError naming the computed column", declared, res, err)
			}
			continue
		}
		if err != nil || res.Rows != 1 {
			t.Fatalf("declared %v: %+v, %v", declared, res, err)
		}
		st, _ := e.bronzeState()
		if columnIndex(st.Columns, "twice") >= 0 || columnIndex(st.Columns, "w") >= 0 || columnIndex(st.Columns, "v") < 0 {
			t.Errorf("declared %v: bronze columns %v, want v and neither twice nor w", declared, st.Columns)
		}
	}
}
