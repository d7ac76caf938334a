package sourcetest

import (
	"errors"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// TestParseColumnBadInput: names and types ParseColumn cannot take are
// *source.InvalidArgumentError.
func TestParseColumnBadInput(t *testing.T) {
	for _, c := range [][2]string{
		{"", "int"}, {"a]b", "int"}, {"a\tb", "int"}, {"c", ""}, {"c", "int("}, {"c", "decimal(10,2,3)"},
		{"c", "varchar(99999999999999999999)"}, {"c", "decimal(18, 99999)"}, {"c", "nvarchar(20) COLLATE x;y"},
	} {
		_, err := ParseColumn(c[0], c[1], true)
		var ia *source.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("ParseColumn(%q, %q): got %T %v", c[0], c[1], err, err)
		}
	}
	got, err := ParseColumn("c", "decimal(38, 10)", false)
	if err != nil || got.Precision != 38 || got.Scale != 10 {
		t.Fatalf("decimal(38, 10): %+v %v", got, err)
	}
}
