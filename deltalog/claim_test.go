package deltalog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
)

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("PAR1...PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A location with no Delta log that already holds files is refused, not adopted (issue
// 12); an empty one is claimed with a marker, and the files a killed first attempt leaves
// next to it do not make the rerun refuse. A simulated run never claims a real table, nor
// a real run a simulated one.
func TestClaimRefusesForeignFilesAndMixedKinds(t *testing.T) {
	ctx := context.Background()
	realRun, sim := deltalog.Location{}, deltalog.Location{Sim: true}

	// Unrelated Parquet files and no log: refused, for either kind.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "year=2024", "part-0001.parquet"))
	s, l := localTable(t, dir)
	for _, want := range []deltalog.Location{realRun, sim} {
		var fe *deltalog.ForeignFilesError
		if err := deltalog.Open(s, l, deltalog.Options{}).Claim(ctx, want); !errors.As(err, &fe) || fe.Files != 1 || fe.Example != "year=2024/part-0001.parquet" {
			t.Fatalf("claim %+v of a directory of Parquet files: %v, want *ForeignFilesError naming it", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, deltalog.LocationMarker)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused claim left a marker")
	}

	// An empty location: claimed; a leftover data file of a killed attempt is fine after.
	dir = t.TempDir()
	s, l = localTable(t, dir)
	tbl := deltalog.Open(s, l, deltalog.Options{})
	if err := tbl.Claim(ctx, realRun); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "part-00000-orphan.parquet"))
	if err := tbl.Claim(ctx, realRun); err != nil {
		t.Fatalf("rerun after a killed first attempt: %v", err)
	}
	var ke *deltalog.LocationKindError
	if err := tbl.Claim(ctx, sim); !errors.As(err, &ke) || !ke.Sim {
		t.Fatalf("simulated claim of a real location: %v", err)
	}

	// A table made before markers (or by Spark): a real run uses it, a simulated one not.
	dir = t.TempDir()
	s, l = localTable(t, dir)
	tbl = deltalog.Open(s, l, deltalog.Options{})
	tx := tbl.Begin(mustSnapshot(t, tbl))
	if err := tx.SetSchema(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Claim(ctx, sim); !errors.As(err, &ke) {
		t.Fatalf("simulated claim of an existing table: %v", err)
	}
	if err := tbl.Claim(ctx, realRun); err != nil {
		t.Fatalf("real claim of an existing table: %v", err)
	}

	// A simulated location refuses a real run; the marker does not disturb readers.
	dir = t.TempDir()
	s, l = localTable(t, dir)
	tbl = deltalog.Open(s, l, deltalog.Options{})
	if err := tbl.Claim(ctx, sim); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Claim(ctx, realRun); !errors.As(err, &ke) || ke.Sim {
		t.Fatalf("real claim of a simulated location: %v", err)
	}
	if snap := mustSnapshot(t, tbl); snap.Version() != -1 {
		t.Fatalf("version %d after a claim, want -1 (no table yet)", snap.Version())
	}
}

// Killed at every call, a claim leaves the location claimable: the rerun succeeds and
// leaves exactly one marker of the right kind.
func TestClaimSurvivesAKillAtEveryCall(t *testing.T) {
	ctx := context.Background()
	for k := 1; ; k++ {
		dir := t.TempDir()
		s, l := localTable(t, dir)
		f := &deltatest.Faults{KillAt: k, After: k%2 == 0}
		err := deltalog.Open(f.Store(s), f.LogStore(l), deltalog.Options{}).Claim(ctx, deltalog.Location{Sim: true})
		if !f.Killed() {
			if err != nil {
				t.Fatal(err)
			}
			if k < 3 {
				t.Fatalf("a claim made %d calls; want the marker read, the listings and the put", f.Calls())
			}
			break
		}
		if err := deltalog.Open(s, l, deltalog.Options{}).Claim(ctx, deltalog.Location{Sim: true}); err != nil {
			t.Fatalf("rerun after a kill at call %d (%v): %v", k, f.Ops(), err)
		}
		b, err := os.ReadFile(filepath.Join(dir, deltalog.LocationMarker))
		if err != nil || string(b) != "{\"sim\":true}\n" {
			t.Fatalf("marker after a kill at call %d: %q %v", k, b, err)
		}
	}
}

func mustSnapshot(t *testing.T, tbl *deltalog.Table) *deltalog.Snapshot {
	t.Helper()
	snap, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
