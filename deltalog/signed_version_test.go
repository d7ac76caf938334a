package deltalog

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// A version in a log file name is exactly 20 ASCII digits (docs/reference/delta-protocol.md
// §1.1); strconv.ParseInt also takes a sign, so "+" or "-" and 19 digits are 20 characters
// it reads as a version. signedNames are such names: none is a log file, and files whose
// names match no pattern are ignored.
var signedNames = []string{
	"+0000000000000000003.json",
	"-0000000000000000003.json",
	"+0000000000000000003.checkpoint.parquet",
	"+0000000000000000003.checkpoint.0000000001.0000000001.parquet",
	"00000000000000000003.checkpoint.+000000001.0000000001.parquet", // a signed part number
	"+0000000000000000003.crc",
	"00000000000000000001.+0000000000000000003.compacted.json",
	"+0000000000000000001.00000000000000000003.compacted.json",
}

// The log file classifiers take no sign-prefixed version.
func TestLogFileNamesRefuseSignedVersions(t *testing.T) {
	for _, name := range signedNames {
		// kindOther; with no version at all when the name starts with the sign.
		if f := parseLogFile(LogDir + name); f.kind != kindOther || (strings.ContainsAny(name[:1], "+-") && f.key != "") {
			t.Errorf("parseLogFile(%q) = %+v, want kindOther", name, f)
		}
		if v, ok := otherLogFileVersion(LogDir + name); ok {
			t.Errorf("otherLogFileVersion(%q) = %d, true", name, v)
		}
	}
	// The unsigned names still parse.
	if f := parseLogFile(CommitFileKey(3)); f.kind != kindCommit || f.version != 3 {
		t.Errorf("parseLogFile(%q) = %+v", CommitFileKey(3), f)
	}
	for name, want := range map[string]int64{"00000000000000000003.crc": 3, "00000000000000000001.00000000000000000003.compacted.json": 1} {
		if v, ok := otherLogFileVersion(LogDir + name); !ok || v != want {
			t.Errorf("otherLogFileVersion(%q) = %d, %v; want %d", name, v, ok, want)
		}
	}
}

// A listing of a log holding commits 0 and 1 and "+0000000000000000003.json" (which sorts
// before every versioned file, so a listing of the whole log shows it first) finds version 1
// the newest, and no commit 3 nor -3.
func TestListingIgnoresSignedVersions(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	put := func(key string) {
		if err := s.Put(ctx, key, bytes.NewReader([]byte("{}")), 2); err != nil {
			t.Fatal(err)
		}
	}
	put(CommitFileKey(0))
	put(CommitFileKey(1))
	for _, name := range signedNames {
		put(LogDir + name)
	}
	l, err := listLog(ctx, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(l.commits)); l.maxCommit != 1 || !slices.Equal(got, []int64{0, 1}) || len(l.checkpoints) != 0 {
		t.Fatalf("listing: newest %d, commits %v, checkpoints %v; want 1, [0 1], none", l.maxCommit, got, l.checkpoints)
	}
}

// Log clean-up deletes no file whose name carries a sign-prefixed version: it is no log
// file of the version it would read (a compacted file's second version included, which
// the clean-up's listing does reach).
func TestCleanupLogKeepsSignedVersions(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{CheckpointInterval: 10})
	for i := range 15 { // versions 0..14 on day 0; checkpoint at 10
		c.t = day0.Add(time.Duration(i) * time.Minute)
		appendFile(t, tbl, fmt.Sprint(i))
	}
	for _, name := range signedNames {
		if err := s.Put(ctx, LogDir+name, bytes.NewReader([]byte("{}")), 2); err != nil {
			t.Fatal(err)
		}
	}
	c.t = day0.Add(40 * 24 * time.Hour)
	res, err := tbl.CleanupLog(ctx, CleanupOptions{})
	if err != nil || res.Checkpoint != 10 {
		t.Fatalf("cleanup: %+v %v", res, err)
	}
	var want []string
	for v := range int64(10) {
		want = append(want, CommitFileKey(v))
	}
	if !slices.Equal(res.Deleted, want) {
		t.Fatalf("deleted %v\nwant %v", res.Deleted, want)
	}
	left := keys(t, s, LogDir)
	for _, name := range signedNames {
		if !slices.Contains(left, LogDir+name) {
			t.Errorf("%s deleted", name)
		}
	}
}

// Temp-file clean-up takes no ".tmp/" file whose name carries a sign-prefixed version for
// one of that version: "+0000000000000000004" is not version 4, committed, so its file is
// kept as every other name the clean-up does not know.
func TestCleanupTempFilesKeepsSignedVersions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tbl := Open(st, plainLogStore{st}, Options{Now: func() time.Time { return now }})
	old := 48 * time.Hour
	for _, rel := range []string{
		"_delta_log/00000000000000000003.json",
		"_delta_log/00000000000000000004.json",
		"_delta_log/.tmp/+0000000000000000004.json.aaa", // committed, were it version 4
		"_delta_log/.tmp/+0000000000000000001.json.bbb", // below the oldest commit, were it 1
		"_delta_log/.tmp/-0000000000000000001.json.ccc",
		"_delta_log/.tmp/00000000000000000004.json.ddd", // version 4, committed: delete
		"_delta_log/.tmp/00000000000000000005.json.eee", // the newest: kept (the DynamoDB mark)
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-old), now.Add(-old)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := tbl.CleanupTempFiles(ctx, TempFileOptions{})
	if want := []string{"_delta_log/.tmp/00000000000000000004.json.ddd"}; err != nil || !slices.Equal(got.Deleted, want) {
		t.Fatalf("deleted %v, %v; want %v", got.Deleted, err, want)
	}
}
