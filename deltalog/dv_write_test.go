package deltalog

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// dvCommit replaces the live file a by a with dv as its deletion vector, in one commit.
func dvCommit(t *testing.T, tbl *Table, a Add, dv *DeletionVector, now time.Time) Add {
	t.Helper()
	tx := tbl.Begin(snapshot(t, tbl))
	tx.EnableFeatures(FeatureDeletionVectors)
	next := a.WithDeletionVector(dv)
	tx.Remove(a.RemoveAction(now.UnixMilli(), true))
	tx.Add(next)
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatalf("commit DV: %v", err)
	}
	return next
}

// VACUUM keeps the DV files that live files and kept removes name, and deletes an old DV
// file no action names (a writer's DV for a commit that failed); once the remove that names
// the replaced DV expires, its file goes too.
func TestVacuumCountsDeletionVectorFilesAsReferenced(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{})
	if err := s.Put(ctx, "part-a.parquet", bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	tx := tbl.Begin(snapshot(t, tbl))
	if err := tx.SetSchema(testSchema); err != nil {
		t.Fatal(err)
	}
	a := Add{Path: "part-a.parquet", Size: 1, DataChange: true, Stats: `{"numRecords":10}`}
	tx.Add(a)
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// DV 1 (rows 1, 2) under a prefix, then DV 2 (rows 1, 2, 3) replacing it; an orphan DV
	// file nobody committed.
	dv1, err := WriteDeletionVectorFile(ctx, s, "ab", []*RowBitmap{NewRowBitmap(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	a = dvCommit(t, tbl, a, dv1[0], c.t)
	orphan, err := WriteDeletionVectorFile(ctx, s, "", []*RowBitmap{NewRowBitmap(5)})
	if err != nil {
		t.Fatal(err)
	}
	c.t = day0.Add(10 * 24 * time.Hour)
	dv2, err := WriteDeletionVectorFile(ctx, s, "", []*RowBitmap{NewRowBitmap(1, 2, 3)})
	if err != nil {
		t.Fatal(err)
	}
	dvCommit(t, tbl, a, dv2[0], c.t)
	key := func(dv *DeletionVector) string {
		k, err := dvFileKey(s.URL(), dv)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if !strings.HasPrefix(key(dv1[0]), "ab/deletion_vector_") {
		t.Fatalf("DV file key %s", key(dv1[0]))
	}

	c.t = day0.Add(12 * 24 * time.Hour)
	res, err := tbl.Vacuum(ctx, VacuumOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{key(orphan[0])}; !slices.Equal(res.Deleted, want) {
		t.Fatalf("vacuum deleted %v, want only the orphan DV %v", res.Deleted, want)
	}
	// part-a, DV 2 (live), DV 1 (named by the 2-day-old remove).
	if res.Protected != 3 {
		t.Fatalf("vacuum: %+v", res)
	}
	c.t = day0.Add(30 * 24 * time.Hour)
	res, err = tbl.Vacuum(ctx, VacuumOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{key(dv1[0])}; !slices.Equal(res.Deleted, want) {
		t.Fatalf("vacuum after the remove expired deleted %v, want %v", res.Deleted, want)
	}
	left := keys(t, s, "")
	if !slices.Contains(left, key(dv2[0])) || !slices.Contains(left, "part-a.parquet") {
		t.Fatalf("left %v", left)
	}
}

// A commit that adds a file with a deletion vector needs the deletionVectors feature and
// numRecords; the re-added file's stats say their bounds are no longer tight, and a scan
// of the table skips the deleted rows.
func TestCommitDeletionVectorRules(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	createTable(t, tbl)
	snap := snapshot(t, tbl)
	a := snap.Files()[0]
	dv := InlineDeletionVector(NewRowBitmap(0))

	tx := tbl.Begin(snap)
	tx.Remove(a.RemoveAction(1, true))
	tx.Add(a.WithDeletionVector(dv))
	var ice *InvalidCommitError
	if _, err := tx.Commit(ctx); !errors.As(err, &ice) || !strings.Contains(ice.Reason, "deletionVectors feature") {
		t.Fatalf("DV without the feature: %v", err)
	}

	noRecords := a
	noRecords.Stats = ""
	tx = tbl.Begin(snap)
	tx.EnableFeatures(FeatureDeletionVectors)
	tx.Remove(a.RemoveAction(1, true))
	tx.Add(noRecords.WithDeletionVector(dv))
	if _, err := tx.Commit(ctx); !errors.As(err, &ice) || !strings.Contains(ice.Reason, "numRecords") {
		t.Fatalf("DV without numRecords: %v", err)
	}

	tx = tbl.Begin(snap)
	tx.EnableFeatures(FeatureDeletionVectors)
	tx.Remove(a.RemoveAction(1, true))
	tx.Add(a.WithDeletionVector(dv))
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	next := snapshot(t, tbl)
	p := next.Protocol()
	if !p.HasReaderFeature(FeatureDeletionVectors) || !p.HasWriterFeature(FeatureDeletionVectors) {
		t.Fatalf("protocol %+v", p)
	}
	if err := next.CanWrite(); err != nil {
		t.Fatalf("a table with DVs is writable: %v", err)
	}
	f := next.Files()
	if len(f) != 1 || f[0].DeletionVector == nil || !strings.Contains(f[0].Stats, `"tightBounds":false`) {
		t.Fatalf("files %+v", f)
	}
	if n, ok := f[0].LiveRecords(); !ok || n != 0 {
		t.Fatalf("live records %d %v", n, ok)
	}
}
