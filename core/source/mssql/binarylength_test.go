package mssql

import (
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// sp_cdc_get_captured_columns documents character_maximum_length as "maximum character
// length of the character-based column; otherwise, NULL", so a binary or varbinary key may
// arrive with no length. Its length then comes from sys.columns.max_length (bytes, -1 for
// max; P3), and an unknown length is refused rather than cast as length 1, which would
// truncate every bound to one byte and put rows into the wrong ranges.
func TestBinaryKeyLengthFromSysColumns(t *testing.T) {
	cols := []source.Column{
		{Name: "h", ColumnID: 1, DataType: "binary"},
		{Name: "v", ColumnID: 2, DataType: "varbinary"},
		{Name: "s", ColumnID: 3, DataType: "nvarchar", MaxLength: 20},
	}
	mergeSourceColumns(cols, []record{
		{"name": "h", "column_id": int64(1), "is_computed": false, "is_nullable": false, "collation_name": nil, "max_length": int64(16)},
		{"name": "v", "column_id": int64(2), "is_computed": false, "is_nullable": false, "collation_name": nil, "max_length": int64(-1)},
		{"name": "s", "column_id": int64(3), "is_computed": false, "is_nullable": false, "collation_name": "Latin1_General_CI_AS", "max_length": int64(40)},
	})
	if cols[0].MaxLength != 16 || cols[1].MaxLength != -1 || cols[2].MaxLength != 20 {
		t.Errorf("lengths %d %d %d, want 16 -1 20 (nvarchar keeps characters, not sys.columns bytes)", cols[0].MaxLength, cols[1].MaxLength, cols[2].MaxLength)
	}
	if got, err := castType(cols[0]); err != nil || got != "binary(16)" {
		t.Errorf("castType = %q, %v", got, err)
	}
	for _, c := range []source.Column{
		{Name: "h", DataType: "binary"},
		{Name: "v", DataType: "varbinary"},
		{Name: "s", DataType: "varchar", Collation: "Latin1_General_CI_AS"},
	} {
		if _, err := castType(c); !isInvalid(err) {
			t.Errorf("castType(%+v) with no length: %v, want *InvalidArgumentError", c, err)
		}
	}
	if q, _ := sourceColumnsSQL("dbo", "orders"); !strings.Contains(q, "c.max_length") {
		t.Errorf("P3 does not read max_length: %s", q)
	}
}
