package seed

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/config"
)

// Numbers: bit, the integer types, real and float, decimal, numeric, money and smallmoney.

// intRange is the range of an integer SQL Server type (tinyint is from 0 up to 255).
func intRange(sqlType string) (lo, hi int64) {
	switch sqlType {
	case "tinyint":
		return 0, math.MaxUint8
	case "smallint":
		return math.MinInt16, math.MaxInt16
	case "int":
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// intOf returns a reader of row i of an integer array as an int64 (over is true for a
// uint64 above math.MaxInt64), or nil for a type that is no integer.
func intOf(dt arrow.DataType) func(in arrow.Array, i int) (v int64, over bool) {
	switch dt.ID() {
	case arrow.INT8:
		return func(in arrow.Array, i int) (int64, bool) { return int64(in.(*array.Int8).Value(i)), false }
	case arrow.INT16:
		return func(in arrow.Array, i int) (int64, bool) { return int64(in.(*array.Int16).Value(i)), false }
	case arrow.INT32:
		return func(in arrow.Array, i int) (int64, bool) { return int64(in.(*array.Int32).Value(i)), false }
	case arrow.INT64:
		return func(in arrow.Array, i int) (int64, bool) { return in.(*array.Int64).Value(i), false }
	case arrow.UINT8:
		return func(in arrow.Array, i int) (int64, bool) { return int64(in.(*array.Uint8).Value(i)), false }
	case arrow.UINT16:
		return func(in arrow.Array, i int) (int64, bool) { return int64(in.(*array.Uint16).Value(i)), false }
	case arrow.UINT32:
		return func(in arrow.Array, i int) (int64, bool) { return int64(in.(*array.Uint32).Value(i)), false }
	case arrow.UINT64:
		return func(in arrow.Array, i int) (int64, bool) {
			v := in.(*array.Uint64).Value(i)
			return int64(v), v > math.MaxInt64
		}
	}
	return nil
}

// floatOf returns a reader of row i of a float array as a float64, or nil.
func floatOf(dt arrow.DataType) func(in arrow.Array, i int) float64 {
	switch dt.ID() {
	case arrow.FLOAT32:
		return func(in arrow.Array, i int) float64 { return float64(in.(*array.Float32).Value(i)) }
	case arrow.FLOAT64:
		return func(in arrow.Array, i int) float64 { return in.(*array.Float64).Value(i) }
	}
	return nil
}

// intOut is perRow for the integer bronze type want.
func intOut(want arrow.DataType, conv func(in arrow.Array, i int) (int64, string)) castFunc {
	switch want.ID() {
	case arrow.INT16:
		return perRow(want, func(in arrow.Array, i int) (int16, string) { v, r := conv(in, i); return int16(v), r })
	case arrow.INT32:
		return perRow(want, func(in arrow.Array, i int) (int32, string) { v, r := conv(in, i); return int32(v), r })
	}
	return perRow(want, conv)
}

func castInt(sqlType string, want, from arrow.DataType) castFunc {
	lo, hi := intRange(sqlType)
	outOfRange := fmt.Sprintf("out of range for %s (from %s up to %s)", sqlType, config.Grouped(lo), config.Grouped(hi))
	inRange := func(v int64) string {
		if v < lo || v > hi {
			return outOfRange
		}
		return ""
	}
	if get := intOf(from); get != nil {
		if arrow.TypeEqual(from, want) {
			if sqlType != "tinyint" {
				return retain(nil) // int16/int32/int64 hold exactly smallint/int/bigint
			}
			return retain(func(in arrow.Array) *failure {
				for i := 0; i < in.Len(); i++ {
					if in.IsValid(i) && inRange(int64(in.(*array.Int16).Value(i))) != "" {
						return fail(in, i, "%s", outOfRange)
					}
				}
				return nil
			})
		}
		return intOut(want, func(in arrow.Array, i int) (int64, string) {
			v, over := get(in, i)
			if over {
				return 0, outOfRange
			}
			return v, inRange(v)
		})
	}
	if get := floatOf(from); get != nil {
		return intOut(want, func(in arrow.Array, i int) (int64, string) {
			f := get(in, i)
			switch {
			case math.IsNaN(f) || math.IsInf(f, 0):
				return 0, "not a number"
			case f != math.Trunc(f):
				return 0, "not a whole number"
			case f < -9.223372036854775808e18 || f >= 9.223372036854775808e18:
				return 0, outOfRange
			}
			v := int64(f)
			return v, inRange(v)
		})
	}
	if dt, ok := from.(*arrow.Decimal128Type); ok {
		return intOut(want, func(in arrow.Array, i int) (int64, string) {
			n, ok := rescale(in.(*array.Decimal128).Value(i), dt.Scale, 0)
			if !ok {
				return 0, "not a whole number"
			}
			v, small := numInt64(n)
			if !small {
				return 0, outOfRange
			}
			return v, inRange(v)
		})
	}
	get, ok := stringsOf(from)
	if !ok {
		return nil
	}
	return intOut(want, func(in arrow.Array, i int) (int64, string) {
		s, valid := get(in, i)
		if !valid {
			return 0, "not valid UTF-8 text"
		}
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return 0, outOfRange
			}
			return 0, "not an integer"
		}
		return v, inRange(v)
	})
}

func castFloat(want, from arrow.DataType) castFunc {
	real := want.ID() == arrow.FLOAT32
	check := func(f float64) string {
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return "not a finite number (SQL Server float holds no NaN or infinity)"
		case real && math.Abs(f) > math.MaxFloat32:
			return "out of range for real"
		}
		return ""
	}
	out := func(conv func(in arrow.Array, i int) (float64, string)) castFunc {
		if real {
			return perRow(want, func(in arrow.Array, i int) (float32, string) { v, r := conv(in, i); return float32(v), r })
		}
		return perRow(want, conv)
	}
	if get := floatOf(from); get != nil {
		if arrow.TypeEqual(from, want) {
			return retain(func(in arrow.Array) *failure {
				for i := 0; i < in.Len(); i++ {
					if in.IsValid(i) {
						if r := check(get(in, i)); r != "" {
							return fail(in, i, "%s", r)
						}
					}
				}
				return nil
			})
		}
		return out(func(in arrow.Array, i int) (float64, string) { f := get(in, i); return f, check(f) })
	}
	if get := intOf(from); get != nil {
		return out(func(in arrow.Array, i int) (float64, string) {
			v, over := get(in, i)
			if over {
				return float64(uint64(v)), ""
			}
			return float64(v), ""
		})
	}
	if dt, ok := from.(*arrow.Decimal128Type); ok {
		return out(func(in arrow.Array, i int) (float64, string) {
			f := in.(*array.Decimal128).Value(i).ToFloat64(dt.Scale)
			return f, check(f)
		})
	}
	get, ok := stringsOf(from)
	if !ok {
		return nil
	}
	return out(func(in arrow.Array, i int) (float64, string) {
		s, valid := get(in, i)
		if !valid {
			return 0, "not valid UTF-8 text"
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil && !strings.Contains(err.Error(), "range") {
			return 0, "not a number"
		}
		return f, check(f)
	})
}

func castBool(from arrow.DataType) castFunc {
	if from.ID() == arrow.BOOL {
		return retain(nil)
	}
	var get func(in arrow.Array, i int) (bool, string)
	if geti := intOf(from); geti != nil {
		get = func(in arrow.Array, i int) (bool, string) {
			switch v, over := geti(in, i); {
			case over || v < 0 || v > 1:
				return false, "not 0 or 1"
			default:
				return v == 1, ""
			}
		}
	} else if gets, ok := stringsOf(from); ok {
		get = func(in arrow.Array, i int) (bool, string) {
			s, _ := gets(in, i)
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "1", "true":
				return true, ""
			case "0", "false":
				return false, ""
			}
			return false, "not true, false, 1 or 0"
		}
	} else {
		return nil
	}
	return func(in arrow.Array) (arrow.Array, *failure) {
		b := array.NewBooleanBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.Reserve(in.Len())
		for i := 0; i < in.Len(); i++ {
			if in.IsNull(i) {
				b.AppendNull()
				continue
			}
			v, reason := get(in, i)
			if reason != "" {
				return nil, fail(in, i, "%s", reason)
			}
			b.UnsafeAppend(v)
		}
		return b.NewArray(), nil
	}
}

// pow10 are the powers of ten an int64 holds.
var pow10 = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// rescale moves n from scale from to scale to exactly; ok is false when digits would be
// lost (a smaller scale and a remainder) or the result needs more than 38 digits. Values
// that fit an int64 take an integer path; larger ones go through big.Int.
func rescale(n decimal128.Num, from, to int32) (decimal128.Num, bool) {
	if from == to {
		return n, true
	}
	d := to - from
	if v, small := numInt64(n); small {
		if d > 0 && d < int32(len(pow10)) {
			if m := pow10[d]; v <= math.MaxInt64/m && v >= math.MinInt64/m {
				return decimal128.FromI64(v * m), true
			}
		} else if d < 0 && -d < int32(len(pow10)) {
			m := pow10[-d]
			if v%m != 0 {
				return decimal128.Num{}, false
			}
			return decimal128.FromI64(v / m), true
		}
	}
	b := n.BigInt()
	if d > 0 {
		b.Mul(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil))
	} else {
		var rem big.Int
		b.QuoRem(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-d)), nil), &rem)
		if rem.Sign() != 0 {
			return decimal128.Num{}, false
		}
	}
	if b.CmpAbs(maxDecimal) >= 0 {
		return decimal128.Num{}, false
	}
	return decimal128.FromBigInt(b), true
}

// maxDecimal is 10^38, above every decimal128 of precision 38.
var maxDecimal = new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil)

// numInt64 is n as an int64, when it fits one.
func numInt64(n decimal128.Num) (int64, bool) {
	hi, lo := n.HighBits(), n.LowBits()
	if (hi == 0 && lo <= math.MaxInt64) || (hi == -1 && lo > math.MaxInt64) {
		return int64(lo), true
	}
	return 0, false
}

// decimalExact is the value of an exact rational r as a decimal of scale s and precision p,
// or a reason it is not one.
func decimalExact(r *big.Rat, p, s int32) (decimal128.Num, string) {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)))
	if !scaled.IsInt() {
		return decimal128.Num{}, fmt.Sprintf("has more than %d digits after the decimal point", s)
	}
	v := scaled.Num()
	if v.CmpAbs(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)) >= 0 {
		return decimal128.Num{}, fmt.Sprintf("does not fit decimal(%d,%d)", p, s)
	}
	return decimal128.FromBigInt(v), ""
}

// floatDecimal casts a float to decimal(p,s): the float rounded to s digits (half away
// from zero), provided the float is that decimal up to its own precision, within a few
// units in its last place. A float is never exact, and a writer's arithmetic (a decimal
// read as a double) may land a unit or two off the double nearest to the decimal; a float
// that differs from every decimal of scale s by more than that (0.123456 for money)
// holds digits the column cannot, and is refused.
func floatDecimal(f float64, single bool, p, s int32) (decimal128.Num, string) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return decimal128.Num{}, "not a number"
	}
	bits := 64
	if single {
		bits = 32
	}
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, bits))
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(scale))
	// Round half away from zero: trunc(x + sign(x)/2).
	half := big.NewRat(1, 2)
	if scaled.Sign() < 0 {
		half.Neg(half)
	}
	scaled.Add(scaled, half)
	n := new(big.Int).Quo(scaled.Num(), scaled.Denom())
	d := new(big.Rat).SetFrac(n, scale)
	df, _ := d.Float64()
	ulp := math.Abs(math.Nextafter(math.Abs(f), math.Inf(1)) - math.Abs(f))
	if single {
		f32 := float32(math.Abs(f))
		ulp = float64(math.Nextafter32(f32, float32(math.Inf(1))) - f32)
	}
	if math.Abs(df-f) > 4*ulp {
		return decimal128.Num{}, fmt.Sprintf("has more than %d digits after the decimal point", s)
	}
	return decimalExact(d, p, s)
}

func castDecimal(want *arrow.Decimal128Type, from arrow.DataType) castFunc {
	p, s := want.Precision, want.Scale
	tooBig := fmt.Sprintf("does not fit decimal(%d,%d)", p, s)
	var conv func(in arrow.Array, i int) (decimal128.Num, string)
	switch dt := from.(type) {
	case *arrow.Decimal128Type:
		if dt.Scale == s && dt.Precision <= p {
			return retain(nil)
		}
		conv = func(in arrow.Array, i int) (decimal128.Num, string) {
			n, ok := rescale(in.(*array.Decimal128).Value(i), dt.Scale, s)
			if !ok {
				if dt.Scale > s {
					return n, fmt.Sprintf("has more than %d digits after the decimal point", s)
				}
				return n, tooBig
			}
			if !n.FitsInPrecision(p) {
				return n, tooBig
			}
			return n, ""
		}
	default:
		if get := intOf(from); get != nil {
			conv = func(in arrow.Array, i int) (decimal128.Num, string) {
				v, over := get(in, i)
				n := decimal128.FromI64(v)
				if over {
					n = decimal128.FromBigInt(new(big.Int).SetUint64(uint64(v)))
				}
				n, ok := rescale(n, 0, s)
				if !ok || !n.FitsInPrecision(p) {
					return n, tooBig
				}
				return n, ""
			}
		} else if get := floatOf(from); get != nil {
			single := from.ID() == arrow.FLOAT32
			conv = func(in arrow.Array, i int) (decimal128.Num, string) {
				return floatDecimal(get(in, i), single, p, s)
			}
		} else if get, ok := stringsOf(from); ok {
			conv = func(in arrow.Array, i int) (decimal128.Num, string) {
				text, valid := get(in, i)
				r, ok := new(big.Rat).SetString(strings.TrimSpace(text))
				if !valid || !ok || strings.ContainsAny(text, "/") {
					return decimal128.Num{}, "not a decimal number"
				}
				return decimalExact(r, p, s)
			}
		}
	}
	if conv == nil {
		return nil
	}
	return perRow(want, conv)
}
