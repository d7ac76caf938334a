package seed_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// mapStrings is a text column of a's values through fn (NULL stays NULL).
func mapStrings(fn func(a arrow.Array, i int) string) func(arrow.Array) arrow.Array {
	return func(a arrow.Array) arrow.Array {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(fn(a, i))
			}
		}
		return b.NewArray()
	}
}

// timeOfDay is a time64[ns] column of "hh:mm:ss.fffffff" texts.
func timeOfDay(a arrow.Array) arrow.Array {
	b := array.NewTime64Builder(memory.DefaultAllocator, arrow.FixedWidthTypes.Time64ns.(*arrow.Time64Type))
	defer b.Release()
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		t, err := time.Parse("15:04:05.9999999", a.(*array.String).Value(i))
		if err != nil {
			panic(err)
		}
		b.Append(arrow.Time64(t.Sub(t.Truncate(24 * time.Hour))))
	}
	return b.NewArray()
}

// allTypesExport is dbo.all_types as a user's export holds it: every type in another
// writer's choice (narrower or wider integers, floats for decimals, text for money and
// dates, nanosecond and INT96 timestamps, lower-case GUIDs, a time of day), names upper
// case.
var allTypesExport = map[string]userColumn{
	"id":                 {name: "ID"},
	"c_bit":              {name: "C_BIT", typ: arrow.PrimitiveTypes.Int8},
	"c_tinyint":          {name: "C_TINYINT", typ: arrow.PrimitiveTypes.Uint8},
	"c_smallint":         {typ: arrow.PrimitiveTypes.Int32},
	"c_int":              {typ: arrow.PrimitiveTypes.Int64},
	"c_real":             {typ: arrow.PrimitiveTypes.Float64},
	"c_numeric":          {typ: arrow.PrimitiveTypes.Float64},
	"c_decimal":          {typ: &arrow.Decimal128Type{Precision: 38, Scale: 18}},
	"c_money":            {fn: mapStrings(func(a arrow.Array, i int) string { return a.ValueStr(i) })},
	"c_date":             {fn: mapStrings(func(a arrow.Array, i int) string { return a.ValueStr(i) })},
	"c_datetime":         {typ: &arrow.TimestampType{Unit: arrow.Nanosecond}},
	"c_datetime2":        {typ: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
	"c_smalldatetime":    {typ: &arrow.TimestampType{Unit: arrow.Millisecond}},
	"c_time":             {fn: timeOfDay},
	"c_uniqueidentifier": {fn: mapStrings(func(a arrow.Array, i int) string { return strings.ToLower(a.ValueStr(i)) })},
	"c_rowversion":       {typ: arrow.BinaryTypes.LargeBinary},
}

// Every SQL Server type, exported in other writers' types (some of the files with Spark's
// INT96 timestamps), seeded and streamed: bronze rebuilds the table value for value.
func TestEveryTypeRoundTrips(t *testing.T) {
	ctx := context.Background()
	def := workload.AllTypes()
	e := newEnv(t, testlake.Local, def.Spec, cdcsim.Config{})
	gen := workload.New(e.db, workload.Config{Seed: 11, TxnSize: 3, Rate: 20})
	if err := gen.Adopt(def); err != nil {
		t.Fatal(err)
	}
	if err := gen.Load("all_types", 300, 100); err != nil {
		t.Fatal(err)
	}
	asOf := e.maxLSN()
	rows := e.readTable()
	url := e.lake.URL("copy")
	for i := 0; ; i++ {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out := export(t, rec, allTypesExport)
		rec.Release()
		e.writeParquet(url, "part-"+string(rune('a'+i))+".parquet", i%2 == 0, out)
		out.Release()
	}
	rows.Close()
	if err := gen.Step(60); err != nil {
		t.Fatal(err)
	}
	res := e.mustRun(seed.Request{Copy: url, AsOf: asOf.String()})
	if *res.Commit.Rows != 300 {
		t.Fatalf("seeded %d rows", *res.Commit.Rows)
	}
	e.stream()
	e.check()
}
