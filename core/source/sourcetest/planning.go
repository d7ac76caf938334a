package sourcetest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// KeyAfter is the first key strictly above the one given, as SQL Server compares: on
// columns that are not unique (snapshotKeys on a heap, or the leading column of a composite
// key) it skips every row of the given value, case variants and trailing spaces included
// under a case-insensitive collation, and NULLs sort first (docs/reference/sqlserver-cdc.md
// §8.5; the chunk planner of docs/snapshots.md relies on it to never split a value).
func testKeyAfter(ctx context.Context, t *testing.T, env Env) {
	must(t, env.CreateTable(ctx, Table{Name: "grp", Columns: [][2]string{
		{"region", "varchar(10) COLLATE Latin1_General_CI_AS"}, {"n", "int"}, {"v", "int"}},
		Key: []string{"region", "n"}, Instance: "grp_ci"}))
	rows := []struct {
		region string
		n      int
		v      any
	}{{"a", 1, nil}, {"A", 2, nil}, {"a ", 3, 1}, {"b", 1, 1}, {"B", 5, 2}, {"c", 1, 2}}
	var stmts []Stmt
	for _, r := range rows {
		stmts = append(stmts, Insert("grp", map[string]any{"region": r.region, "n": r.n, "v": r.v}))
	}
	must(t, env.Exec(ctx, stmts...))
	st := source.Table{Schema: "dbo", Name: env.Name("grp")}
	cols, err := env.Source().CapturedColumns(ctx, env.Name("grp_ci"))
	must(t, err)
	col := func(name string) source.Column {
		i := slices.IndexFunc(cols, func(c source.Column) bool { return strings.EqualFold(c.Name, name) })
		if i < 0 {
			t.Fatalf("grp_ci does not capture %s: %+v", name, cols)
		}
		return cols[i]
	}
	region, n, v := col("region"), col("n"), col("v")
	after := func(keys []source.Column, k source.Key) (source.Key, bool) {
		t.Helper()
		got, ok, err := env.Source().KeyAfter(ctx, st, keys, k)
		must(t, err)
		return got, ok
	}

	// The leading column alone: 'a', 'A' and 'a ' are one value, skipped whole.
	for _, from := range []string{"a", "A", "a "} {
		got, ok := after([]source.Column{region}, source.Key{from})
		if !ok || !strings.EqualFold(strings.TrimRight(got[0].(string), " "), "b") {
			t.Errorf("KeyAfter(region > %q) = %v %v, want b or B", from, got, ok)
		}
	}
	if got, ok := after([]source.Column{region}, source.Key{"C"}); ok {
		t.Errorf("KeyAfter(region > 'C') = %v, want none", got)
	}
	// The whole key: the next row in key order, across a case-insensitive tie.
	got, ok := after([]source.Column{region, n}, source.Key{"A", int64(2)})
	if !ok || got[1] != int64(3) {
		t.Errorf("KeyAfter((region, n) > ('A', 2)) = %v %v, want ('a ', 3)", got, ok)
	}
	got, ok = after([]source.Column{region, n}, source.Key{"a", int64(3)})
	if !ok || got[1] != int64(1) || !strings.EqualFold(got[0].(string), "b") {
		t.Errorf("KeyAfter((region, n) > ('a', 3)) = %v %v, want ('b', 1)", got, ok)
	}
	// A nullable column no index leads: NULL sorts first, then each value once.
	for _, tc := range []struct {
		from any
		want any
	}{{nil, int64(1)}, {int64(1), int64(2)}, {int64(0), int64(1)}} {
		got, ok := after([]source.Column{v}, source.Key{tc.from})
		if !ok || got[0] != tc.want {
			t.Errorf("KeyAfter(v > %v) = %v %v, want %v", tc.from, got, ok, tc.want)
		}
	}
	if got, ok := after([]source.Column{v}, source.Key{int64(2)}); ok {
		t.Errorf("KeyAfter(v > 2) = %v, want none", got)
	}
	// A nil key or one of the wrong arity is refused.
	for _, bad := range []source.Key{nil, {"a", int64(1), int64(2)}} {
		_, _, err := env.Source().KeyAfter(ctx, st, []source.Column{region, n}, bad)
		if _, ok := err.(*source.InvalidArgumentError); !ok {
			t.Errorf("KeyAfter(%v): %v, want *source.InvalidArgumentError", bad, err)
		}
	}
}

// SizeEstimate reads sp_spaceused's rows and data without a scan: the row count of what
// was inserted, and data bytes that follow the rows' width — a table of 1,000-character
// nvarchar values at least 1,000 bytes a row (two a character), and many times a narrow
// table of as many rows (the snapshot planner sizes ranges by it, decision 0008).
func testSizeEstimate(ctx context.Context, t *testing.T, env Env) {
	const rows = 200
	must(t, env.CreateTable(ctx, Table{Name: "narrow", Columns: [][2]string{{"id", "int"}, {"v", "int"}}, Key: []string{"id"}, Instance: "narrow_ci"}))
	must(t, env.CreateTable(ctx, Table{Name: "wide", Columns: [][2]string{{"id", "int"}, {"doc", "nvarchar(2000)"}}, Key: []string{"id"}, Instance: "wide_ci"}))
	doc := strings.Repeat("x", 1000)
	var narrow, wide []Stmt
	for id := 0; id < rows; id++ {
		narrow = append(narrow, Insert("narrow", map[string]any{"id": id, "v": id}))
		wide = append(wide, Insert("wide", map[string]any{"id": id, "doc": doc}))
	}
	must(t, env.Exec(ctx, narrow...))
	must(t, env.Exec(ctx, wide...))
	sizeOf := func(name string) source.TableSize {
		size, err := env.Source().SizeEstimate(ctx, source.Table{Schema: "dbo", Name: env.Name(name)})
		must(t, err)
		if size.Rows < rows*9/10 || size.Rows > rows*11/10 {
			t.Fatalf("SizeEstimate(%s).Rows = %d, want about %d", name, size.Rows, rows)
		}
		return size
	}
	n, w := sizeOf("narrow"), sizeOf("wide")
	if w.Bytes < rows*1000 {
		t.Fatalf("SizeEstimate(wide).Bytes = %d, want at least %d (%d rows of 1,000 characters)", w.Bytes, rows*1000, rows)
	}
	if n.Bytes <= 0 || w.Bytes < 10*n.Bytes {
		t.Fatalf("SizeEstimate bytes: narrow %d, wide %d; want the wide table at least 10 times the narrow one", n.Bytes, w.Bytes)
	}
}
