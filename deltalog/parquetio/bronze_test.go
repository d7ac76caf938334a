package parquetio

import (
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// allTypeColumns has one captured column per SQL Server type bronze maps.
var allTypeColumns = []source.Column{
	{Name: "c_bit", DataType: "bit"},
	{Name: "c_tinyint", DataType: "tinyint"},
	{Name: "c_smallint", DataType: "smallint"},
	{Name: "c_int", DataType: "int"},
	{Name: "c_bigint", DataType: "bigint"},
	{Name: "c_real", DataType: "real"},
	{Name: "c_float", DataType: "float"},
	{Name: "c_dec9", DataType: "decimal", Precision: 9, Scale: 2},
	{Name: "c_dec18", DataType: "numeric", Precision: 18, Scale: 4},
	{Name: "c_dec38", DataType: "decimal", Precision: 38, Scale: 0},
	{Name: "c_dec38s38", DataType: "decimal", Precision: 38, Scale: 38},
	{Name: "c_money", DataType: "money"},
	{Name: "c_smallmoney", DataType: "smallmoney"},
	{Name: "c_date", DataType: "date"},
	{Name: "c_datetime", DataType: "datetime"},
	{Name: "c_datetime2", DataType: "datetime2", DatetimePrecision: 7},
	{Name: "c_smalldatetime", DataType: "smalldatetime"},
	{Name: "c_dto", DataType: "datetimeoffset", DatetimePrecision: 7},
	{Name: "c_time", DataType: "time", DatetimePrecision: 7},
	{Name: "c_char", DataType: "char", MaxLength: 10},
	{Name: "c_varchar", DataType: "varchar", MaxLength: -1},
	{Name: "c_nchar", DataType: "nchar", MaxLength: 10},
	{Name: "c_nvarchar", DataType: "nvarchar", MaxLength: 4000},
	{Name: "c_text", DataType: "text"},
	{Name: "c_ntext", DataType: "ntext"},
	{Name: "c_xml", DataType: "xml"},
	{Name: "c_guid", DataType: "uniqueidentifier"},
	{Name: "c_binary", DataType: "binary", MaxLength: 16},
	{Name: "c_varbinary", DataType: "varbinary", MaxLength: -1},
	{Name: "c_image", DataType: "image"},
	{Name: "c_rowversion", DataType: "rowversion"},
}

// benchColumns are a typical orders table.
var benchColumns = []source.Column{
	{Name: "order_id", DataType: "bigint"},
	{Name: "customer_id", DataType: "int"},
	{Name: "status", DataType: "varchar", MaxLength: 20},
	{Name: "amount", DataType: "decimal", Precision: 18, Scale: 2},
	{Name: "quantity", DataType: "smallint"},
	{Name: "created_at", DataType: "datetime2", DatetimePrecision: 7},
	{Name: "updated_at", DataType: "datetimeoffset", DatetimePrecision: 7},
	{Name: "note", DataType: "nvarchar", MaxLength: 200},
	{Name: "is_gift", DataType: "bit"},
	{Name: "row_version", DataType: "rowversion"},
}

func mustSchema(tb testing.TB, cols []source.Column) *arrow.Schema {
	tb.Helper()
	s, err := bronze.Schema(cols)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	epoch   = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
)

// decimalOf parses an integer string (the unscaled value).
func decimalOf(s string) decimal128.Num {
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return decimal128.FromBigInt(b)
}

const (
	max38 = "99999999999999999999999999999999999999"
	min38 = "-99999999999999999999999999999999999999"
)

// rowKind picks the values of a generated row: the NULL row, the smallest values, the
// largest values, or ordinary values derived from i.
type rowKind int

const (
	rowNull rowKind = iota
	rowMin
	rowMax
	rowPlain
)

// bronzeRecord builds n rows of a bronze schema. Rows 0, 1 and 2 are the NULL, smallest
// and largest rows when extremes is set; the rest are ordinary rows. Every value is a pure
// function of the row number, so benchmarks and tests see the same data.
func bronzeRecord(mem memory.Allocator, s *arrow.Schema, n int, extremes bool) arrow.RecordBatch {
	return bronzeRecordFrom(mem, s, 0, n, extremes)
}

// bronzeRecordFrom is bronzeRecord with row numbers start..start+n-1.
func bronzeRecordFrom(mem memory.Allocator, s *arrow.Schema, start, n int, extremes bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	fields := s.Fields()
	for i := start; i < start+n; i++ {
		kind := rowPlain
		if extremes && i < 3 {
			kind = rowKind(i)
		}
		for c, f := range fields {
			appendValue(b.Field(c), f, i, kind)
		}
	}
	return b.NewRecordBatch()
}

var statuses = []string{"new", "paid", "shipped", "delivered", "cancelled", "returned"}

func appendValue(fb array.Builder, f arrow.Field, i int, kind rowKind) {
	if kind == rowNull {
		fb.AppendNull()
		return
	}
	ts := epoch.Add(time.Duration(i)*1237*time.Millisecond + time.Duration(i%1000)*time.Microsecond)
	switch kind {
	case rowMin:
		ts = minTime
	case rowMax:
		ts = maxTime
	}
	switch fb := fb.(type) {
	case *array.BooleanBuilder:
		fb.Append(kind == rowMax || i%3 == 0)
	case *array.Int16Builder:
		v := int16(i % 30000)
		if kind == rowMin {
			v = -32768
		} else if kind == rowMax {
			v = 32767
		}
		fb.Append(v)
	case *array.Int32Builder:
		v := int32(i * 7)
		if f.Name == bronze.ColOperation {
			v = int32(1 + i%4)
		}
		if kind == rowMin {
			v = -2147483648
		} else if kind == rowMax {
			v = 2147483647
		}
		fb.Append(v)
	case *array.Int64Builder:
		v := int64(i) * 1_000_003
		if kind == rowMin {
			v = -1 << 63
		} else if kind == rowMax {
			v = 1<<63 - 1
		}
		fb.Append(v)
	case *array.Float32Builder:
		v := float32(i) * 0.25
		if kind == rowMin {
			v = -3.4e38
		} else if kind == rowMax {
			v = 3.4e38
		}
		fb.Append(v)
	case *array.Float64Builder:
		v := float64(i) / 3
		if kind == rowMin {
			v = -1.79e308
		} else if kind == rowMax {
			v = 1.79e308
		}
		fb.Append(v)
	case *array.Decimal128Builder:
		p := fb.Type().(*arrow.Decimal128Type).Precision
		switch kind {
		case rowMin:
			fb.Append(decimalOf(min38[:p+1]))
		case rowMax:
			fb.Append(decimalOf(max38[:p]))
		default:
			fb.Append(decimal128.FromI64(int64(i)*12345 - 500_000))
		}
	case *array.Date32Builder:
		fb.Append(arrow.Date32FromTime(ts))
	case *array.TimestampBuilder:
		fb.Append(arrow.Timestamp(ts.UnixMicro()))
	case *array.StringBuilder:
		switch {
		case kind == rowMin:
			fb.Append("")
		case kind == rowMax:
			fb.Append("\U0010FFFF\U0010FFFFzzzz long text, past the thirty-two character prefix: ünïcödé ✓")
		case f.Name == "status":
			fb.Append(statuses[i%len(statuses)])
		case f.Name == bronze.ColCaptureInstance:
			fb.Append("dbo_orders")
		case f.Name == bronze.ColStartLSN || f.Name == bronze.ColSeqval || f.Name == bronze.ColSnapshot:
			fb.Append(fmt.Sprintf("0x%08X%08X%04X", 42, i/3, i%3))
		default:
			fb.Append(fmt.Sprintf("row %d — note %x", i, i*2654435761))
		}
	case *array.BinaryBuilder:
		switch kind {
		case rowMin:
			fb.Append([]byte{})
		case rowMax:
			fb.Append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		default:
			fb.Append([]byte{0, 0, 0, 0, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)})
		}
	default:
		panic(fmt.Sprintf("no generator for %T", fb))
	}
}
