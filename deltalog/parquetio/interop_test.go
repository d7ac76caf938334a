package parquetio

import (
	"errors"
	"io"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	pgo "github.com/parquet-go/parquet-go"
)

// TestIndependentReaderSeesDeltaEncodings opens a written file with parquet-go, a reader
// that shares no code with the writer, and checks the logical types and the raw stored
// values of the largest row: what Spark and other engines decode.
func TestIndependentReaderSeesDeltaEncodings(t *testing.T) {
	f, size := writeAllTypes(t)
	pf, err := pgo.OpenFile(f, size)
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRows() != 3 {
		t.Fatalf("%d rows", pf.NumRows())
	}
	sc := pf.Schema()
	leaf := func(name string) pgo.LeafColumn {
		l, ok := sc.Lookup(name)
		if !ok {
			t.Fatalf("no column %s", name)
		}
		return l
	}
	for name, want := range map[string]string{
		"c_dto":       "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)",
		"c_datetime2": "TIMESTAMP(isAdjustedToUTC=false,unit=MICROS)",
		"_commit_ts":  "TIMESTAMP(isAdjustedToUTC=false,unit=MICROS)",
		"c_date":      "DATE",
		"c_dec9":      "DECIMAL(9,2)",
		"c_dec18":     "DECIMAL(18,4)",
		"c_dec38":     "DECIMAL(38,0)",
	} {
		lt := leaf(name).Node.Type().LogicalType()
		if lt == nil || lt.String() != want {
			t.Errorf("%s: logical type %v, want %s", name, lt, want)
		}
	}

	rows := make([]pgo.Row, 3)
	rr := pf.RowGroups()[0].Rows()
	defer rr.Close()
	if n, err := rr.ReadRows(rows); n != 3 && !errors.Is(err, io.EOF) {
		t.Fatalf("read %d rows: %v", n, err)
	}
	value := func(row int, name string) pgo.Value {
		idx := leaf(name).ColumnIndex
		for _, v := range rows[row] {
			if v.Column() == idx {
				return v
			}
		}
		t.Fatalf("row %d has no %s", row, name)
		return pgo.Value{}
	}
	if !value(0, "c_dto").IsNull() {
		t.Error("row 0 c_dto not NULL")
	}
	maxRow := 2
	if got := value(maxRow, "c_dto").Int64(); got != maxTime.UnixMicro() {
		t.Errorf("c_dto = %d, want %d", got, maxTime.UnixMicro())
	}
	if got := value(maxRow, "c_datetime2").Int64(); got != maxTime.UnixMicro() {
		t.Errorf("c_datetime2 = %d", got)
	}
	if got := value(1, "c_date").Int32(); got != int32(arrow.Date32FromTime(minTime)) {
		t.Errorf("c_date min = %d", got)
	}
	if got := value(maxRow, "c_dec9").Int32(); got != 999_999_999 {
		t.Errorf("c_dec9 = %d", got)
	}
	if got := value(maxRow, "c_dec18").Int64(); got != 999_999_999_999_999_999 {
		t.Errorf("c_dec18 = %d", got)
	}
	// FIXED_LEN_BYTE_ARRAY: big-endian two's complement of the unscaled value.
	raw := value(maxRow, "c_dec38").ByteArray()
	want, _ := new(big.Int).SetString(max38, 10)
	if got := new(big.Int).SetBytes(raw); len(raw) != 16 || got.Cmp(want) != 0 {
		t.Errorf("c_dec38 = %x (%s)", raw, got)
	}
	if got := value(1, "c_binary"); got.IsNull() || len(got.ByteArray()) != 0 {
		t.Errorf("empty binary read as %v", got)
	}
}
