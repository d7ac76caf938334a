package deltalog

import (
	"os"
	"testing"
)

// TestMain removes, once every test and benchmark has run, the tables the benchmarks build
// once per process in the temporary directory (wideTableDir's deltalog-wide-*,
// benchTableDirs' deltalog-open-bench-*): they are kept for the whole run, so that each
// benchmark and each -count round measures the same table without building it again, and
// removed at the end rather than left in /tmp.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, root := range []string{wideTables.root, benchTables.root} {
		if root != "" {
			_ = os.RemoveAll(root)
		}
	}
	os.Exit(code)
}
