package deltalog

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Log clean-up that stops its listing early deletes what the full listing did
// (cleanupReference) on logs an ordinary aged log does not show: commit times that go
// back and forth (a clock skewed far ahead, then far behind), an interrupted earlier
// clean-up (a prefix of the versioned keys deleted, in key order), a log that starts at a
// checkpoint without its commit, and a checkpoint whose commit is past the cutoff (the
// cutoff falling between a checkpoint file and its commit). Each is cleaned on days
// 31..42 and compared with the reference every day; the latest version reads after.
func TestReview5CleanupLogMatchesReferenceOddLogs(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reput := func(t *testing.T, c *clock, s *memStore, key string, at time.Time) {
		t.Helper()
		rc, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := b.ReadFrom(rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		saved := c.t
		c.t = at
		if err := s.Put(ctx, key, bytes.NewReader(b.Bytes()), int64(b.Len())); err != nil {
			t.Fatal(err)
		}
		c.t = saved
	}
	versioned := func(t *testing.T, s *memStore) []string {
		t.Helper()
		var ks []string
		for oi, err := range s.List(ctx, LogDir, versionedLogStart) {
			if err != nil {
				t.Fatal(err)
			}
			if name := strings.TrimPrefix(oi.Key, LogDir); name[0] >= '0' && name[0] <= '9' {
				ks = append(ks, oi.Key)
			}
		}
		return ks
	}
	cases := map[string]func(t *testing.T, c *clock, s *memStore){
		"skewed commit times": func(t *testing.T, c *clock, s *memStore) {
			// 20 (day 3) written on day 35: it and every later commit are "newer"
			// until the clock returns; 60 (day 10) written a year before day 0.
			reput(t, c, s, CommitFileKey(20), day0.Add(35*24*time.Hour))
			reput(t, c, s, CommitFileKey(60), day0.Add(-365*24*time.Hour))
			reput(t, c, s, CommitFileKey(120), day0.Add(-365*24*time.Hour))
			reput(t, c, s, CommitFileKey(150), day0.Add(50*24*time.Hour))
		},
		"interrupted clean-up": func(t *testing.T, c *clock, s *memStore) {
			ks := versioned(t, s)
			for _, k := range ks[:37] { // mid-version: some of 6's files left
				if err := s.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
		},
		"starts at a checkpoint without its commit": func(t *testing.T, c *clock, s *memStore) {
			for _, k := range versioned(t, s) {
				f := parseLogFile(k)
				v, ok := f.version, f.kind != kindOther
				if !ok {
					v, ok = otherLogFileVersion(k)
				}
				if ok && (v < 30 || (v == 30 && f.kind == kindCommit)) {
					if err := s.Delete(ctx, k); err != nil {
						t.Fatal(err)
					}
				}
			}
		},
		"checkpoint past the cutoff": func(t *testing.T, c *clock, s *memStore) {
			// Every checkpoint written a second after midnight of its day's
			// successor, its commit a second later: the cutoff (midnight) falls
			// between a checkpoint's listing and its commit.
			for v := int64(5); v < 240; v += 5 {
				day := time.Duration(v/6+1) * 24 * time.Hour
				reput(t, c, s, CommitFileKey(v), day0.Add(day+2*time.Second))
			}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			c := &clock{t: day0}
			_, s := agedLog(t, c, day0, 40)
			mutate(t, c, s)
			opts := Options{CheckpointInterval: 5, Now: c.now, RetryBaseDelay: time.Microsecond}
			deletedAny := false
			for day := 31; day <= 42; day++ {
				for _, hour := range []time.Duration{0, time.Second, time.Hour} {
					c.t = day0.Add(time.Duration(day)*24*time.Hour + hour)
					cutoff := c.t.Add(-DefaultLogRetention).Truncate(24 * time.Hour)
					wantCP, want := cleanupReference(t, s, cutoff)
					tbl := Open(s, &memLogStore{s: s}, opts)
					res, err := tbl.CleanupLog(ctx, CleanupOptions{})
					if err != nil {
						t.Fatalf("day %d+%v: %v", day, hour, err)
					}
					if res.Checkpoint != wantCP && len(want) > 0 || !slices.Equal(res.Deleted, want) {
						t.Fatalf("day %d+%v: checkpoint %d, deleted %v\nwant %d, %v", day, hour, res.Checkpoint, res.Deleted, wantCP, want)
					}
					deletedAny = deletedAny || len(want) > 0
					for _, k := range want {
						if _, err := s.Head(ctx, k); !errors.Is(err, storage.ErrNotFound) {
							t.Fatalf("day %d: %s not deleted: %v", day, k, err)
						}
					}
					snap, err := Open(s, &memLogStore{s: s}, opts).Snapshot(ctx)
					if err != nil || snap.Version() != 239 {
						t.Fatalf("day %d: latest after clean-up: %v %v", day, snap, err)
					}
					if res.Checkpoint > 0 {
						if _, err := Open(s, &memLogStore{s: s}, opts).SnapshotAt(ctx, res.Checkpoint); err != nil {
							t.Fatalf("day %d: checkpoint %d unreadable: %v", day, res.Checkpoint, err)
						}
					}
				}
			}
			if !deletedAny {
				t.Fatal("nothing deleted on any day: the case tests nothing")
			}
		})
	}
}

// VACUUM steps over _delta_log/ and deletes what the whole listing with the hidden-path
// rule did: the keys that sort just before and just after the log (a partition column
// named _delta_log: "_delta_log=1/", "_delta_log-x=1/"; digits and capitals before "_",
// lower case after) are vacuumed, in key order; the log, "_delta_log.bak/" and
// "_delta_log0" are hidden and kept; the byte count is the deleted files' sizes.
func TestReview5VacuumAroundTheLog(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{})
	appendFile(t, tbl, "live")
	files := []string{"0.parquet", "Z.parquet", "_delta_log-x=1/part-b.parquet", "_delta_log.bak/part-c.parquet",
		"_delta_log/part-d.parquet", "_delta_log/zz/part-e.parquet", "_delta_log0", "_delta_log=1/part-a.parquet", "a.parquet", "part-live.parquet"}
	for i, k := range files {
		b := bytes.Repeat([]byte("x"), i+1)
		if err := s.Put(ctx, k, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
	}
	c.t = day0.Add(30 * 24 * time.Hour)
	res, err := tbl.Vacuum(ctx, VacuumOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0.parquet", "Z.parquet", "_delta_log-x=1/part-b.parquet", "_delta_log=1/part-a.parquet", "a.parquet"}
	if !slices.Equal(res.Deleted, want) {
		t.Fatalf("deleted %v, want %v", res.Deleted, want)
	}
	if res.DeletedBytes != 1+2+3+8+9 {
		t.Errorf("deleted bytes %d, want %d", res.DeletedBytes, 1+2+3+8+9)
	}
	for _, k := range []string{"_delta_log.bak/part-c.parquet", "_delta_log/part-d.parquet", "_delta_log/zz/part-e.parquet", "_delta_log0", "part-live.parquet", CommitFileKey(0)} {
		if _, err := s.Head(ctx, k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
}
