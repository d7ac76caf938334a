package seed_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/internal/testfiles"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// goldenCase maps a Delta table other engines wrote (testdata/delta) onto a simulated
// table of matching columns (lower-case names where the copy's are mixed or upper case).
type goldenCase struct {
	table string
	cols  []source.Column
	// copyCols are the copy's columns the captured ones are read from, in cols' order.
	copyCols []string
	rows     int64
	// want, when set, are the copy's rows as texts (in cols' order, sorted), from its
	// log's statistics and partition values.
	want []string
}

func c(name, typ string, n int) source.Column {
	return source.Column{Name: name, DataType: typ, MaxLength: n, DatetimePrecision: 7, Nullable: true}
}

var goldenCases = []goldenCase{
	// Spark on Databricks: timestamps as INT96, one of them in year 9999 (past Arrow's
	// nanosecond range), upper-case names.
	{table: "table_with_edge_timestamps", rows: 2,
		cols:     []source.Column{c("big_date", "datetime2", 0), c("normal_date", "datetime2", 0), c("some_value", "int", 0)},
		copyCols: []string{"BIG_DATE", "NORMAL_DATE", "SOME_VALUE"},
		want:     []string{"9999-12-30T00:00:00|2022-02-01T00:00:00|2", "9999-12-31T00:00:00|2022-01-01T00:00:00|1"}},
	// Partitioned by a text date, mixed-case names, a short, a long, microsecond
	// timestamps; two columns of the copy are not captured and dropped.
	{table: "http_requests", rows: 1581,
		cols: []source.Column{c("date", "date", 0), c("clientip", "varchar", 45), c("clientrequestmethod", "varchar", 10),
			c("edgeendtimestamp", "datetime2", 0), c("edgeresponsebytes", "bigint", 0), c("edgeresponsestatus", "smallint", 0)},
		copyCols: []string{"date", "ClientIP", "ClientRequestMethod", "EdgeEndTimestamp", "EdgeResponseBytes", "EdgeResponseStatus"}},
	// delta-rs: integer and text partition columns.
	{table: "delta-2.2.0-partitioned-types", rows: 3,
		cols:     []source.Column{c("c1", "int", 0), c("c2", "nchar", 1), c("c3", "int", 0)},
		copyCols: []string{"c1", "c2", "c3"},
		want:     []string{"4|c|5", "5|b|6", "6|a|4"}},
	// A NULL partition value (__HIVE_DEFAULT_PARTITION__).
	{table: "delta-0.8.0-null-partition", rows: 2,
		cols:     []source.Column{c("k", "varchar", 5), c("v", "bigint", 0)},
		copyCols: []string{"k", "v"},
	},
}

// Copies from Delta tables Spark, Databricks and delta-rs wrote map onto a simulated table
// of matching columns, and every value round-trips: bronze holds exactly the copy's rows,
// each value cast to the captured column's type.
func TestGoldenCopiesRoundTrip(t *testing.T) {
	for _, gc := range goldenCases {
		t.Run(gc.table, func(t *testing.T) {
			e := newEnv(t, testlake.Local, cdcsim.TableSpec{Name: "g", Columns: gc.cols}, cdcsim.Config{})
			e.db.Idle()
			url := testfiles.DeltaTable(t, gc.table)
			res := e.mustRun(seed.Request{Copy: url, AsOf: e.maxLSN().String()})
			if *res.Commit.Rows != gc.rows {
				t.Fatalf("seeded %d rows, want %d", *res.Commit.Rows, gc.rows)
			}
			var names []string
			for _, col := range gc.cols {
				names = append(names, col.Name)
			}
			var got []string
			e.scanBronze(names, func(rec arrow.RecordBatch) { got = append(got, rowTexts(rec)...) }, nil)
			slices.Sort(got)
			// The copy as deltalog's own scan reads it (and, where given, as its log's
			// statistics say it is).
			want := copyRows(t, url, gc.copyCols)
			if gc.want != nil && strings.Join(gc.want, ",") != strings.Join(want, ",") {
				t.Fatalf("the copy reads %v, its statistics say %v", want, gc.want)
			}
			if len(got) != len(want) {
				t.Fatalf("%d rows in bronze, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("row %d: bronze %q, copy %q", i, got[i], want[i])
				}
			}
		})
	}
}

// rowTexts is each row of rec as its values' texts joined by |, a zone suffix dropped (a
// copy's UTC timestamp and bronze's datetime2 hold the same wall clock).
func rowTexts(rec arrow.RecordBatch) []string {
	out := make([]string, rec.NumRows())
	for i := range out {
		vals := make([]string, rec.NumCols())
		for j := range vals {
			vals[j] = strings.TrimSuffix(rec.Column(j).ValueStr(i), "Z")
		}
		out[i] = strings.Join(vals, "|")
	}
	return out
}

// copyRows reads the columns of the Delta table at dir through deltalog's scan, sorted.
func copyRows(t *testing.T, dir string, cols []string) []string {
	t.Helper()
	ctx := context.Background()
	st, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := localfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := deltalog.Open(st, ls, deltalog.Options{}).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rowTexts(rec)...)
		rec.Release()
	}
	slices.Sort(out)
	return out
}

// A folder of Parquet files partitioned Hive-style (year=/month=/day=, no Delta log): the
// partition values come from the folder names and are cast to the captured columns' types.
func TestParquetFolderWithHivePartitions(t *testing.T) {
	src := testfiles.DeltaTable(t, "delta-0.8.0-partitioned")
	e := newEnv(t, testlake.Local, cdcsim.TableSpec{Name: "p", Columns: []source.Column{
		c("value", "nvarchar", 10), c("year", "smallint", 0), c("month", "tinyint", 0), c("day", "int", 0)}}, cdcsim.Config{})
	e.db.Idle()
	dst := e.lake.URL("export")
	// The data files alone: a plain Parquet folder, as a Spark job's output without Delta.
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Files Spark leaves beside the data are not read.
	if err := os.WriteFile(filepath.Join(dst, "_SUCCESS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := e.mustRun(seed.Request{Copy: dst, AsOf: e.maxLSN().String()})
	if res.Plan.Files != 6 || *res.Commit.Rows != 7 {
		t.Fatalf("seed %+v, want 7 rows from 6 files", res)
	}
	var got []string
	e.scanBronze([]string{"value", "year", "month", "day"}, func(rec arrow.RecordBatch) { got = append(got, rowTexts(rec)...) }, nil)
	slices.Sort(got)
	want := copyRows(t, src, []string{"value", "year", "month", "day"})
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("bronze %v\ncopy   %v", got, want)
	}
	// One file of the folder, named by its URL, is a copy of its rows alone.
	one := filepath.Join(dst, "year=2021", "month=4", "day=5", "part-00000-c5856301-3439-4032-a6fc-22b7bc92bebb.c000.snappy.parquet")
	e2 := newEnv(t, testlake.Local, cdcsim.TableSpec{Name: "p", Columns: []source.Column{c("value", "nvarchar", 10)}}, cdcsim.Config{})
	e2.db.Idle()
	if r := e2.mustRun(seed.Request{Copy: one, AsOf: e2.maxLSN().String()}); r.Plan.Files != 1 || *r.Commit.Rows != 1 {
		t.Fatalf("one-file copy %+v", r)
	}
}

// An empty copy (a Delta table without live files) seeds an empty snapshot: its commit
// adds no file and records its txn alone, by which a rerun and the stream find it.
func TestEmptyCopy(t *testing.T) {
	e := newEnv(t, testlake.Local, tSpec, cdcsim.Config{})
	e.db.Idle()
	url := testfiles.DeltaTable(t, "delta-0.8-empty")
	req := seed.Request{Copy: url, AsOf: e.maxLSN().String(), AllowMissingColumns: true}
	res := e.mustRun(req)
	if res.Plan.Files != 0 || *res.Commit.Rows != 0 || res.Commit.Version != 0 {
		t.Fatalf("empty seed %+v", res)
	}
	again := e.mustRun(req)
	if again.Plan.Status != seed.Found || again.Offset != res.Offset || e.bronzeVersion() != 0 {
		t.Fatalf("rerun of an empty seed: %+v", again)
	}
	e.insert(1)
	e.stream()
	e.check()
}

// A Databricks table with a deletion vector: the deleted rows are not seeded, and a value
// that cannot be cast is located in the file with the deleted rows counted.
func TestCopyWithDeletionVector(t *testing.T) {
	url := testfiles.DeltaTable(t, "table-with-dv-small")
	e := newEnv(t, testlake.Local, cdcsim.TableSpec{Name: "g", Columns: []source.Column{c("value", "int", 0)}}, cdcsim.Config{})
	e.db.Idle()
	res := e.mustRun(seed.Request{Copy: url, AsOf: e.maxLSN().String()})
	var got []string
	e.scanBronze([]string{"value"}, func(rec arrow.RecordBatch) { got = append(got, rowTexts(rec)...) }, nil)
	slices.Sort(got)
	// Values 0..9 were written, then 0 and 9 deleted (DELETE ... WHERE value IN (0, 9)).
	if *res.Commit.Rows != 8 || strings.Join(got, ",") != "1,2,3,4,5,6,7,8" {
		t.Fatalf("seeded %d rows: %v", *res.Commit.Rows, got)
	}
	// As a bit column, 2 is the first value refused: the second row read, the third of
	// the file (row 0 is deleted).
	e2 := newEnv(t, testlake.Local, cdcsim.TableSpec{Name: "g", Columns: []source.Column{c("value", "bit", 0)}}, cdcsim.Config{})
	e2.db.Idle()
	_, err := e2.run(seed.Request{Copy: url, AsOf: e2.maxLSN().String()})
	var ce *seed.CastError
	if !errors.As(err, &ce) || ce.Value != "2" || ce.RowGroup != 0 || ce.Row != 2 || ce.FileRow != 2 {
		t.Fatalf("cast error %+v (%v)", ce, err)
	}
}
