package snapshot_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// readExportManifest reads the export's completion marker; nil when there is none.
func readExportManifest(t *testing.T, dst storage.Store) *snapshot.ExportManifest {
	t.Helper()
	rc, err := dst.Get(context.Background(), snapshot.ExportMarker)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var m snapshot.ExportManifest
	if err := json.NewDecoder(rc).Decode(&m); err != nil {
		t.Fatalf("marker: %v", err)
	}
	return &m
}

// countRows reads every row of the listed files.
func countRows(t *testing.T, dst storage.Store, files []snapshot.ExportFile) int64 {
	t.Helper()
	ctx := context.Background()
	var n int64
	for _, f := range files {
		it, err := parquetio.ReadFile(ctx, dst, f.Path, nil)
		if err != nil {
			t.Fatalf("listed file %s: %v", f.Path, err)
		}
		var got int64
		for {
			rec, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got += rec.NumRows()
			rec.Release()
		}
		it.Close()
		if got != f.Rows {
			t.Fatalf("file %s holds %d rows, the marker says %d", f.Path, got, f.Rows)
		}
		n += got
	}
	return n
}

// An export killed at any call to its target (before the call takes effect or after,
// its answer lost) leaves either no completion marker, or a marker listing files that
// hold every row exactly once: a reader that checks the marker never takes a partial
// export for a whole one (issue 12 item 4). A rerun into the partial target is refused,
// by type, saying it holds no marker; into an empty one it succeeds.
func TestExportKilledAtEveryCallLeavesNoMarkerOrAWholeExport(t *testing.T) {
	const rows = 30
	e := newEnv(t, keyCases[0], rows)
	e.spec.Options.NumPartitions = 3
	ctx := context.Background()
	clean := &deltatest.Faults{}
	dir := t.TempDir()
	raw, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Export(ctx, e.deps(), clean.Store(raw), lsn.Zero); err != nil {
		t.Fatal(err)
	}
	ops := clean.Ops()
	if last := ops[len(ops)-1]; !strings.Contains(last, snapshot.ExportMarker) {
		t.Fatalf("the last call is %q, want the marker's put", last)
	}
	t.Logf("a clean export makes %d calls to its target", len(ops))
	for _, f := range testlake.KillPlans(ops, 1) {
		raw, err := localstore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		_, err = snapshot.Export(ctx, e.deps(), f.Store(raw), lsn.Zero)
		if err == nil {
			t.Fatalf("kill at %d (after=%v) went unnoticed", f.KillAt, f.After)
		}
		m := readExportManifest(t, raw)
		if m != nil {
			if !f.After || f.KillAt != len(ops) {
				t.Fatalf("kill at %d (after=%v, %s): a marker was written before the last call", f.KillAt, f.After, ops[f.KillAt-1])
			}
			if n := countRows(t, raw, m.Files); n != rows || m.Rows != rows {
				t.Fatalf("marker after kill at %d lists %d rows (says %d), want %d", f.KillAt, n, m.Rows, rows)
			}
		}
		empty := true
		for range raw.List(ctx, "", "") {
			empty = false
		}
		_, err = snapshot.Export(ctx, e.deps(), raw, lsn.Zero)
		var ne *snapshot.TargetNotEmptyError
		switch {
		case empty:
			if err != nil {
				t.Fatalf("rerun into the target a kill at %d left empty: %v", f.KillAt, err)
			}
		case !errors.As(err, &ne) || ne.Finished != (m != nil):
			t.Fatalf("rerun after a kill at %d: %v, want TargetNotEmptyError (finished=%v)", f.KillAt, err, m != nil)
		case m == nil && !strings.Contains(err.Error(), "partial export"):
			t.Fatalf("message %q does not say the target holds a partial export", err)
		}
	}
}
