package sourcetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// typeCase is one column of the every-type table: its T-SQL type, the value inserted (as
// a parameter) and the value bronze holds (as Cell decodes it).
type typeCase struct {
	col, sqlType string
	in, want     any
}

func pointWKB(x, y float64) []byte {
	b := []byte{1, 1, 0, 0, 0}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
}

// typeCases are the rows of docs/types.md that a write through T-SQL can exercise.
var typeCases = []typeCase{
	{"c_bit", "bit", true, true},
	{"c_tinyint", "tinyint", 255, int64(255)},
	{"c_smallint", "smallint", -5, int64(-5)},
	{"c_int", "int", 7, int64(7)},
	{"c_bigint", "bigint", int64(1) << 40, int64(1) << 40},
	{"c_real", "real", 1.5, 1.5},
	{"c_float", "float", 0.1, 0.1},
	{"c_decimal", "decimal(18,2)", "123.45", "123.45"},
	{"c_numeric", "numeric(38,10)", "-1234567890123456789012345678.0123456789", "-1234567890123456789012345678.0123456789"},
	{"c_money", "money", "12.3456", "12.3456"},
	{"c_smallmoney", "smallmoney", "1.5", "1.5000"},
	{"c_date", "date", "2026-01-02", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
	{"c_datetime", "datetime", "2026-01-02T03:04:05.997", time.Date(2026, 1, 2, 3, 4, 5, 996_666_000, time.UTC)},
	// datetime2(7) keeps 100 ns on the server; bronze keeps microseconds (truncated).
	{"c_datetime2", "datetime2(7)", "2026-01-02T03:04:05.1234567", time.Date(2026, 1, 2, 3, 4, 5, 123_456_000, time.UTC)},
	{"c_smalldatetime", "smalldatetime", "2026-01-02T03:04:00", time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)},
	// datetimeoffset: the UTC instant, microseconds; the offset is not kept.
	{"c_dto", "datetimeoffset(7)", "2026-01-02T03:04:05.1234567-03:00", time.Date(2026, 1, 2, 6, 4, 5, 123_456_000, time.UTC)},
	// time is text, so its 100 ns digits are kept.
	{"c_time", "time(7)", "13:14:15.1234567", "13:14:15.1234567"},
	{"c_char", "char(5)", "ab", "ab   "},
	{"c_varchar", "varchar(10)", "x", "x"},
	{"c_nvarchar", "nvarchar(20)", "ünï", "ünï"},
	{"c_nvarcharmax", "nvarchar(max)", "long", "long"},
	{"c_text", "text", "t", "t"},
	{"c_ntext", "ntext", "nt", "nt"},
	{"c_xml", "xml", "<a>1</a>", "<a>1</a>"},
	{"c_guid", "uniqueidentifier", "6f9619ff-8b86-d011-b42d-00c04fc964ff", "6F9619FF-8B86-D011-B42D-00C04FC964FF"},
	{"c_binary", "binary(4)", []byte{1, 2}, []byte{1, 2, 0, 0}},
	{"c_varbinary", "varbinary(max)", []byte{9}, []byte{9}},
	{"c_image", "image", []byte{7}, []byte{7}},
	{"c_hierarchyid", "hierarchyid", "/1/3/", "/1/3/"},
	{"c_geometry", "geometry", "POINT (1 2)", pointWKB(1, 2)},
	{"c_geography", "geography", "POINT (1 2)", pointWKB(1, 2)},
	{"c_variant", "sql_variant", 42, "bigint:42"},
}

// Every type reads as docs/types.md says, in change rows and in table rows alike.
func testEveryType(ctx context.Context, t *testing.T, env Env) {
	spec := Table{Name: "alltypes", Columns: [][2]string{{"id", "int"}}, Key: []string{"id"}, Instance: "alltypes_ci"}
	row := map[string]any{"id": 1}
	for _, c := range typeCases {
		spec.Columns = append(spec.Columns, [2]string{c.col, c.sqlType})
		row[c.col] = c.in
	}
	must(t, env.CreateTable(ctx, spec))
	must(t, env.Exec(ctx, Insert("alltypes", row)))
	ci := env.Name("alltypes_ci")
	changes := ReadChanges(ctx, t, env.Source(), ci, lsn.Zero, maxLSN(ctx, t, env.Source()))
	if len(changes) != 1 {
		t.Fatalf("%d change rows, want 1", len(changes))
	}
	cols, err := env.Source().CapturedColumns(ctx, ci)
	must(t, err)
	rows, err := env.Source().ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: env.Name("alltypes")}, Columns: cols})
	must(t, err)
	table := Drain(ctx, t, rows)
	if len(table) != 1 {
		t.Fatalf("%d table rows, want 1", len(table))
	}
	for _, c := range typeCases {
		for _, got := range []struct {
			path string
			v    any
		}{{"change row", changes[0].Values[c.col]}, {"table row", table[0][c.col]}} {
			if !sameValue(got.v, c.want) {
				t.Errorf("%s %s (%s): %#v, want %#v", got.path, c.col, c.sqlType, got.v, c.want)
			}
		}
	}
}

func sameValue(a, b any) bool {
	switch x := b.(type) {
	case []byte:
		y, ok := a.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := a.(time.Time)
		return ok && x.Equal(y)
	}
	return fmt.Sprint(a) == fmt.Sprint(b) && fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b)
}
