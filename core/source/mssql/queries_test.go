package mssql

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var (
	lsnA = lsn.MustParse("0x0000002A000001F00003")
	lsnB = lsn.MustParse("0x0000002B000000100001")
	tbl  = source.Table{Schema: "dbo", Name: "orders"}
	colI = source.Column{Name: "id", DataType: "int", Present: true}
	colS = source.Column{Name: "code", DataType: "varchar", MaxLength: 20, Collation: "SQL_Latin1_General_CP1_CI_AS", Present: true}
	colD = source.Column{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2, Present: true}
)

// statement is one builder's output for the golden file.
type statement struct {
	name string
	sql  string
	args []any
}

func allStatements(t *testing.T) []statement {
	t.Helper()
	var out []statement
	add := func(name, q string, args []any) { out = append(out, statement{name: name, sql: q, args: args}) }
	add3 := func(name, q string, args []any, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		add(name, q, args)
	}
	lo, hi := int64(10), int64(20)

	add("M1 max lsn", sqlMaxLSN, nil)
	q, a := minLSNSQL("dbo_orders")
	add("M2 min lsn", q, a)
	q, a = nthCommitSQL(lsnA, 3)
	add("M5 n-th commit", q, a)
	add("P1 capture instances", sqlHelpCDC, nil)
	q, a = capturedColumnsSQL("dbo_orders")
	add("P2 captured columns", q, a)
	q, a = sourceColumnsSQL("dbo", "orders")
	add("P3 source columns", q, a)
	q, a = ddlHistorySQL("dbo_orders")
	add("P4 ddl history", q, a)
	q, a = spaceUsedSQL("[dbo].[orders]")
	add("P5 space used", q, a)
	q, a = permissionProbeSQL("dbo_orders")
	add("P6 permission probe", q, a)

	for _, z := range []struct {
		name string
		z    zone
	}{{"utc", zone{kind: zoneUTC}}, {"fixed", zone{kind: zoneFixed}}, {"named", zone{kind: zoneNamed, name: "Central Europe Standard Time"}}} {
		var p params
		ts := newCommitTS(&p, z.z, nil, nil)
		add("TZ6 commit time "+z.name, commitTimeSQL(&p, ts, lsnA, false), p.args)
		q, a = timeToLSNSQL(z.z, time.Date(2026, 10, 25, 1, 30, 15, 999e6, time.UTC))
		add("TZ7 time to lsn "+z.name, q, a)
	}
	named := zone{kind: zoneNamed, name: "Central Europe Standard Time"}
	q, a = rangeOffsetSQL(named, lsnA, lsnB)
	add("TZ4 range offset", q, a)
	q, a = dropsSQL(named, lsnA, lsnB)
	add("TZ5 drops", q, a)
	{
		var p params
		off := 60
		ts := newCommitTS(&p, named, &off, nil)
		add("TZ6 commit at or before, range offset", commitTimeSQL(&p, ts, lsnA, true), p.args)
	}
	{
		var p params
		ts := newCommitTS(&p, named, nil, []drop{{LSN: lsnA, Time: "2026-10-25 02:10:00.003"}})
		q, err := readChangesSQL(&p, ts, "dbo_orders", []changeColumn{{"id", true, "int"}, {"note", false, "nvarchar"}}, lsnA, lsnB, false)
		add3("C1 read changes, fall-back drops", q, p.args, err)
	}
	{
		var p params
		ts := newCommitTS(&p, zone{kind: zoneUTC}, nil, nil)
		q, err := readChangesSQL(&p, ts, "dbo_orders", []changeColumn{{"id", true, "int"}, {"code", true, "sql_variant"}}, lsnA, lsnB, false)
		add3("C1 read changes, utc", q, p.args, err)
	}
	{
		var p params
		ts := newCommitTS(&p, zone{kind: zoneUTC}, nil, nil)
		q, err := readChangesSQL(&p, ts, "dbo_orders", []changeColumn{{"id", true, "int"}}, lsnA, lsnB, true)
		add3("C1 read changes, includeCommandId false", q, p.args, err)
	}
	q, a, err := splitChangesSQL("dbo_orders", lsnA, lsnB, 4)
	add3("C2 split changes", q, a, err)

	q, a, err = keyExtentSQL(tbl, colI, nil, nil)
	add3("S1 key extent", q, a, err)
	q, a, err = keyExtentSQL(tbl, colI, &lo, &hi)
	add3("S1 key extent in [lo, hi)", q, a, err)
	q, err = keyMaxSQL(tbl, []source.Column{colS, colI})
	add3("S2 key max", q, nil, err)
	q, a, err = keyTilesSQL(tbl, []source.Column{colS, colI}, 8)
	add3("S3 key tiles", q, a, err)
	q, a, err = keyBucketsSQL(tbl, colI, 1000, &lo, nil)
	add3("S4 key buckets", q, a, err)
	q, a, err = keyBucketsSQL(tbl, source.Column{Name: "day", DataType: "date", Present: true}, 7, nil, nil)
	add3("S4 key buckets, date key (days since 1970-01-01)", q, a, err)
	q, a, err = readTableSQL(tbl, []source.Column{colI, colS, colD, {Name: "gone", DataType: "int"}}, []source.Column{colS, colI},
		source.KeyRange{Lo: source.Key{"n", int64(1)}, Hi: source.Key{"t", int64(5)}})
	add3("S5 read table, composite range", q, a, err)
	q, a, err = readTableSQL(tbl, []source.Column{colI}, nil, source.KeyRange{})
	add3("S5 read table, whole table", q, a, err)
	q, a, err = keyBoundSQL(tbl, []source.Column{colS, colI}, source.KeyRange{Lo: source.Key{"n", int64(1)}}, 200)
	add3("S6 key bound", q, a, err)
	q, a, err = keyAfterSQL(tbl, []source.Column{colS, colI}, source.Key{"n", int64(1)})
	add3("S6b key after", q, a, err)
	for _, tt := range []source.Table{
		tbl,
		{Schema: "dbo", Name: "orders", Isolation: source.Snapshot, LockTimeout: ptr(1500 * time.Millisecond)},
	} {
		q, err := sessionPrefix(tt)
		add3("session prefix "+string(tt.Isolation)+" "+fmt.Sprint(tt.LockTimeout != nil), q, nil, err)
	}
	add("session reset", sessionReset, nil)
	return out
}

func ptr[T any](v T) *T { return &v }

func renderStatements(ss []statement) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "-- %s\n%s\n", s.name, s.sql)
		for i, a := range s.args {
			fmt.Fprintf(&b, "--   @p%d = %T %v\n", i+1, a, a)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestStatementsGolden pins the text of every statement (go test -run Golden -update
// rewrites testdata/statements.golden after a deliberate change; review the diff).
func TestStatementsGolden(t *testing.T) {
	got := renderStatements(allStatements(t))
	path := filepath.Join("testdata", "statements.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("statements differ from %s; run go test -run Golden -update and review the diff\n%s", path, firstDiff(got, string(want)))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("length %d vs %d lines", len(al), len(bl))
}

// Every placeholder a statement uses is bound, and every argument is used: values never
// reach the text.
func TestStatementsBindEveryPlaceholder(t *testing.T) {
	for _, s := range allStatements(t) {
		for i := range s.args {
			if !strings.Contains(s.sql, fmt.Sprintf("@p%d", i+1)) {
				t.Errorf("%s: argument @p%d unused", s.name, i+1)
			}
		}
		if strings.Contains(s.sql, fmt.Sprintf("@p%d", len(s.args)+1)) {
			t.Errorf("%s: placeholder @p%d has no argument", s.name, len(s.args)+1)
		}
		if strings.Contains(strings.ToUpper(s.sql), "NOLOCK") || strings.Contains(strings.ToUpper(s.sql), "UNCOMMITTED") {
			t.Errorf("%s: dirty reads are never allowed", s.name)
		}
	}
}

func TestReadChangesShape(t *testing.T) {
	var p params
	q, err := readChangesSQL(&p, newCommitTS(&p, zone{kind: zoneUTC}, nil, nil), "dbo_orders", []changeColumn{{"id", true, "int"}, {"gone", false, "int"}}, lsnA, lsnB, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"FROM cdc.[dbo_orders_CT] AS c LEFT JOIN cdc.lsn_time_mapping AS m ON m.start_lsn = c.[__$start_lsn]",
		"WHERE c.[__$start_lsn] BETWEEN CONVERT(binary(10), @p1, 1) AND CONVERT(binary(10), @p2, 1)",
		"ORDER BY c.[__$start_lsn], c.[__$command_id], c.[__$seqval], c.[__$operation]",
		"CONVERT(varchar(22), c.[__$start_lsn], 1) AS [_start_lsn]",
		"NULL AS [gone]",
		"c.[id]",
	} {
		if !strings.Contains(q, want) {
			t.Errorf("missing %q in\n%s", want, q)
		}
	}
	if p.args[0] != lsnA.String() || p.args[1] != lsnB.String() {
		t.Errorf("args %v", p.args)
	}
	if _, err := readChangesSQL(&p, commitTS{}, "bad]ci", nil, lsnA, lsnB, false); !isInvalid(err) {
		t.Errorf("bad instance: %v", err)
	}
	if _, err := readChangesSQL(&p, commitTS{}, "ci", []changeColumn{{"a]", true, "int"}}, lsnA, lsnB, false); !isInvalid(err) {
		t.Errorf("bad column: %v", err)
	}
}

func TestReadTableCastsUnderCollation(t *testing.T) {
	q, args, err := readTableSQL(tbl, []source.Column{colI}, []source.Column{colS, colI}, source.KeyRange{Lo: source.Key{"n", int64(1)}, Hi: source.Key{"N", int64(9)}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(q, "CAST(@p1 AS varchar(20) COLLATE SQL_Latin1_General_CP1_CI_AS)") {
		t.Errorf("string bound not cast under the column collation:\n%s", q)
	}
	if n := strings.Count(q, " UNION ALL "); n != 2 {
		t.Errorf("%d UNION ALL, want 2 (three pieces):\n%s", n, q)
	}
	// Each bound value is bound once and reused.
	if len(args) != 4 {
		t.Errorf("args %v, want the 4 bound values", args)
	}
	q, _, err = readTableSQL(tbl, []source.Column{colI}, []source.Column{colI}, source.KeyRange{Hi: source.Key{nil}})
	if err != nil || !strings.HasSuffix(q, "WHERE 1 = 0") {
		t.Errorf("empty range: %q, %v", q, err)
	}
}

func TestBuilderErrors(t *testing.T) {
	tm := time.Now()
	cases := map[string]error{}
	_, _, cases["key of wrong Go type"] = readTableSQL(tbl, []source.Column{colI}, []source.Column{colI}, source.KeyRange{Lo: source.Key{"1"}})
	_, _, cases["arity"] = readTableSQL(tbl, []source.Column{colI}, []source.Column{colI, colS}, source.KeyRange{Lo: source.Key{int64(1)}})
	_, _, cases["no columns"] = readTableSQL(tbl, nil, nil, source.KeyRange{})
	_, _, cases["char key without collation"] = readTableSQL(tbl, []source.Column{colI}, []source.Column{{Name: "c", DataType: "varchar", MaxLength: 3}}, source.KeyRange{})
	_, _, cases["xml key"] = readTableSQL(tbl, []source.Column{colI}, []source.Column{{Name: "x", DataType: "xml"}}, source.KeyRange{})
	_, _, cases["bad table"] = readTableSQL(source.Table{Schema: "dbo", Name: ""}, []source.Column{colI}, nil, source.KeyRange{})
	_, _, cases["buckets of a string"] = keyBucketsSQL(tbl, colS, 10, nil, nil)
	_, _, cases["width 0"] = keyBucketsSQL(tbl, colI, 0, nil, nil)
	_, _, cases["buckets of a datetime2"] = keyBucketsSQL(tbl, source.Column{Name: "t", DataType: "datetime2"}, 10, nil, nil)
	_, _, cases["bucket bounds on a date"] = keyBucketsSQL(tbl, source.Column{Name: "day", DataType: "date"}, 10, ptr(int64(1)), nil)
	_, _, cases["extent bounds on a string"] = keyExtentSQL(tbl, colS, ptr(int64(1)), nil)
	_, _, cases["tiles 0"] = keyTilesSQL(tbl, []source.Column{colI}, 0)
	_, _, cases["bound n<0"] = keyBoundSQL(tbl, []source.Column{colI}, source.KeyRange{}, -1)
	_, cases["max no keys"] = keyMaxSQL(tbl, nil)
	_, cases["read uncommitted"] = sessionPrefix(source.Table{Isolation: "read_uncommitted"})
	_, cases["negative lock timeout"] = sessionPrefix(source.Table{LockTimeout: ptr(-time.Second)})
	_, _, cases["datetime key as string"] = readTableSQL(tbl, []source.Column{colI}, []source.Column{{Name: "t", DataType: "datetime2", DatetimePrecision: 7}}, source.KeyRange{Lo: source.Key{tm.String()}})
	for name, err := range cases {
		if !isInvalid(err) {
			t.Errorf("%s: got %v, want *InvalidArgumentError", name, err)
		}
	}
}

func TestCastType(t *testing.T) {
	for _, c := range []struct {
		col  source.Column
		want string
	}{
		{source.Column{DataType: "INT"}, "int"},
		{source.Column{DataType: "decimal", Precision: 18, Scale: 2}, "decimal(18,2)"},
		{source.Column{DataType: "nvarchar", MaxLength: -1, Collation: "Latin1_General_100_CI_AS_SC"}, "nvarchar(max) COLLATE Latin1_General_100_CI_AS_SC"},
		{source.Column{DataType: "datetime2", DatetimePrecision: 7}, "datetime2(7)"},
		{source.Column{DataType: "datetimeoffset", DatetimePrecision: 3}, "datetimeoffset(3)"},
		{source.Column{DataType: "time", DatetimePrecision: 0}, "time(0)"},
		{source.Column{DataType: "varbinary", MaxLength: 16}, "varbinary(16)"},
		{source.Column{DataType: "rowversion"}, "binary(8)"},
		{source.Column{DataType: "uniqueidentifier"}, "uniqueidentifier"},
	} {
		got, err := castType(c.col)
		if err != nil || got != c.want {
			t.Errorf("castType(%+v) = %q, %v; want %q", c.col, got, err, c.want)
		}
	}
	for _, c := range []source.Column{
		{DataType: "decimal", Precision: 0}, {DataType: "datetime2", DatetimePrecision: 8},
		{DataType: "geography"}, {DataType: "varchar", Collation: "bad collation"},
	} {
		if _, err := castType(c); !isInvalid(err) {
			t.Errorf("castType(%+v): %v", c, err)
		}
	}
}

func TestParseIndexColumns(t *testing.T) {
	for in, want := range map[string][]string{
		"":                  nil,
		"[id]":              {"id"},
		"[a], [b]":          {"a", "b"},
		"[we]]ird], [x y]":  {"we]ird", "x y"},
		"[Situação],[Tipo]": {"Situação", "Tipo"},
	} {
		got, err := parseIndexColumns(in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("parseIndexColumns(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"a", "[a", "[a], b"} {
		if _, err := parseIndexColumns(in); err == nil {
			t.Errorf("parseIndexColumns(%q): no error", in)
		}
	}
}

func TestParseSpaceUsed(t *testing.T) {
	if got, err := parseSpaceUsed("40000               ", "5136 KB"); err != nil || got != (source.TableSize{Rows: 40000, Bytes: 5136 * 1024}) {
		t.Errorf("got %+v, %v", got, err)
	}
	for _, bad := range [][2]string{{"n/a", "8 KB"}, {"1", "8 MB"}, {"1", ""}} {
		if got, err := parseSpaceUsed(bad[0], bad[1]); err == nil {
			t.Errorf("parseSpaceUsed(%q, %q) = %+v, no error", bad[0], bad[1], got)
		}
	}
}

func TestMergeSourceColumns(t *testing.T) {
	cols := []source.Column{{Name: "id", ColumnID: 1}, {Name: "note", ColumnID: 3}, {Name: "total", ColumnID: 4}}
	mergeSourceColumns(cols, []record{
		{"name": "id", "column_id": int64(1), "is_computed": false, "is_nullable": false, "collation_name": nil},
		{"name": "note", "column_id": int64(5), "is_computed": false, "is_nullable": true, "collation_name": "Latin1_General_CI_AS"},
		{"name": "total", "column_id": int64(4), "is_computed": true, "is_nullable": true, "collation_name": nil},
	})
	if !cols[0].Present || cols[0].Nullable || cols[1].Present || !cols[2].Computed {
		t.Errorf("got %+v", cols)
	}
}

func TestColumnFrom(t *testing.T) {
	c := columnFrom(record{"column_name": "amount", "column_id": int64(3), "ordinal_position": int64(2), "data_type": "Decimal",
		"numeric_precision": int64(18), "numeric_scale": int64(2), "datetime_precision": nil, "character_maximum_length": nil})
	if c.Name != "amount" || c.Ordinal != 2 || c.ColumnID != 3 || c.DataType != "decimal" || c.Precision != 18 || c.Scale != 2 {
		t.Errorf("got %+v", c)
	}
	c = columnFrom(record{"column_name": "x", "column_ordinal": int64(5), "ordinal_position": int64(2)})
	if c.Ordinal != 5 {
		t.Errorf("column_ordinal wins: %+v", c)
	}
}
