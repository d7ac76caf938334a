package bronze

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Decimal precision bounds of SQL Server decimal/numeric (and of Delta decimal).
const (
	MinDecimalPrecision = 1
	MaxDecimalPrecision = 38
)

// ArrowType is the bronze (Arrow) type of a SQL Server column, following
// docs/reference/sqlserver-cdc.md §7.1 and §4.3 (the types sys.sp_cdc_get_captured_columns
// reports):
//
//	bit                                  boolean
//	tinyint, smallint                    int16 (tinyint 0..255 does not fit int8)
//	int                                  int32
//	bigint                               int64
//	real                                 float32
//	float                                float64
//	decimal(p,s), numeric(p,s)           decimal128(p,s)
//	money                                decimal128(19,4)
//	smallmoney                           decimal128(10,4)
//	date                                 date32
//	datetime, datetime2, smalldatetime   timestamp[us] without zone (Delta timestamp_ntz)
//	datetimeoffset                       timestamp[us, UTC] (Delta timestamp), the UTC instant
//	time                                 utf8 ("HH:MM:SS[.fffffff]")
//	char, varchar, nchar, nvarchar,
//	text, ntext, xml, uniqueidentifier   utf8
//	binary, varbinary, image,
//	timestamp, rowversion                binary
//	hierarchyid                          utf8 (its ToString() path, "/1/3/")
//	geometry, geography                  binary (OGC well-known binary, STAsBinary())
//	sql_variant                          utf8 ("<base type>:<value as text>")
//
// docs/types.md lists what each mapping loses. c.DataType is matched ignoring case; alias
// types arrive as their base type. Anything else (other CLR user-defined types, json,
// vector, ...) and a decimal whose precision is outside 1..38 or whose scale is outside
// 0..precision is an *UnsupportedTypeError.
func ArrowType(c source.Column) (arrow.DataType, error) {
	switch t := strings.ToLower(c.DataType); t {
	case "bit":
		return arrow.FixedWidthTypes.Boolean, nil
	case "tinyint", "smallint":
		return arrow.PrimitiveTypes.Int16, nil
	case "int":
		return arrow.PrimitiveTypes.Int32, nil
	case "bigint":
		return arrow.PrimitiveTypes.Int64, nil
	case "real":
		return arrow.PrimitiveTypes.Float32, nil
	case "float":
		return arrow.PrimitiveTypes.Float64, nil
	case "decimal", "numeric":
		if c.Precision < MinDecimalPrecision || c.Precision > MaxDecimalPrecision {
			return nil, &UnsupportedTypeError{Column: c.Name, Type: t, Reason: fmt.Sprintf("precision %d: want from %d up to %d", c.Precision, MinDecimalPrecision, MaxDecimalPrecision)}
		}
		if c.Scale < 0 || c.Scale > c.Precision {
			return nil, &UnsupportedTypeError{Column: c.Name, Type: t, Reason: fmt.Sprintf("scale %d: want from 0 up to the precision, %d", c.Scale, c.Precision)}
		}
		return &arrow.Decimal128Type{Precision: int32(c.Precision), Scale: int32(c.Scale)}, nil
	case "money":
		return &arrow.Decimal128Type{Precision: 19, Scale: 4}, nil
	case "smallmoney":
		return &arrow.Decimal128Type{Precision: 10, Scale: 4}, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "datetime", "datetime2", "smalldatetime":
		return CommitTSType, nil
	case "datetimeoffset":
		return UTCTimestampType, nil
	case "time", "char", "varchar", "nchar", "nvarchar", "text", "ntext", "xml", "uniqueidentifier",
		"hierarchyid", "sql_variant":
		return arrow.BinaryTypes.String, nil
	case "binary", "varbinary", "image", "timestamp", "rowversion", "geometry", "geography":
		return arrow.BinaryTypes.Binary, nil
	default:
		return nil, &UnsupportedTypeError{Column: c.Name, Type: t}
	}
}
