package cdcsim

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// decimalNum's quick path reads every text it takes as decimalText does, and leaves the
// rest (signs other than one '-', other characters, no digits, more than 18 digits) to it.
func TestDecimalQuickPathMatchesText(t *testing.T) {
	texts := []string{"0", "-0", "1", "-1", "12.34", "-12.34", "12.3", "12.", ".5", "-.5", "0.005", "1.239",
		"1.23x", "", ".", "-", "--1", "+1", "1e3", "1.2.3", " 1", "12a.00", "999999999999999999", "9999999999999999.99",
		"-9999999999999999.99", "99999999999999999.9", "1234567890123456789.5", "-0.00", "00012.50", "1_000"}
	for _, scale := range []int32{0, 2, 4, 18} {
		dt := &arrow.Decimal128Type{Precision: 38, Scale: scale}
		for _, s := range texts {
			got, gotErr := decimalNum(s, dt)
			want, wantErr := decimalText(s, dt)
			if got != want || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("scale %d, %q: %v (%v), want %v (%v)", scale, s, got, gotErr, want, wantErr)
			}
			if n, ok := decimalInt64(s, int(scale)); ok && (wantErr != nil || want.LowBits() != uint64(n) || want.HighBits() != n>>63) {
				t.Errorf("scale %d, %q: quick path %d, text %v (%v)", scale, s, n, want, wantErr)
			}
		}
	}
	if _, ok := decimalInt64("12.34", 2); !ok {
		t.Error("the common text was not taken by the quick path")
	}
	if n := testing.AllocsPerRun(50, func() {
		if _, err := decimalNum("-1234.5", &arrow.Decimal128Type{Precision: 18, Scale: 2}); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("decimalNum of a common text allocates %v times", n)
	}
}

// A value of another Go type than the builder's, or a decimal past 128 bits, is an error
// naming the conversion, not a crash.
func TestAppendValueRefusesWithoutPanic(t *testing.T) {
	cases := []struct {
		b array.Builder
		v any
	}{
		{array.NewInt64Builder(memory.DefaultAllocator), "x"},
		{array.NewStringBuilder(memory.DefaultAllocator), int64(1)},
		{array.NewTimestampBuilder(memory.DefaultAllocator, &arrow.TimestampType{Unit: arrow.Microsecond}), "2020-01-01"},
		{array.NewBooleanBuilder(memory.DefaultAllocator), int64(1)},
		{array.NewDecimal128Builder(memory.DefaultAllocator, &arrow.Decimal128Type{Precision: 38, Scale: 30}), strings.Repeat("9", 30)},
		{array.NewDecimal128Builder(memory.DefaultAllocator, &arrow.Decimal128Type{Precision: 38, Scale: 2}), int64(1)},
	}
	for _, c := range cases {
		n, err := appendValue(c.b, c.v)
		if err == nil || n != 0 || !strings.Contains(err.Error(), "no Arrow conversion of ") || c.b.Len() != 0 {
			t.Errorf("%T into %s: %d, %v (builder length %d)", c.v, c.b.Type(), n, err, c.b.Len())
		}
		c.b.Release()
	}
	b := array.NewDecimal128Builder(memory.DefaultAllocator, &arrow.Decimal128Type{Precision: 18, Scale: 2})
	defer b.Release()
	if n, err := appendValue(b, "-12.5"); err != nil || n != 16 || b.Len() != 1 {
		t.Fatalf("decimal: %d, %v", n, err)
	}
	if got := b.NewDecimal128Array().Value(0); got != decimal128.FromI64(-1250) {
		t.Errorf("decimal -12.5: %v", got)
	}
}
