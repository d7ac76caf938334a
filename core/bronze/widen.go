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

// DeltaWidens reports whether the Delta protocol's typeWidening feature allows changing a
// column from type from to type to (docs/reference/delta-protocol.md §6.6): byte → short →
// int → long; float → double; byte, short or int → double; date → timestamp_ntz;
// decimal(p,s) → decimal(p+k1, s+k2) with k1 >= k2 >= 0; byte, short or int →
// decimal(10+k1, k2); long → decimal(20+k1, k2), with k1 >= k2 >= 0. Equal types are no
// change (false).
func DeltaWidens(from, to arrow.DataType) bool {
	if arrow.TypeEqual(from, to) {
		return false
	}
	intDigits := map[arrow.Type]int32{arrow.INT8: 10, arrow.INT16: 10, arrow.INT32: 10, arrow.INT64: 20}
	rank := map[arrow.Type]int{arrow.INT8: 1, arrow.INT16: 2, arrow.INT32: 3, arrow.INT64: 4}
	switch t := to.(type) {
	case *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		r, ok := rank[from.ID()]
		return ok && r < rank[to.ID()]
	case *arrow.Float64Type:
		switch from.ID() {
		case arrow.FLOAT32, arrow.INT8, arrow.INT16, arrow.INT32:
			return true
		}
	case *arrow.Decimal128Type:
		if f, ok := from.(*arrow.Decimal128Type); ok {
			k1, k2 := t.Precision-f.Precision, t.Scale-f.Scale
			return k1 >= k2 && k2 >= 0
		}
		if d, ok := intDigits[from.ID()]; ok {
			return t.Precision-t.Scale >= d
		}
	case *arrow.TimestampType:
		return from.ID() == arrow.DATE32 && arrow.TypeEqual(to, CommitTSType)
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
