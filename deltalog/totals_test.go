package deltalog

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/internal/testfiles"
)

// totalsFromFiles sums Files() as inspect did before Totals.
func totalsFromFiles(s *Snapshot) FileTotals {
	var t FileTotals
	for _, f := range s.Files() {
		t.Files++
		t.Bytes += f.Size
		if f.DeletionVector != nil {
			t.DeletedRows += f.DeletionVector.Cardinality
		}
		if n, ok := f.LiveRecords(); ok {
			t.Rows += n
		} else {
			t.FilesWithoutStats++
		}
	}
	return t
}

// checkTotals asserts that Totals on a fresh open of dir leaves the checkpoint's stats
// undecoded and equals the sums of Files() (which decodes them).
func checkTotals(t *testing.T, dir string) FileTotals {
	t.Helper()
	s, err := openDir(t, dir).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Totals()
	if err != nil {
		t.Fatal(err)
	}
	if s.lazy != nil && s.lazy.parts == nil {
		t.Errorf("Totals decoded the checkpoint's stats")
	}
	if want := totalsFromFiles(s); got != want {
		t.Errorf("Totals %+v, summing Files %+v", got, want)
	}
	if again, err := s.Totals(); err != nil || again != got {
		t.Errorf("Totals after Files: %+v, %v; want %+v", again, err, got)
	}
	return got
}

// Snapshot.Totals (what inspect prints) equals the sums over Files() without decoding a
// checkpoint's stats: on every golden table Spark, Databricks and delta-rs wrote (stats
// as JSON, stats_parsed only, deletion vectors, v2 checkpoints with sidecars), and on a
// table of this package's checkpoint with commits after it that remove files and add
// files with and without stats.
func TestTotalsMatchFiles(t *testing.T) {
	var dirs []string
	for _, root := range []string{testfiles.DeltaDir(t), protocolTablesDir} {
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(root, e.Name()))
			}
		}
	}
	checkpointed, statsParsed := 0, false
	for _, dir := range dirs {
		s, err := openDir(t, dir).Snapshot(context.Background())
		if err != nil || s.Version() < 0 {
			continue // tables other tests expect to be refused or empty
		}
		if s.lazy != nil {
			checkpointed++
		}
		statsParsed = statsParsed || filepath.Base(dir) == "v1-single-part-struct-stats-only"
		t.Run(filepath.Base(dir), func(t *testing.T) { checkTotals(t, dir) })
	}
	if checkpointed < 8 || !statsParsed {
		t.Fatalf("%d golden tables read from a checkpoint (stats_parsed among them: %v): the test lost its subjects", checkpointed, statsParsed)
	}

	t.Run("ours", func(t *testing.T) {
		dir := t.TempDir()
		if err := writeWideTable(dir, 300); err != nil {
			t.Fatal(err)
		}
		tbl := openDir(t, dir)
		noStats := lgAdd(9001)
		noStats.Stats = ""
		lgCommit(t, tbl, 3,
			Action{Remove: &Remove{Path: "part-00007-3f0e8a8e-6a55-4c3e-9d57-000000000007-c000.zstd.parquet", DeletionTimestamp: lgPtr(int64(1))}},
			Action{Add: lgAdd(9000)}, Action{Add: noStats})
		got := checkTotals(t, dir)
		var rows int64
		for i := range 300 {
			if i != 7 {
				rows += int64(1000 + i%7)
			}
		}
		n, _ := lgAdd(9000).NumRecords()
		if want := (FileTotals{Files: 301, Rows: rows + n, FilesWithoutStats: 1}); got.Files != want.Files || got.Rows != want.Rows || got.FilesWithoutStats != want.FilesWithoutStats {
			t.Errorf("totals %+v, want %+v", got, want)
		}

		// Totals while another goroutine's Files decodes the stats (go test -race).
		s, err := openDir(t, dir).Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { s.Files() })
		again, err := s.Totals()
		wg.Wait()
		if err != nil || again != got {
			t.Errorf("Totals beside Files: %+v, %v; want %+v", again, err, got)
		}
	})
}
