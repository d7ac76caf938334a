package deltalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func ids(ns ...[]int) []string {
	var out []string
	for _, n := range ns {
		for _, v := range n {
			out = append(out, fmt.Sprint(v))
		}
	}
	slices.Sort(out)
	return out
}

func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Tables in layouts other engines write read as their writers' tests expect: v2
// checkpoints (JSON or Parquet top level) with sidecars, log compaction files (ignored, as
// the protocol allows: the commits they stand for are read), stats only in a checkpoint's
// stats_parsed.
func TestReadProtocolLayouts(t *testing.T) {
	for _, c := range []struct {
		table      string
		cols       []string
		want       []string
		checkpoint int64
	}{
		{"v2-checkpoint-json", []string{"id"}, ids(upTo(10)), 2},
		{"v2-checkpoint-parquet", []string{"id"}, ids(upTo(10)), 2},
		{"v2-checkpoints-json-with-sidecars", []string{"id"}, ids([]int{0, 0, 0}, upTo(30), upTo(100), upTo(100), upTo(1000)), 6},
		{"v2-checkpoints-parquet-with-sidecars", []string{"id"}, ids([]int{0, 0, 0}, upTo(30), upTo(100), upTo(100), upTo(1000)), 6},
		{"compacted-log-files-table", []string{"id", "comment"}, []string{"0|new", "10|merge1-insert", "12|merge2-insert", "1|after-large-delete", "2|"}, -1},
		{"v1-single-part-struct-stats-only", []string{"id"}, ids([]int{1, 2, 3, 4, 5}), 5},
	} {
		t.Run(c.table, func(t *testing.T) {
			snap, err := openDir(t, filepath.Join(protocolTablesDir, c.table)).Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if snap.CheckpointVersion() != c.checkpoint {
				t.Errorf("read from checkpoint %d, want %d", snap.CheckpointVersion(), c.checkpoint)
			}
			if got := scanStrings(t, snap, c.cols...); !slices.Equal(got, c.want) {
				t.Fatalf("%d rows\n%v\nwant %d\n%v", len(got), got, len(c.want), c.want)
			}
			// Every live file's stats are known, from add.stats or stats_parsed, and total
			// the live rows.
			var live int64
			for _, f := range snap.Files() {
				n, ok := f.LiveRecords()
				if !ok {
					t.Fatalf("%s: no numRecords (stats %q)", f.Path, f.Stats)
				}
				live += n
			}
			if live != int64(len(c.want)) {
				t.Fatalf("stats count %d live rows, scan %d", live, len(c.want))
			}
		})
	}
}

// A v2 checkpoint whose sidecar is gone is not half-read: the reader falls back to an
// older checkpoint or to the commits, and gets the same rows.
func TestV2CheckpointMissingSidecarFallsBack(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(protocolTablesDir, "v2-checkpoint-parquet"))); err != nil {
		t.Fatal(err)
	}
	side, err := filepath.Glob(filepath.Join(dir, "_delta_log", "_sidecars", "*.parquet"))
	if err != nil || len(side) == 0 {
		t.Fatalf("sidecars %v %v", side, err)
	}
	if err := os.Remove(side[0]); err != nil {
		t.Fatal(err)
	}
	snap, err := openDir(t, dir).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.CheckpointVersion() == 2 {
		t.Fatal("read from the checkpoint whose sidecar is missing")
	}
	if got := scanStrings(t, snap, "id"); !slices.Equal(got, ids(upTo(10))) {
		t.Fatalf("rows %v", got)
	}
}

// Column mapping is refused by feature name for data reads, never half-read; the log
// (files, stats, schema) stays readable.
func TestColumnMappingRefusedByName(t *testing.T) {
	for _, table := range []string{"table-with-columnmapping-mode-id", "table-with-columnmapping-mode-name", "dv-with-columnmapping"} {
		snap, err := openDir(t, filepath.Join(protocolTablesDir, table)).Snapshot(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		_, err = snap.Scan(context.Background(), ScanOptions{})
		var fe *UnsupportedFeatureError
		if !errors.As(err, &fe) || fe.Feature != FeatureColumnMapping || !fe.Reader {
			t.Errorf("%s: scan %v, want refusal of %s", table, err, FeatureColumnMapping)
		}
		if len(snap.Files()) == 0 {
			t.Errorf("%s: no live files", table)
		}
	}
}
