package deltalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
)

// keyCounting counts the keys its List calls yield (what S3 would have to send), per
// prefix.
type keyCounting struct {
	storage.Store
	keys map[string]int
}

func (k *keyCounting) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	return func(yield func(storage.ObjectInfo, error) bool) {
		for oi, err := range k.Store.List(ctx, prefix, startAfter) {
			k.keys[prefix]++
			if !yield(oi, err) {
				return
			}
		}
	}
}

// cleanupReference is what CleanupLog did before it stopped its listing early, kept as the
// reference: it lists the whole log, takes the cutoff commit from every commit's time
// made increasing, the newest complete checkpoint at or below it, and the files of a
// version kind below that checkpoint, by version then key.
func cleanupReference(t *testing.T, s storage.Store, cutoff time.Time) (cp int64, deleted []string) {
	t.Helper()
	ctx := context.Background()
	type logEntry struct {
		key     string
		version int64
	}
	var entries []logEntry
	commitTimes := map[int64]time.Time{}
	listing, err := listLog(ctx, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	for oi, err := range s.List(ctx, LogDir, "") {
		if err != nil {
			t.Fatal(err)
		}
		f := parseLogFile(oi.Key)
		v, ok := f.version, f.kind != kindOther
		if !ok {
			v, ok = otherLogFileVersion(oi.Key)
		}
		if !ok {
			continue
		}
		if f.kind == kindCommit {
			commitTimes[v] = oi.ModTime
		}
		entries = append(entries, logEntry{oi.Key, v})
	}
	cutoffCommit := int64(-1)
	var prev time.Time
	for i, v := range slices.Sorted(maps.Keys(commitTimes)) {
		ts := commitTimes[v]
		if i > 0 && !ts.After(prev) {
			ts = prev.Add(time.Millisecond)
		}
		prev = ts
		if ts.After(cutoff) {
			break
		}
		cutoffCommit = v
	}
	ref := listing.newestCheckpoint(cutoffCommit)
	if cutoffCommit < 0 || ref == nil || ref.version <= 0 {
		return -1, nil
	}
	slices.SortStableFunc(entries, func(a, b logEntry) int {
		if a.version != b.version {
			return int(a.version - b.version)
		}
		return strings.Compare(a.key, b.key)
	})
	for _, e := range entries {
		if e.version < ref.version {
			deleted = append(deleted, e.key)
		}
	}
	return ref.version, deleted
}

// agedLog builds a table of 6 commits a day (one every 4 hours) for days days from day0,
// a checkpoint every 5 versions, with the other files a log holds beside each checkpoint
// version v: v's .crc, a compacted file from v to v+2 (which sorts before v's checkpoint),
// a UUID-named v2 checkpoint and a one-part multi-part checkpoint (copies of v's), and an
// incomplete multi-part set at v+2 (part 1 of 2, to be ignored); and .tmp/ files, a
// _sidecars/ file, delta-rs's temporary commit file.
func agedLog(t *testing.T, c *clock, day0 time.Time, days int) (*Table, *memStore) {
	t.Helper()
	ctx := context.Background()
	tbl, s := newClockTable(t, c, Options{CheckpointInterval: 5})
	put := func(key string, data []byte) {
		if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}
	for d := range days {
		for i := range 6 {
			c.t = day0.Add(time.Duration(d)*24*time.Hour + time.Duration(i)*4*time.Hour)
			v := appendFile(t, tbl, fmt.Sprintf("d%d-%d", d, i))
			put(fmt.Sprintf("%s.tmp/%020d.json.x", LogDir, v), []byte("{}"))
			if v == 0 || v%5 != 0 {
				continue
			}
			rc, err := s.Get(ctx, CheckpointFileKey(v))
			if err != nil {
				t.Fatal(err)
			}
			var cp bytes.Buffer
			if _, err := cp.ReadFrom(rc); err != nil {
				t.Fatal(err)
			}
			rc.Close()
			put(fmt.Sprintf("%s%020d.crc", LogDir, v), []byte("{}"))
			put(fmt.Sprintf("%s%020d.%020d.compacted.json", LogDir, v, v+2), []byte("{}"))
			put(fmt.Sprintf("%s%020d.checkpoint.0000000001.0000000001.parquet", LogDir, v), cp.Bytes())
			put(fmt.Sprintf("%s%020d.checkpoint.3f2a9c1e-0d4b-4f7e-9a51-7c2d8e6b1a90.parquet", LogDir, v), cp.Bytes())
			put(fmt.Sprintf("%s%020d.checkpoint.0000000001.0000000002.parquet", LogDir, v+2), cp.Bytes())
		}
	}
	put(LogDir+"_sidecars/3f2a9c1e.parquet", []byte("x"))
	put(LogDir+"_commit_0f1e.json.tmp", []byte("{}"))
	return tbl, s
}

// Log clean-up stops its listing at the first commit past the cutoff, and deletes exactly
// what the full listing would: a log of 40 days cleaned every day from day 31 on (each day
// one day expires, the log starting at the checkpoint the day before kept, with its
// compacted, checkpoint, .crc files first), compared every day with the reference
// computed from a full listing before the run; and it lists a few days' worth of keys,
// not the log.
func TestCleanupLogStopsEarly(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	_, s := agedLog(t, c, day0, 40)
	counting := &keyCounting{Store: s, keys: map[string]int{}}
	opts := Options{CheckpointInterval: 5, Now: c.now, RetryBaseDelay: time.Microsecond}
	for day := 31; day <= 42; day++ {
		c.t = day0.Add(time.Duration(day)*24*time.Hour + time.Hour)
		cutoff := c.t.Add(-DefaultLogRetention).Truncate(24 * time.Hour)
		wantCP, want := cleanupReference(t, s, cutoff)
		sizes := map[string]int64{}
		for oi, err := range s.List(ctx, LogDir, "") {
			if err != nil {
				t.Fatal(err)
			}
			sizes[oi.Key] = oi.Size
		}
		logKeys := len(sizes)
		tbl := Open(counting, &memLogStore{s: s}, opts)
		if _, err := tbl.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		clear(counting.keys)
		res, err := tbl.CleanupLog(ctx, CleanupOptions{})
		if err != nil {
			t.Fatalf("day %d: %v", day, err)
		}
		if res.Checkpoint != wantCP || !slices.Equal(res.Deleted, want) {
			t.Fatalf("day %d: checkpoint %d, deleted %v\nwant %d, %v", day, res.Checkpoint, res.Deleted, wantCP, want)
		}
		if day <= 40 && len(want) == 0 {
			t.Fatalf("day %d: nothing expired; the test needs a day to expire", day)
		}
		// Listed: the versioned files up to the first commit past the cutoff, about a
		// day and a checkpoint interval of them (10 files a day, 5 more a checkpoint),
		// whatever the log holds.
		if n := counting.keys[LogDir]; n > 40 || n >= logKeys/4 {
			t.Fatalf("day %d: listed %d keys of a log of %d", day, n, logKeys)
		}
		var wantBytes int64
		for _, k := range want {
			if _, err := s.Head(ctx, k); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("day %d: %s not deleted: %v", day, k, err)
			}
			wantBytes += sizes[k]
		}
		if res.DeletedBytes != wantBytes {
			t.Fatalf("day %d: deleted %d bytes, want %d", day, res.DeletedBytes, wantBytes)
		}
		if snapshotAt(t, tbl, res.Checkpoint).Version() != res.Checkpoint {
			t.Fatalf("day %d: checkpoint %d unreadable", day, res.Checkpoint)
		}
	}
	for _, k := range []string{LastCheckpointKey, LogDir + "_sidecars/3f2a9c1e.parquet", LogDir + "_commit_0f1e.json.tmp", LogDir + ".tmp/00000000000000000000.json.x"} {
		if _, err := s.Head(ctx, k); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
}

// A clean-up that fails at any store call, or dies with its request served, deletes a
// prefix of what a whole run deletes, oldest first (the log still starts at a
// checkpoint and the latest version reads), and a re-run converges to the state a run
// without the fault leaves.
func TestCleanupLogFaultAtEveryCall(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	_, base := agedLog(t, c, day0, 33)
	now := day0.Add(33*24*time.Hour + time.Hour)
	c.t = now
	clone := func() *memStore {
		m := newMemStore()
		m.Now = c.now
		base.mu.Lock()
		maps.Copy(m.objs, base.objs)
		base.mu.Unlock()
		return m
	}
	opts := Options{CheckpointInterval: 5, Now: c.now, RetryBaseDelay: time.Microsecond}
	ref := clone()
	full, err := Open(ref, &memLogStore{s: ref}, opts).CleanupLog(ctx, CleanupOptions{})
	if err != nil || len(full.Deleted) < 20 {
		t.Fatalf("clean run: %d deleted, %v", len(full.Deleted), err)
	}
	want := keys(t, ref, "")
	faults := 0
	for _, after := range []bool{false, true} {
		for k := 1; ; k++ {
			s := clone()
			f := &storagetest.Faults{}
			fs := storagetest.NewFaulty(s, f)
			f.KillAt(k, after, nil)
			_, err := Open(fs, &memLogStore{s: fs}, opts).CleanupLog(ctx, CleanupOptions{})
			if err == nil {
				if !slices.Equal(keys(t, s, ""), want) {
					t.Fatalf("after=%t k=%d: a run without a fault left another state", after, k)
				}
				break
			}
			faults++
			// What is gone is a prefix of the clean run's deletions.
			gone := 0
			for gone < len(full.Deleted) {
				if _, err := s.Head(ctx, full.Deleted[gone]); err == nil {
					break
				}
				gone++
			}
			for _, key := range full.Deleted[gone:] {
				if _, err := s.Head(ctx, key); err != nil {
					t.Fatalf("after=%t k=%d: %s deleted before an older file: %v", after, k, key, err)
				}
			}
			if _, err := Open(s, &memLogStore{s: s}, opts).Snapshot(ctx); err != nil {
				t.Fatalf("after=%t k=%d: latest unreadable: %v", after, k, err)
			}
			if _, err := Open(s, &memLogStore{s: s}, opts).CleanupLog(ctx, CleanupOptions{}); err != nil {
				t.Fatalf("after=%t k=%d: re-run: %v", after, k, err)
			}
			if got := keys(t, s, ""); !slices.Equal(got, want) {
				t.Fatalf("after=%t k=%d: re-run left %d keys, a clean run %d", after, k, len(got), len(want))
			}
		}
	}
	if faults < len(full.Deleted) {
		t.Fatalf("%d faults injected, fewer than the %d deletions", faults, len(full.Deleted))
	}
}

// CleanupTempFiles decides as a full listing of the log does, and lists the .tmp/ and
// _commit_ prefixes and the candidates' versions, not the log.
func TestCleanupTempFilesListsLittle(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	_, s := agedLog(t, c, day0, 33) // a .tmp/ file for every version, 0..197
	c.t = day0.Add(33*24*time.Hour + time.Hour)
	opts := Options{CheckpointInterval: 5, Now: c.now, RetryBaseDelay: time.Microsecond}
	if _, err := Open(s, &memLogStore{s: s}, opts).CleanupLog(ctx, CleanupOptions{}); err != nil {
		t.Fatal(err)
	}
	put := func(key string) {
		if err := s.Put(ctx, key, bytes.NewReader([]byte("{}")), 2); err != nil {
			t.Fatal(err)
		}
	}
	// Old: versions 1000 and 1001 have no commit (kept); young: version 500 (kept).
	c.t = c.t.Add(-48 * time.Hour)
	put(LogDir + ".tmp/00000000000000001000.json.a")
	put(LogDir + ".tmp/00000000000000001001.json.b")
	c.t = c.t.Add(48 * time.Hour)
	put(LogDir + ".tmp/00000000000000000500.json.c")

	// The reference: every .tmp/ file older than a day whose version is committed or
	// below the oldest commit, and delta-rs's file when older than a day.
	oldest := int64(-1)
	commits := map[int64]bool{}
	for _, k := range keys(t, s, LogDir) {
		if f := parseLogFile(k); f.kind == kindCommit {
			commits[f.version] = true
			if oldest < 0 {
				oldest = f.version
			}
		}
	}
	var want []string
	for oi, err := range s.List(ctx, LogDir, "") {
		if err != nil {
			t.Fatal(err)
		}
		if !oi.ModTime.Before(c.t.Add(-DefaultTempFileAge)) {
			continue
		}
		var v int64
		if name, ok := strings.CutPrefix(oi.Key, LogDir+".tmp/"); ok {
			if _, err := fmt.Sscanf(name, "%020d.json.", &v); err == nil && (commits[v] || v < oldest) {
				want = append(want, oi.Key)
			}
		} else if strings.HasPrefix(oi.Key, LogDir+"_commit_") {
			want = append(want, oi.Key)
		}
	}
	if oldest <= 0 || len(want) < 180 {
		t.Fatalf("the test wants a cleaned log: oldest commit %d, %d to delete", oldest, len(want))
	}
	counting := &keyCounting{Store: s, keys: map[string]int{}}
	res, err := Open(counting, &memLogStore{s: s}, opts).CleanupTempFiles(ctx, TempFileOptions{})
	if err != nil || !slices.Equal(res.Deleted, want) || res.DeletedBytes != 2*int64(len(want)) {
		t.Fatalf("deleted %v (%d bytes), %v\nwant %v", res.Deleted, res.DeletedBytes, err, want)
	}
	// That run listed the log from the lowest candidate version (0: from the oldest file)
	// to past 1001, the whole versioned log here. The next finds only 1000 and 1001 old:
	// it lists from 1000 (one key, _last_checkpoint, past the versioned files) and, with
	// no commit for them, up to the oldest commit (the 6 files of its version).
	for _, k := range []string{LogDir + ".tmp/00000000000000001000.json.a", LogDir + ".tmp/00000000000000001001.json.b", LogDir + ".tmp/00000000000000000500.json.c"} {
		if _, err := s.Head(ctx, k); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	clear(counting.keys)
	c.t = c.t.Add(time.Hour)
	res, err = Open(counting, &memLogStore{s: s}, opts).CleanupTempFiles(ctx, TempFileOptions{})
	if err != nil || len(res.Deleted) != 0 {
		t.Fatalf("second run: %v, %v", res.Deleted, err)
	}
	if n := counting.keys[LogDir]; n != 7 {
		t.Fatalf("second run listed %d keys of the log: %v", n, counting.keys)
	}
}
