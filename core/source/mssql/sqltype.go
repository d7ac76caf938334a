package mssql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// castType is the SQL type a bound key value is cast to so that it compares as the column does
// (docs/reference/sqlserver-cdc.md §8.5 and §12, statement S7): the declared type with its
// arguments, and for char/varchar/nchar/nvarchar the column's collation inside the CAST, so
// that an nvarchar parameter converts in the column's own code page and the comparison seeks.
//
// Types that cannot be compared (text, ntext, image, xml) and types without a bronze value
// are a *source.InvalidArgumentError naming the column. A char key without a collation is
// refused as well: comparing under the wrong collation can put a row into two ranges.
func castType(c source.Column) (string, error) {
	bad := func(why string) error {
		return &source.InvalidArgumentError{Arg: "key column " + quoteForMessage(c.Name), Reason: why}
	}
	// length is the declared length; 0 is unknown (a NULL character_maximum_length and no
	// sys.columns row), refused: casting a bound to length 1 would truncate it.
	length := func() (string, error) {
		if c.MaxLength < 0 {
			return "max", nil
		}
		if c.MaxLength == 0 {
			return "", bad("the declared length is unknown")
		}
		return strconv.Itoa(c.MaxLength), nil
	}
	frac := func() (string, error) {
		if c.DatetimePrecision < 0 || c.DatetimePrecision > 7 {
			return "", bad(fmt.Sprintf("fractional-second precision %d: want from 0 up to 7", c.DatetimePrecision))
		}
		return strconv.Itoa(c.DatetimePrecision), nil
	}
	switch t := strings.ToLower(c.DataType); t {
	case "bit", "tinyint", "smallint", "int", "bigint", "real", "float", "money", "smallmoney",
		"date", "datetime", "smalldatetime", "uniqueidentifier":
		return t, nil
	case "decimal", "numeric":
		if c.Precision < 1 || c.Precision > 38 || c.Scale < 0 || c.Scale > c.Precision {
			return "", bad(fmt.Sprintf("decimal(%d,%d) is not a valid type", c.Precision, c.Scale))
		}
		return fmt.Sprintf("%s(%d,%d)", t, c.Precision, c.Scale), nil
	case "datetime2", "datetimeoffset", "time":
		p, err := frac()
		if err != nil {
			return "", err
		}
		return t + "(" + p + ")", nil
	case "char", "varchar", "nchar", "nvarchar":
		if c.Collation == "" {
			return "", bad("a character key needs its collation (sys.columns.collation_name)")
		}
		if err := checkCollation(c.Collation); err != nil {
			return "", err
		}
		n, err := length()
		if err != nil {
			return "", err
		}
		return t + "(" + n + ") COLLATE " + c.Collation, nil
	case "binary", "varbinary":
		n, err := length()
		if err != nil {
			return "", err
		}
		return t + "(" + n + ")", nil
	case "timestamp", "rowversion":
		return "binary(8)", nil
	default:
		return "", bad("type " + t + " cannot bound a key range")
	}
}
