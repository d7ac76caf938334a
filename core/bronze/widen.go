package bronze

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Holds reports whether a bronze column of type have holds every value of type got
// (docs/reference/original-library.md §8.2): the same type, or a widening step:
// short → integer → long; short or integer → double; an integer type → decimal(p,s) with at
// least 5 (short), 10 (integer) or 20 (long) integer digits; decimal → decimal with at
// least as many integer and fraction digits; float → double; date → timestamp_ntz. A column
// whose source type became narrower (decimal(18,4) → decimal(9,2)) is held by its bronze
// type; one that became wider (int → bigint) is not.
func Holds(have, got arrow.DataType) bool {
	if arrow.TypeEqual(have, got) {
		return true
	}
	switch g := got.(type) {
	case *arrow.Int16Type:
		switch h := have.(type) {
		case *arrow.Int32Type, *arrow.Int64Type, *arrow.Float64Type:
			return true
		case *arrow.Decimal128Type:
			return h.Precision-h.Scale >= 5
		}
	case *arrow.Int32Type:
		switch h := have.(type) {
		case *arrow.Int64Type, *arrow.Float64Type:
			return true
		case *arrow.Decimal128Type:
			return h.Precision-h.Scale >= 10
		}
	case *arrow.Int64Type:
		if h, ok := have.(*arrow.Decimal128Type); ok {
			return h.Precision-h.Scale >= 20
		}
	case *arrow.Float32Type:
		_, ok := have.(*arrow.Float64Type)
		return ok
	case *arrow.Decimal128Type:
		if h, ok := have.(*arrow.Decimal128Type); ok {
			return h.Scale >= g.Scale && h.Precision-h.Scale >= g.Precision-g.Scale
		}
	case *arrow.Date32Type:
		return arrow.TypeEqual(have, CommitTSType)
	}
	return false
}

// AsType is c as a column to read as bronze type t (a type that Holds c's type), so that a
// read returns t: source reads convert as SQL Server's CAST would. Types with no narrower
// source type to stand for (strings, binary, bool) leave c as it is.
func AsType(c source.Column, t arrow.DataType) source.Column {
	switch tt := t.(type) {
	case *arrow.Int16Type:
		c.DataType = "smallint"
	case *arrow.Int32Type:
		c.DataType = "int"
	case *arrow.Int64Type:
		c.DataType = "bigint"
	case *arrow.Float32Type:
		c.DataType = "real"
	case *arrow.Float64Type:
		c.DataType = "float"
	case *arrow.Decimal128Type:
		c.DataType, c.Precision, c.Scale = "decimal", int(tt.Precision), int(tt.Scale)
	case *arrow.Date32Type:
		c.DataType = "date"
	case *arrow.TimestampType:
		if arrow.TypeEqual(t, CommitTSType) {
			c.DataType, c.DatetimePrecision = "datetime2", 7
		} else {
			c.DataType, c.DatetimePrecision = "datetimeoffset", 7
		}
	}
	return c
}
