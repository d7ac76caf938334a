// Command rebuildstate prints the current table core/rebuild derives from a bronze table,
// for the interop tests to compare with docs/bronze.md's query run by DuckDB. The demo
// compares the same rebuild with the simulator's table, so the two checks together hold
// the documented query to the source table, row by row.
//
// Usage: rebuildstate TABLE_PATH KEY[,KEY...]
//
// Output: one JSON object per row, in key order, mapping each captured column to its
// value as rebuild holds it (arrow's text form of the bronze type), or null (rebuild.Null).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: rebuildstate TABLE_PATH KEY[,KEY...]")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1], strings.Split(os.Args[2], ",")); err != nil {
		fmt.Fprintln(os.Stderr, "rebuildstate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, table string, keys []string) error {
	store, logs, err := location.Open(ctx, table, location.Config{})
	if err != nil {
		return err
	}
	snap, err := deltalog.Open(store, logs, deltalog.Options{}).Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	st, _, err := rebuild.FromBronze(ctx, snap, keys)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	for _, k := range slices.Sorted(maps.Keys(st.Rows)) {
		row := make(map[string]*string, len(st.Columns))
		for i, c := range st.Columns {
			if v := st.Rows[k][i]; v != rebuild.Null {
				row[c] = &v
			} else {
				row[c] = nil
			}
		}
		if err := enc.Encode(row); err != nil {
			return err
		}
	}
	return w.Flush()
}
