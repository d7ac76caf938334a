package deltalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// clock is a settable time shared by a memStore (modification times) and a Table.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newClockTable(t *testing.T, c *clock, opts Options) (*Table, *memStore) {
	t.Helper()
	s := newMemStore()
	s.Now = c.now
	opts.Now = c.now
	opts.RetryBaseDelay = time.Microsecond
	return Open(s, &memLogStore{s: s}, opts), s
}

func appendFile(t *testing.T, tbl *Table, name string) int64 {
	t.Helper()
	tx := tbl.Begin(snapshot(t, tbl))
	if err := tx.SetSchema(testSchema); err != nil {
		t.Fatal(err)
	}
	tx.Add(testAdd(name))
	res, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res.Version
}

func keys(t *testing.T, s *memStore, prefix string) []string {
	t.Helper()
	var out []string
	for oi, err := range s.List(context.Background(), prefix, "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, oi.Key)
	}
	return out
}

func TestCleanupLog(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{CheckpointInterval: 10})
	for i := range 15 { // versions 0..14 on day 0; checkpoint at 10
		c.t = day0.Add(time.Duration(i) * time.Minute)
		appendFile(t, tbl, fmt.Sprint(i))
	}
	put := func(key string) {
		if err := s.Put(ctx, key, bytes.NewReader([]byte("{}")), 2); err != nil {
			t.Fatal(err)
		}
	}
	put(LogDir + "00000000000000000003.crc")
	put(LogDir + "00000000000000000001.00000000000000000003.compacted.json")
	put(LogDir + ".tmp/00000000000000000015.json.abc")
	put(LogDir + "_commit_abc.json.tmp")
	day40 := day0.Add(40 * 24 * time.Hour)
	for i := 15; i < 25; i++ { // versions 15..24 on day 40; checkpoint at 20
		c.t = day40.Add(time.Duration(i) * time.Minute)
		appendFile(t, tbl, fmt.Sprint(i))
	}
	if !slices.Contains(keys(t, s, LogDir), CheckpointFileKey(20)) || !slices.Contains(keys(t, s, LogDir), CheckpointFileKey(10)) {
		t.Fatalf("checkpoints missing: %v", keys(t, s, LogDir))
	}

	// 50 days: the cutoff precedes every commit.
	res, err := tbl.CleanupLog(ctx, CleanupOptions{Retention: 50 * 24 * time.Hour})
	if err != nil || res.Checkpoint != -1 || len(res.Deleted) != 0 {
		t.Fatalf("50 days: %+v %v", res, err)
	}

	// 30 days (the default): cutoff is midnight of day 10; the newest commit before it
	// is 14, the newest checkpoint at or below 14 is 10.
	before := keys(t, s, LogDir)
	dry, err := tbl.CleanupLog(ctx, CleanupOptions{DryRun: true})
	if err != nil || dry.Checkpoint != 10 || !slices.Equal(keys(t, s, LogDir), before) {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	res, err = tbl.CleanupLog(ctx, CleanupOptions{})
	if err != nil || res.Checkpoint != 10 {
		t.Fatalf("cleanup: %+v %v", res, err)
	}
	var want []string
	for v := range int64(10) { // by version, then key
		if v == 1 {
			want = append(want, LogDir+"00000000000000000001.00000000000000000003.compacted.json")
		}
		if v == 3 {
			want = append(want, LogDir+"00000000000000000003.crc")
		}
		want = append(want, CommitFileKey(v))
	}
	if !slices.Equal(res.Deleted, want) || !slices.Equal(dry.Deleted, want) {
		t.Fatalf("deleted %v\nwant %v", res.Deleted, want)
	}
	left := keys(t, s, LogDir)
	for _, k := range []string{CommitFileKey(10), CheckpointFileKey(10), CheckpointFileKey(20), LastCheckpointKey,
		LogDir + ".tmp/00000000000000000015.json.abc", LogDir + "_commit_abc.json.tmp"} {
		if !slices.Contains(left, k) {
			t.Fatalf("%s deleted; left %v", k, left)
		}
	}
	if snap := snapshot(t, tbl); snap.Version() != 24 || len(snap.Files()) != 25 {
		t.Fatalf("latest: version %d, %d files", snap.Version(), len(snap.Files()))
	}
	if snapshotAt(t, tbl, 10).Version() != 10 {
		t.Fatal("version 10 unreadable")
	}
	var vnf *VersionNotFoundError
	if _, err := tbl.SnapshotAt(ctx, 9); !errors.As(err, &vnf) {
		t.Fatalf("version 9: %v", err)
	}
	// Idempotent.
	if res, err := tbl.CleanupLog(ctx, CleanupOptions{}); err != nil || len(res.Deleted) != 0 {
		t.Fatalf("again: %+v %v", res, err)
	}
}

func TestCleanupLogMonotonicTimes(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, _ := newClockTable(t, c, Options{CheckpointInterval: 2})
	// Versions 0..2 are old, 3 is recent, 4..6 claim an old clock (skewed writers): they
	// may not expire before version 3, so the cutoff commit is 2, not 6.
	for i := range 7 {
		c.t = day0
		if i == 3 {
			c.t = day0.Add(40 * 24 * time.Hour)
		}
		appendFile(t, tbl, fmt.Sprint(i))
	}
	c.t = day0.Add(41 * 24 * time.Hour)
	res, err := tbl.CleanupLog(ctx, CleanupOptions{})
	if err != nil || res.Checkpoint != 2 || !slices.Equal(res.Deleted, []string{CommitFileKey(0), CommitFileKey(1)}) {
		t.Fatalf("cleanup: %+v %v", res, err)
	}
}

func TestVacuum(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{})
	put := func(key string) {
		if err := s.Put(ctx, key, bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
	}
	old := []string{"part-live.parquet", "part-removed-recent.parquet", "part-removed-old.parquet",
		"part-orphan-old.parquet", "p=1/part-orphan.parquet", "_p=1/part-orphan.parquet",
		"_change_data/cdc.parquet", ".hidden/x.parquet", "_tmp/x.parquet", "dir/.x.parquet"}
	for _, k := range old {
		put(k)
	}
	tx := tbl.Begin(snapshot(t, tbl))
	if err := tx.SetSchema(testSchema); err != nil {
		t.Fatal(err)
	}
	for _, p := range old[:3] {
		tx.Add(Add{Path: p, Size: 1, DataChange: true})
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c.t = day0.Add(20 * 24 * time.Hour)
	ts := func(daysAgo int) *int64 {
		v := c.t.Add(-time.Duration(daysAgo) * 24 * time.Hour).UnixMilli()
		return &v
	}
	data, err := EncodeActions([]Action{
		{Remove: &Remove{Path: "part-removed-recent.parquet", DeletionTimestamp: ts(1), DataChange: true}},
		{Remove: &Remove{Path: "part-removed-old.parquet", DeletionTimestamp: ts(10), DataChange: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.LogStore().Write(ctx, 1, data); err != nil {
		t.Fatal(err)
	}
	put("part-orphan-new.parquet") // a writer's file, not committed yet

	dry, err := tbl.Vacuum(ctx, VacuumOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Vacuum(ctx, VacuumOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"_p=1/part-orphan.parquet", "p=1/part-orphan.parquet", "part-orphan-old.parquet", "part-removed-old.parquet"}
	if !slices.Equal(res.Deleted, want) || !slices.Equal(dry.Deleted, want) {
		t.Fatalf("deleted %v (dry %v)\nwant %v", res.Deleted, dry.Deleted, want)
	}
	if res.Version != 1 || res.Protected != 2 || res.TooNew != 1 {
		t.Fatalf("result %+v", res)
	}
	left := strings.Join(keys(t, s, ""), " ")
	for _, k := range []string{"part-live.parquet", "part-removed-recent.parquet", "part-orphan-new.parquet",
		"_change_data/cdc.parquet", ".hidden/x.parquet", "_tmp/x.parquet", "dir/.x.parquet", CommitFileKey(0)} {
		if !strings.Contains(left, k) {
			t.Fatalf("%s deleted; left %s", k, left)
		}
	}
	// A 1-day retention lets the recent remove's file go too.
	res, err = tbl.Vacuum(ctx, VacuumOptions{Retention: 12 * time.Hour})
	if err != nil || !slices.Equal(res.Deleted, []string{"part-removed-recent.parquet"}) {
		t.Fatalf("short retention: %+v %v", res, err)
	}
}

func TestVacuumRefusesUnwritableTable(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	data, err := EncodeActions([]Action{
		{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureRowTracking}}},
		{MetaData: &Metadata{ID: "x", SchemaString: `{"type":"struct","fields":[]}`}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.LogStore().Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	var ufe *UnsupportedFeatureError
	if _, err := tbl.Vacuum(ctx, VacuumOptions{}); !errors.As(err, &ufe) {
		t.Fatalf("vacuum: %v", err)
	}
}
