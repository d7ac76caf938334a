package deltalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/mssqlcdc/mssqlcdc/internal/testfiles"
)

// goldenRow is one row of testdata/delta/README.md. rowsFiles and rowsStats are
// -1 for "n/a" / "-"; lastCheckpoint is -1 for "-".
type goldenRow struct {
	table          string
	version        int64
	lastCheckpoint int64
	files          int
	rowsFiles      int64
	rowsStats      int64
	reader, writer int
	// readFeature is the reader feature the table must be refused for ("" = readable);
	// writeFeature the one writing must be refused for ("" = writable).
	readFeature, writeFeature string
	// dataFeature is the feature CanReadData refuses ("" = rows readable).
	dataFeature string
}

var golden = []goldenRow{
	{"COVID-19_NYT", 0, -1, 8, 1111930, 1111930, 1, 2, "", "", ""},
	{"checkpoint_with_partitions", 2, 2, 2, -1, -1, 1, 2, "", "", ""},
	{"checkpoints", 12, -1, 12, -1, 12, 1, 2, "", "", ""},
	{"concurrent_workers", 0, -1, 0, 0, 0, 1, 1, "", "", ""},
	{"delta-0.8-empty", 1, -1, 0, 0, 0, 1, 2, "", "", ""},
	{"delta-0.8.0-null-partition", 0, -1, 2, 2, -1, 1, 2, "", "", ""},
	{"delta-0.8.0-partitioned", 0, -1, 6, 7, -1, 1, 2, "", "", ""},
	{"delta-0.8.0", 1, -1, 2, 4, 4, 1, 2, "", "", ""},
	{"delta-2.2.0-partitioned-types", 0, -1, 3, 3, 3, 1, 2, "", "", ""},
	{"delta-stats-optional", 2, -1, 2, 2, -1, 1, 2, "", "", ""},
	{"http_requests", 1, -1, 2, 1581, 1581, 1, 1, "", "", ""},
	{"latest_not_checkpointed", 3, 2, 1, -1, 5, 1, 2, "", "", ""},
	{"python-0.25.5-checkpoint", 1, 0, 2, 6, 6, 1, 2, "", "", ""},
	{"simple_table", 4, -1, 5, 3, -1, 1, 2, "", "", ""},
	{"simple_table_features", 4, -1, 5, 3, -1, 5, 7, "blahabl", "blahabl", ""},
	{"simple_table_with_checkpoint", 10, 10, 11, 11, -1, 1, 2, "", "", ""},
	{"table-with-dv-small", 1, -1, 1, -1, 10, 3, 7, "", "", ""},
	{"table_with_column_mapping", 0, -1, 2, 5, 5, 2, 5, "", FeatureColumnMapping, FeatureColumnMapping},
	{"table_with_edge_timestamps", 0, -1, 2, 2, 2, 1, 2, "", "", ""},
	{"with_checkpoint_no_last_checkpoint", 3, 2, 1, -1, 5, 1, 2, "", "", ""},
}

// TestGoldenTables reads every table in testdata/delta (written by Spark,
// Databricks and delta-rs) and matches the README's expected values, or the refusal.
func TestGoldenTables(t *testing.T) {
	root := testfiles.DeltaDir(t)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		if e.IsDir() {
			onDisk = append(onDisk, e.Name())
		}
	}
	var listed []string
	for _, g := range golden {
		listed = append(listed, g.table)
	}
	slices.Sort(listed)
	if !slices.Equal(onDisk, listed) {
		t.Errorf("tables on disk %v, golden rows %v: update the golden list with the README", onDisk, listed)
	}
	for _, g := range golden {
		t.Run(g.table, func(t *testing.T) { checkGolden(t, filepath.Join(root, g.table), g) })
	}
}

func checkGolden(t *testing.T, dir string, g goldenRow) {
	ctx := context.Background()
	tbl := openDir(t, dir)
	snap, err := tbl.Snapshot(ctx)
	if g.readFeature != "" {
		var fe *UnsupportedFeatureError
		if !errors.As(err, &fe) || fe.Feature != g.readFeature || !fe.Reader {
			t.Fatalf("Snapshot: got %v, want refusal naming reader feature %q", err, g.readFeature)
		}
		if !strings.Contains(err.Error(), g.readFeature) {
			t.Errorf("error %q does not name %q", err, g.readFeature)
		}
		return
	}
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if snap.Version() != g.version {
		t.Errorf("version %d, want %d", snap.Version(), g.version)
	}
	if p := snap.Protocol(); p.MinReaderVersion != g.reader || p.MinWriterVersion != g.writer {
		t.Errorf("protocol r%d/w%d, want r%d/w%d", p.MinReaderVersion, p.MinWriterVersion, g.reader, g.writer)
	}
	if got := len(snap.Files()); got != g.files {
		t.Errorf("%d live files, want %d", got, g.files)
	}
	wantCP := g.lastCheckpoint
	if snap.CheckpointVersion() != wantCP {
		t.Errorf("built from checkpoint %d, want %d", snap.CheckpointVersion(), wantCP)
	}
	if got := statsRows(snap); got != g.rowsStats {
		t.Errorf("rows from stats %d, want %d", got, g.rowsStats)
	}
	if g.rowsFiles >= 0 {
		if got := fileRows(t, dir, snap); got != g.rowsFiles {
			t.Errorf("rows from files %d, want %d", got, g.rowsFiles)
		}
	}
	checkRefusal(t, "CanWrite", snap.CanWrite(), g.writeFeature, false)
	checkRefusal(t, "CanReadData", snap.CanReadData(), g.dataFeature, true)
	if _, err := snap.ArrowSchema(); err != nil {
		t.Errorf("ArrowSchema: %v", err)
	}
}

func checkRefusal(t *testing.T, what string, err error, feature string, reader bool) {
	t.Helper()
	if feature == "" {
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		return
	}
	var fe *UnsupportedFeatureError
	if !errors.As(err, &fe) || fe.Feature != feature || fe.Reader != reader {
		t.Errorf("%s: got %v, want refusal of feature %q (reader %t)", what, err, feature, reader)
	}
}

// statsRows sums numRecords over the live files, -1 when a file has no row count.
func statsRows(s *Snapshot) int64 {
	var n int64
	for _, f := range s.Files() {
		r, ok := f.NumRecords()
		if !ok {
			return -1
		}
		n += r
	}
	return n
}

// fileRows counts the rows of the live files from their Parquet footers.
func fileRows(t *testing.T, dir string, s *Snapshot) int64 {
	var n int64
	for _, f := range s.Files() {
		pf, err := file.OpenParquetFile(filepath.Join(dir, filepath.FromSlash(f.DecodedPath())), false)
		if err != nil {
			t.Fatalf("open data file: %v", err)
		}
		n += pf.NumRows()
		pf.Close()
	}
	return n
}
