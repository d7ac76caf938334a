package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// setBronzeProperty sets a table property on bronze (as ALTER TABLE ... SET TBLPROPERTIES
// would).
func (e *env) setBronzeProperty(key, value string) {
	e.t.Helper()
	tbl := e.lake.RawTable(e.spec.Bronze)
	snap, err := tbl.Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	tx := tbl.Begin(snap)
	tx.SetProperties(map[string]string{key: value})
	if _, err := tx.Commit(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

// bronzeColumnType is bronze's Delta type of column name ("" when absent).
func (e *env) bronzeColumnType(name string) string {
	e.t.Helper()
	f, ok := e.bronzeField(name)
	if !ok {
		return ""
	}
	return strings.Trim(string(mustJSON(e.t, f.Type)), `"`)
}

func (e *env) bronzeField(name string) (deltalog.StructField, bool) {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := snap.Schema()
	if err != nil {
		e.t.Fatal(err)
	}
	return st.Field(name)
}

// mustJSON is a Delta type's JSON form.
func mustJSON(t *testing.T, typ deltalog.DataType) []byte {
	t.Helper()
	b, err := (&deltalog.StructType{Fields: []deltalog.StructField{{Name: "x", Type: typ}}}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimPrefix(string(b), `{"type":"struct","fields":[{"name":"x","type":`)
	return []byte(s[:strings.Index(s, `,"nullable"`)])
}

// widenEnv is a table with a column of every type SQL Server widens and Delta's
// typeWidening allows (docs/stream.md "Schema changes"), rows 1 and 2 streamed.
func widenEnv(t *testing.T, seed uint64) *env {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: seed})
	cols := []source.Column{
		{Name: "id", DataType: "int"},
		{Name: "qty", DataType: "int", Nullable: true},
		{Name: "small", DataType: "smallint", Nullable: true},
		{Name: "amount", DataType: "decimal", Precision: 9, Scale: 2, Nullable: true},
		{Name: "ratio", DataType: "real", Nullable: true},
		{Name: "day", DataType: "date", Nullable: true},
	}
	if err := db.CreateTable(cdcsim.TableSpec{Name: "orders", Columns: cols, Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("orders", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, testlake.Local)
	spec := &config.Spec{AppID: "orders-widen", Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_orders"}}
	lake.Use(spec)
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, spec: spec, lake: lake}
	for _, r := range []cdcsim.Row{
		{"id": 1, "qty": 2147483647, "small": 7, "amount": "1234567.89", "ratio": 1.5, "day": "2024-03-01"},
		{"id": 2, "qty": -1, "small": nil, "amount": "-0.01", "ratio": nil, "day": nil},
	} {
		e.exec(func(tx *cdcsim.Txn) error { _, err := tx.Insert("orders", r); return err })
	}
	e.mustDrain(Options{})
	return e
}

// widenAll widens every non-key column on the source: int → bigint, smallint → int,
// decimal(9,2) → decimal(12,4), real → float, date → datetime2, then writes row 3 with
// values only the wider types hold and updates row 1.
func (e *env) widenAll() {
	e.t.Helper()
	for _, c := range []source.Column{
		{Name: "qty", DataType: "bigint", Nullable: true},
		{Name: "small", DataType: "int", Nullable: true},
		{Name: "amount", DataType: "decimal", Precision: 12, Scale: 4, Nullable: true},
		{Name: "ratio", DataType: "float", Nullable: true},
		{Name: "day", DataType: "datetime2", DatetimePrecision: 7, Nullable: true},
	} {
		if _, err := e.db.AlterColumn("orders", c); err != nil {
			e.t.Fatalf("alter %s: %v", c.Name, err)
		}
	}
	e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 3, "qty": int64(1) << 40, "small": 100000, "amount": "12345678.1234",
			"ratio": 1e300, "day": "2024-03-02T10:11:12.5"})
		return err
	})
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{1}, cdcsim.Row{"ratio": 2.25}) })
}

// Widening ALTER COLUMNs on a bronze table with delta.enableTypeWidening: the batch that
// reads them widens bronze's columns in its commit (a metaData with the new types, each
// change in the column's delta.typeChanges, typeWidening in the protocol), with a warning
// in its facts row, and goes on; bronze rebuilds to the table, rows written before the
// widening read in the wider types.
func TestStreamWidensBronzeWithTheProperty(t *testing.T) {
	e := widenEnv(t, 51)
	e.setBronzeProperty(deltalog.PropEnableTypeWidening, "true")
	e.widenAll()
	e.mustDrain(Options{})
	e.assertConverged()
	for col, want := range map[string]string{"qty": "long", "small": "integer", "amount": "decimal(12,4)", "ratio": "double", "day": "timestamp_ntz"} {
		if got := e.bronzeColumnType(col); got != want {
			t.Errorf("bronze %s is %s, want %s", col, got, want)
		}
		f, _ := e.bronzeField(col)
		changes, err := f.TypeChanges()
		if err != nil || len(changes) != 1 || changes[0].ToType != want {
			t.Errorf("bronze %s: delta.typeChanges %+v, %v; want one change to %s", col, changes, err, want)
		}
	}
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := snap.Protocol(); !p.HasReaderFeature(deltalog.FeatureTypeWidening) || !p.HasWriterFeature(deltalog.FeatureTypeWidening) {
		t.Errorf("bronze protocol %+v lacks typeWidening", p)
	}
	warned := false
	for _, r := range e.factsRows() {
		warned = warned || (r.Event == "" && strings.Contains(r.Detail, "bronze column qty widened from int32 to int64"))
	}
	if !warned {
		t.Errorf("no facts row warns of the widening")
	}
	st, _ := e.bronzeState()
	if i := columnIndex(st.Columns, "qty"); i < 0 || st.Rows["1"][i] != "2147483647" || st.Rows["3"][i] != "1099511627776" {
		t.Errorf("rebuilt qty: %v %v", st.Columns, st.Rows)
	}
}

// Without the property the same ALTER COLUMNs stop the stream at planning with the advice
// to set it, and nothing of the batch is read; a change Delta does not allow (smallint →
// decimal(6,1): 5 integer digits, Delta wants 10) stops it even with the property,
// advising a new bronze table.
func TestStreamRefusesAWideningBronzeCannotTake(t *testing.T) {
	e := widenEnv(t, 52)
	e.widenAll()
	before := e.bronzeVersion()
	_, err := e.run(Options{})
	var sc *SchemaChangedError
	if !errors.As(err, &sc) || sc.Kind != SchemaTypeChanged || !sc.Widenable || sc.WideningEnabled ||
		!strings.Contains(err.Error(), "delta.enableTypeWidening = 'true'") {
		t.Fatalf("widening without the property: %v, want SchemaChangedError advising the property", err)
	}
	if v := e.bronzeVersion(); v != before {
		t.Errorf("the refused batch wrote bronze (version %d, was %d)", v, before)
	}

	e = widenEnv(t, 53)
	e.setBronzeProperty(deltalog.PropEnableTypeWidening, "true")
	if _, err := e.db.AlterColumn("orders", source.Column{Name: "small", DataType: "decimal", Precision: 6, Scale: 1, Nullable: true}); err != nil {
		t.Fatal(err)
	}
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{2}, cdcsim.Row{"small": "5.5"}) })
	_, err = e.run(Options{})
	if !errors.As(err, &sc) || sc.Widenable || sc.Column != "small" || !strings.Contains(err.Error(), "new bronze table") {
		t.Fatalf("smallint to decimal(6,1) with the property: %v, want SchemaChangedError advising a new bronze table", err)
	}
	if typ := e.bronzeColumnType("small"); typ != "short" {
		t.Errorf("bronze small is %s, want it unchanged", typ)
	}
}

// Kill the invocation that widens bronze at every external call (before the call takes
// effect, or after it with its answer lost), then run again: bronze ends widened once
// (one typeChanges entry per column), each change once, the rebuild equal to the table
// (invariant 5).
func TestStreamWideningKilledAtEveryCallConverges(t *testing.T) {
	setup := func(f *deltatest.Faults) *env {
		e := widenEnv(t, 54)
		e.setBronzeProperty(deltalog.PropEnableTypeWidening, "true")
		e.widenAll()
		e.lake.Faults = f
		return e
	}
	clean := &deltatest.Faults{}
	e := setup(clean)
	e.mustDrain(Options{})
	e.lake.Faults = nil
	ops := clean.Ops()
	t.Logf("a clean widening drain makes %d external calls", len(ops))
	every := 1
	if testing.Short() {
		every = 3
	}
	for _, f := range testlake.KillPlans(ops, every) {
		e := setup(f)
		if _, err := e.run(Options{}); err == nil && f.Killed() {
			t.Errorf("kill at %d (after=%v) went unnoticed", f.KillAt, f.After)
		}
		e.lake.Faults = nil
		e.mustDrain(Options{})
		e.assertConverged()
		qty, _ := e.bronzeField("qty")
		if changes, err := qty.TypeChanges(); err != nil || len(changes) != 1 || changes[0].ToType != "long" {
			t.Errorf("bronze qty: delta.typeChanges %+v, %v; want one change to long", changes, err)
		}
		if t.Failed() {
			t.Fatalf("kill at call %d (after=%v, %s) did not converge", f.KillAt, f.After, ops[f.KillAt-1])
		}
	}
}
