package maintain_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/maintain"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// open opens the table at dir (conditional put on local disk), every call through f, with
// the clock now.
func open(t *testing.T, dir string, f *deltatest.Faults, now time.Time) *deltalog.Table {
	t.Helper()
	s, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs := f.Store(s)
	return deltalog.Open(fs, condput.New(fs), deltalog.Options{RetryBaseDelay: 1, CheckpointInterval: -1,
		Now: func() time.Time { return now }})
}

// ageAll sets the modification time of every file under dir to at.
func ageAll(t *testing.T, dir string, at time.Time) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, at, at)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// All operations in order: the small files are compacted and a checkpoint written; the
// files the compaction removed stay until the retention has passed, then VACUUM deletes
// them, log clean-up deletes the commits before the checkpoint and an orphaned temporary
// commit file goes; the rows never change, and a run with nothing to do changes nothing.
func TestRunAll(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	start := time.Now()
	deltatest.AppendIDs(t, open(t, dir, &deltatest.Faults{}, start), 0, 8)
	want := deltatest.IDs(t, open(t, dir, &deltatest.Faults{}, start))
	o := maintain.All()
	o.Compaction.Writer.TempDir = t.TempDir()

	rep, err := maintain.Run(ctx, open(t, dir, &deltatest.Faults{}, start), o)
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Compact; c == nil || c.FilesRemoved != 8 || c.FilesAdded != 1 || c.Rows != 80 || c.LiveFiles != 1 || c.Version != 8 {
		t.Fatalf("compact %+v", rep.Compact)
	}
	if c := rep.Checkpoint; c == nil || !c.Written || c.Version != 8 {
		t.Fatalf("checkpoint %+v", rep.Checkpoint)
	}
	if rep.Vacuum.DeletedFiles != 0 || rep.CleanupLog.DeletedFiles != 0 || rep.TempFiles.DeletedFiles != 0 || rep.Vacuum.RetentionHours != 168 || rep.CleanupLog.RetentionHours != 720 {
		t.Fatalf("deleted too early: vacuum %+v, log %+v, temp %+v", rep.Vacuum, rep.CleanupLog, rep.TempFiles)
	}
	// delta-rs's temporary commit file: a DynamoDB log store's (.tmp/<v>.json.<id>) would
	// make a run through this log store refuse the table (TestRunRefusesDynamoCoordinated).
	tmp := filepath.Join(dir, "_delta_log", "_commit_dead.json.tmp")
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}

	// 40 days later (files and commits as old as that).
	later := start.Add(40 * 24 * time.Hour)
	ageAll(t, dir, start)
	rep, err = maintain.Run(ctx, open(t, dir, &deltatest.Faults{}, later), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Compact.Commits != 0 || rep.Checkpoint.Written {
		t.Fatalf("nothing to compact or checkpoint, got %+v, %+v", rep.Compact, rep.Checkpoint)
	}
	if rep.Vacuum.DeletedFiles != 8 || rep.CleanupLog.DeletedFiles != 8 || rep.TempFiles.DeletedFiles != 1 {
		t.Fatalf("vacuum %+v\nlog %+v\ntemp %+v", rep.Vacuum, rep.CleanupLog, rep.TempFiles)
	}
	tbl := open(t, dir, &deltatest.Faults{}, later)
	if got := deltatest.IDs(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("rows changed: %d", len(got))
	}
	if snap, err := tbl.Snapshot(ctx); err != nil || snap.NumFiles() != 1 {
		t.Fatalf("snapshot %v", err)
	} else if v, _ := snap.TxnVersion("stream"); v != 8 {
		t.Fatalf("stream txn %d", v)
	}
	// The stream appends on top of it.
	deltatest.AppendIDs(t, tbl, 8, 1)
	if got := deltatest.IDs(t, tbl); len(got) != 90 {
		t.Fatalf("%d rows after an append", len(got))
	}
}

// A table whose _delta_log/.tmp/ holds a DynamoDB log store's temporary commit file is
// refused before anything changes, when the run's log store is not DynamoDB's.
func TestRunRefusesDynamoCoordinated(t *testing.T) {
	dir := t.TempDir()
	deltatest.AppendIDs(t, open(t, dir, &deltatest.Faults{}, time.Now()), 0, 3)
	tmp := filepath.Join(dir, "_delta_log", ".tmp", "00000000000000000002.json.5e1b")
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := maintain.All()
	o.Compaction.Writer.TempDir = t.TempDir()
	rep, err := maintain.Run(context.Background(), open(t, dir, &deltatest.Faults{}, time.Now()), o)
	var uce *deltalog.UncoordinatedCommitError
	if !errors.As(err, &uce) || rep != nil {
		t.Fatalf("run: %+v, %v; want *deltalog.UncoordinatedCommitError", rep, err)
	}
	if snap, _ := open(t, dir, &deltatest.Faults{}, time.Now()).Snapshot(context.Background()); snap.NumFiles() != 3 || snap.Version() != 2 {
		t.Fatalf("changed despite the refusal: version %d, %d files", snap.Version(), snap.NumFiles())
	}
}

// A retention below the table's is refused before anything changes, unless forced.
func TestRunRetentionTooShort(t *testing.T) {
	dir := t.TempDir()
	deltatest.AppendIDs(t, open(t, dir, &deltatest.Faults{}, time.Now()), 0, 3)
	o := maintain.All()
	o.Retention = time.Hour
	_, err := maintain.Run(context.Background(), open(t, dir, &deltatest.Faults{}, time.Now()), o)
	var rts *maintain.RetentionTooShortError
	if !errors.As(err, &rts) || rts.Op != "vacuum" || !strings.Contains(err.Error(), "retention 1 hour is below the table's delta.deletedFileRetentionDuration (7 days)") {
		t.Fatalf("err %v", err)
	}
	if snap, _ := open(t, dir, &deltatest.Faults{}, time.Now()).Snapshot(context.Background()); snap.NumFiles() != 3 {
		t.Fatalf("compacted despite the refusal: %d files", snap.NumFiles())
	}
}

// A dry run with a retention below the table's is not refused (it deletes nothing): it
// reports what that retention would delete, and NeedsForce on each operation a real run
// would refuse without Force. With Force, or at the table's retention, no NeedsForce.
func TestRunDryRunBelowRetentionSaysNeedsForce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Now()
	deltatest.AppendIDs(t, open(t, dir, &deltatest.Faults{}, now), 0, 3)
	orphan := filepath.Join(dir, "part-orphan.parquet")
	if err := os.WriteFile(orphan, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-2 * time.Hour)
	if err := os.Chtimes(orphan, old, old); err != nil {
		t.Fatal(err)
	}
	o := maintain.Options{Vacuum: true, CleanupLog: true, DryRun: true, Retention: time.Hour}
	rep, err := maintain.Run(ctx, open(t, dir, &deltatest.Faults{}, now), o)
	if err != nil {
		t.Fatalf("dry run below the table's retention: %v", err)
	}
	if v := rep.Vacuum; v == nil || !v.NeedsForce || v.RetentionHours != 1 || v.MinimumHours != 168 || !slices.Equal(v.Deleted, []string{"part-orphan.parquet"}) {
		t.Errorf("vacuum: %+v", rep.Vacuum)
	}
	if c := rep.CleanupLog; c == nil || !c.NeedsForce || c.MinimumHours != 720 {
		t.Errorf("cleanup-log: %+v", rep.CleanupLog)
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("a dry run deleted a file: %v", err)
	}
	o.Force = true
	if rep, err = maintain.Run(ctx, open(t, dir, &deltatest.Faults{}, now), o); err != nil || rep.Vacuum.NeedsForce || rep.CleanupLog.NeedsForce {
		t.Errorf("forced dry run: %+v, %v; want no NeedsForce", rep, err)
	}
	o.Force, o.Retention = false, 0
	if rep, err = maintain.Run(ctx, open(t, dir, &deltatest.Faults{}, now), o); err != nil || rep.Vacuum.NeedsForce || rep.CleanupLog.NeedsForce {
		t.Errorf("dry run at the table's retention: %+v, %v; want no NeedsForce", rep, err)
	}
}

// Killed at any external call, a maintenance run leaves the table readable with every row
// once; re-runs converge to the state a clean run reaches (one file, the old files and
// commits deleted).
func TestRunKilledAtEveryCall(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	start := time.Now()
	deltatest.AppendIDs(t, open(t, base, &deltatest.Faults{}, start), 0, 4)
	ageAll(t, base, start)
	want := deltatest.IDs(t, open(t, base, &deltatest.Faults{}, start))
	later := start.Add(40 * 24 * time.Hour)
	o := maintain.All()
	o.Compaction.Writer.TempDir = t.TempDir()
	kills := 0
	for _, after := range []bool{false, true} {
		for k := 1; ; k++ {
			if k > 400 {
				t.Fatal("a run made over 400 calls")
			}
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			ageAll(t, dir, start)
			f := &deltatest.Faults{KillAt: k, After: after}
			// The clock is 40 days on: compaction, then every deletion, in one run.
			_, err := maintain.Run(ctx, open(t, dir, f, later), o)
			step := fmt.Sprintf("after=%t k=%d", after, k)
			if !f.Killed() {
				if err != nil {
					t.Fatalf("%s: clean run: %v", step, err)
				}
				t.Logf("after=%t: a run made %d calls", after, f.Calls())
				break
			}
			kills++
			clean := open(t, dir, &deltatest.Faults{}, later)
			if got := deltatest.IDs(t, clean); !slices.Equal(got, want) {
				t.Fatalf("%s: after the kill %d rows, want %d", step, len(got), len(want))
			}
			// A re-run finishes the work (when it compacts, its removes are new, so VACUUM
			// keeps their files for the retention).
			if _, err := maintain.Run(ctx, open(t, dir, &deltatest.Faults{}, later), o); err != nil {
				t.Fatalf("%s: re-run: %v", step, err)
			}
			snap, err := clean.Snapshot(ctx)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			if got := deltatest.IDs(t, clean); !slices.Equal(got, want) || snap.NumFiles() != 1 {
				t.Fatalf("%s: after re-runs %d rows in %d files", step, len(got), snap.NumFiles())
			}
			deltatest.AppendIDs(t, clean, 4, 1)
		}
	}
	t.Logf("killed %d runs", kills)
}
