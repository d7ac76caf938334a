package cdcsim

import (
	"unicode/utf8"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// rowHeaderBytes is what SQL Server's row format adds to a row's values, about: the
// status bits and the fixed-length size (4), the NULL bitmap and column count (3 for a
// narrow table) and a slot in the page's offset array (2).
const rowHeaderBytes = 9

// fixedBytes are the stored widths of SQL Server's fixed-width types.
var fixedBytes = map[string]int64{
	"bit": 1, "tinyint": 1, "smallint": 2, "int": 4, "bigint": 8,
	"real": 4, "float": 8, "smallmoney": 4, "money": 8,
	"date": 3, "time": 5, "smalldatetime": 4, "datetime": 8, "datetime2": 8, "datetimeoffset": 10,
	"uniqueidentifier": 16, "timestamp": 8, "rowversion": 8,
}

// storedBytes is about what value v of column c takes in a data page: a fixed-width
// type its width (also when NULL, as SQL Server keeps the space), decimal by precision,
// a variable-width one its length (two bytes a character for the n-types) plus a 2-byte
// offset, NULL nothing.
func storedBytes(c source.Column, v any) int64 {
	if n, ok := fixedBytes[c.DataType]; ok {
		return n
	}
	switch c.DataType {
	case "decimal", "numeric":
		p, _ := decimalScale(c)
		switch {
		case p <= 9:
			return 5
		case p <= 19:
			return 9
		case p <= 28:
			return 13
		}
		return 17
	}
	switch x := v.(type) {
	case nil:
		return 0
	case string:
		if c.DataType == "nchar" || c.DataType == "nvarchar" || c.DataType == "ntext" {
			return 2 + 2*int64(utf8.RuneCountInString(x))
		}
		return 2 + int64(len(x))
	case []byte:
		return 2 + int64(len(x))
	}
	return 8
}
