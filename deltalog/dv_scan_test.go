package deltalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// scanStrings scans snap (every column, or cols) and returns each row rendered as the
// values of cols joined by "|", sorted.
func scanStrings(t *testing.T, snap *Snapshot, cols ...string) []string {
	t.Helper()
	ctx := context.Background()
	it, err := snap.Scan(ctx, ScanOptions{Columns: cols})
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
		for r := range int(rec.NumRows()) {
			s := ""
			for c := range int(rec.NumCols()) {
				if c > 0 {
					s += "|"
				}
				s += valueString(rec.Column(c), r)
			}
			out = append(out, s)
		}
		rec.Release()
	}
	sort.Strings(out)
	return out
}

func valueString(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.Int64:
		return fmt.Sprint(a.Value(i))
	case *array.Int32:
		return fmt.Sprint(a.Value(i))
	}
	return a.ValueStr(i)
}

func sortedStrings(n int, f func(i int) (string, bool)) []string {
	var out []string
	for i := range n {
		if s, ok := f(i); ok {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// The tables with deletion vectors that Spark, Databricks and delta-rs wrote read as
// their writers' tests expect: the deleted rows never come back, and every row total we
// report (LiveRecords, Snapshot.LiveRows) counts live rows.
func TestScanDeletionVectorTables(t *testing.T) {
	// Spark's DELETE WHERE col1 = 2n for n < 15 on rows (x%10, x, "foo"+x%5), x < 50.
	dvPartitioned := sortedStrings(50, func(x int) (string, bool) {
		return fmt.Sprintf("%d|%d|foo%d", x%10, x, x%5), !(x%2 == 0 && x < 30)
	})
	for _, c := range []struct {
		table    string
		cols     []string
		want     []string
		physical int64 // numRecords over live files; -1: not checked
	}{
		{"table-with-dv-small", []string{"value"}, sortedStrings(10, func(x int) (string, bool) { return fmt.Sprint(x), x != 0 && x != 9 }), 10},
		{"with-short-dv", []string{"id"}, sortedStrings(10, func(x int) (string, bool) { return fmt.Sprint(x), x >= 3 }), 10},
		{"log-replay-dv-key-cases", []string{"id"}, sortedStrings(50, func(x int) (string, bool) { return fmt.Sprint(x), x != 0 && x != 7 && x != 14 }), 50},
		{"dv-partitioned-with-checkpoint", []string{"part", "col1", "col2"}, dvPartitioned, -1},
	} {
		t.Run(c.table, func(t *testing.T) {
			snap, err := openDir(t, filepath.Join(protocolTablesDir, c.table)).Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := scanStrings(t, snap, c.cols...); !slices.Equal(got, c.want) {
				t.Fatalf("rows\n%v\nwant\n%v", got, c.want)
			}
			var live, physical int64
			for _, f := range snap.Files() {
				n, ok := f.LiveRecords()
				p, _ := f.NumRecords()
				if !ok {
					t.Fatalf("%s: no numRecords", f.Path)
				}
				live, physical = live+n, physical+p
			}
			if live != int64(len(c.want)) || (c.physical >= 0 && physical != c.physical) {
				t.Fatalf("live %d, physical %d; want %d, %d", live, physical, len(c.want), c.physical)
			}
		})
	}
}
