package parquetio

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/internal/testfiles"
)

// TestReadsSparkInt96EdgeTimestamps reads the Databricks-written files of the golden table
// testdata/delta/table_with_edge_timestamps: INT96 timestamps in year 9999, which
// pqarrow alone refuses (outside the nanosecond range). Values are the file's stats.
func TestReadsSparkInt96EdgeTimestamps(t *testing.T) {
	st, err := localstore.New(testfiles.DeltaTable(t, "table_with_edge_timestamps"))
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][3]any{
		"part-00000-a9dd181d-61aa-491d-b3c9-3eea548de6cb-c000.snappy.parquet": {time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC), int32(1)},
		"part-00001-f804d355-db40-4e13-a624-ddd50ce7f5c4-c000.snappy.parquet": {time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC), time.Date(2022, 2, 1, 0, 0, 0, 0, time.UTC), int32(2)},
	} {
		got := readAll(t, st, file, nil)
		if got.NumRows() != 1 || got.NumCols() != 3 {
			t.Fatalf("%s: %d rows × %d cols", file, got.NumRows(), got.NumCols())
		}
		for i, name := range []string{"BIG_DATE", "NORMAL_DATE"} {
			f := got.Schema().Field(i)
			if f.Name != name || !arrow.TypeEqual(f.Type, int96Type) {
				t.Errorf("%s: field %d is %s %s", file, i, f.Name, f.Type)
			}
			v := time.UnixMicro(int64(got.Column(i).(*array.Timestamp).Value(0))).UTC()
			if !v.Equal(want[i].(time.Time)) {
				t.Errorf("%s: %s = %s, want %s", file, name, v, want[i])
			}
		}
		if v := got.Column(2).(*array.Int32).Value(0); v != want[2] {
			t.Errorf("%s: SOME_VALUE = %d", file, v)
		}
		got.Release()

		// Projection mixing an INT96 column and another, in the asked order.
		proj := readAll(t, st, file, []string{"some_value", "BIG_DATE"})
		if proj.NumCols() != 2 || proj.Schema().Field(0).Name != "SOME_VALUE" || proj.Schema().Field(1).Name != "BIG_DATE" {
			t.Errorf("%s: projection %s", file, proj.Schema())
		}
		proj.Release()
	}
}

func TestInt96Micros(t *testing.T) {
	mk := func(day int32, nanos int64) parquet.Int96 {
		var v parquet.Int96
		for i := range 8 {
			v[i] = byte(uint64(nanos) >> (8 * i))
		}
		for i := range 4 {
			v[8+i] = byte(uint32(day) >> (8 * i))
		}
		return v
	}
	if got := int96Micros(mk(julianUnixEpoch, 1_500)); got != 1 {
		t.Errorf("epoch + 1.5µs: %d", got)
	}
	// 0001-01-01 is Julian day 1721426.
	if got := int96Micros(mk(1_721_426, 0)); got != minTime.UnixMicro() {
		t.Errorf("0001-01-01: %d, want %d", got, minTime.UnixMicro())
	}
}

// TestReadsOtherEnginesDataFiles reads every data file of testdata/delta (written by
// Spark, Databricks and delta-rs; the large COVID-19_NYT set aside) and checks the row
// count against the file's footer.
func TestReadsOtherEnginesDataFiles(t *testing.T) {
	root := testfiles.DeltaDir(t)
	st, err := localstore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (d.Name() == "_delta_log" || d.Name() == "COVID-19_NYT") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".parquet") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		pf, err := file.NewParquetReader(f)
		if err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", rel, err)
		}
		want := pf.NumRows()
		pf.Close()
		got := readAll(t, st, filepath.ToSlash(rel), nil)
		if got.NumRows() != want {
			t.Errorf("%s: read %d rows, footer says %d", rel, got.NumRows(), want)
		}
		got.Release()
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Errorf("read only %d files", n)
	}
}
