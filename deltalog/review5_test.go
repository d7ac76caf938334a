package deltalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// review5Aged builds, on tbl's clock, versions 0..14 on day 0 (checkpoint at 10, the
// interval 10) and 15..24 on day 40, then cleans the log: commits 0..9 are deleted.
func review5Aged(t *testing.T, c *clock, tbl *Table, day0 time.Time, at5 func()) {
	t.Helper()
	for i := range 15 {
		c.t = day0.Add(time.Duration(i) * time.Minute)
		appendFile(t, tbl, fmt.Sprint(i))
		if i == 5 && at5 != nil {
			at5()
		}
	}
	day40 := day0.Add(40 * 24 * time.Hour)
	for i := 15; i < 25; i++ {
		c.t = day40.Add(time.Duration(i) * time.Minute)
		appendFile(t, tbl, fmt.Sprint(i))
	}
	if res, err := tbl.CleanupLog(context.Background(), CleanupOptions{}); err != nil || res.Checkpoint != 10 {
		t.Fatalf("precondition: cleanup %+v %v, want commits below checkpoint 10 deleted", res, err)
	}
}

// staleOtherTable is the scenario of TestReview5HoleStaleSnapshotOtherTableCleanup with
// log stores made by newLogs (one per Table: two processes): the writer's Table reads
// version 5 and nothing since; the other Table commits up to 24 and cleans commits 0..9
// (checkpoint 10); the writer commits on its snapshot 5. It returns Commit's answer and
// whether 6.json exists after.
func staleOtherTable(t *testing.T, newLogs func(s *memStore, now func() time.Time) logstore.LogStore) (CommitResult, error, bool) {
	t.Helper()
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	s := newMemStore()
	s.Now = c.now
	opts := Options{Now: c.now, RetryBaseDelay: time.Microsecond, CheckpointInterval: 10}
	tbl := Open(s, newLogs(s, c.now), opts)
	writer := Open(s, newLogs(s, c.now), opts)
	var old *Snapshot
	review5Aged(t, c, tbl, day0, func() { old = snapshot(t, writer) })
	if old.Version() != 5 {
		t.Fatalf("precondition: old snapshot at %d, want 5", old.Version())
	}
	tx := writer.Begin(old)
	tx.Add(testAdd("late"))
	res, err := tx.Commit(ctx)
	_, herr := s.Head(ctx, CommitFileKey(6))
	if herr != nil && !errors.Is(herr, storage.ErrNotFound) {
		t.Fatal(herr)
	}
	if snap := snapshot(t, tbl); snap.Version() < 24 {
		t.Errorf("latest: version %d, want at least 24", snap.Version())
	}
	return res, err, herr == nil
}

// The DynamoDB log store does not write into the cleaned range either (its Write checks
// that the previous commit file exists, 5.json, deleted, and refuses with
// *dynamo.PreviousCommitMissingError, which asks for a repair): Commit's Latest for a
// snapshot not seen as the newest lately finds version 24 and reports the conflict
// before any write.
func TestReview5StaleSnapshotOtherTableCleanupDynamo(t *testing.T) {
	ddb := emulators.DynamoDB(t)
	table := emulators.UniqueName("delta_log_")
	if err := dynamo.CreateTable(t.Context(), ddb, table, dynamo.SetupOptions{SkipTTL: true, PollInterval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	res, err, written := staleOtherTable(t, func(s *memStore, now func() time.Time) logstore.LogStore {
		l, err := dynamo.New(ddb, s, dynamo.Options{Table: table, TablePath: "s3a://b/review5", RetryDelay: time.Millisecond, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
	if err == nil || written {
		t.Fatalf("Commit on a snapshot older than another process's clean-up: %+v %v, 6.json written %v; want an error, nothing written", res, err, written)
	}
	var cme *ConcurrentModificationError
	if !errors.As(err, &cme) {
		t.Errorf("error %v, want *ConcurrentModificationError (a new Snapshot will do), not the log store's refusal that asks for a repair", err)
	}
}

// Not a false conflict: a log store that tells no replacements (localfs) and a Table
// that knew version 9 of a table since deleted and created again (versions 0..2 now, by
// another Table). A fresh Snapshot reads version 2; its transaction is told
// *ConcurrentModificationError "deleted by the log's clean-up" because the Table still
// knows version 9 (knownTaken), goes to rebase, and version 3 (free) reads as not found.
// Every new Snapshot gets the same: the Table can never commit again. Before 1b696c4 the
// commit took version 3. It should commit version 3.
func TestReview5StartedOverLogCommits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *Table {
		s, err := localstore.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		l, err := localfs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		return Open(s, l, Options{RetryBaseDelay: time.Microsecond, CheckpointInterval: 100})
	}
	tbl := open()
	for i := range 10 {
		appendFile(t, tbl, fmt.Sprint("old", i))
	}
	if err := os.RemoveAll(filepath.Join(dir, "_delta_log")); err != nil {
		t.Fatal(err)
	}
	other := open()
	for i := range 3 {
		appendFile(t, other, fmt.Sprint("new", i))
	}
	want := snapshot(t, other).Version() + 1
	for attempt := range 2 {
		snap := snapshot(t, tbl)
		if snap.Version() != want-1 {
			t.Fatalf("precondition: the Table reads version %d of the log started over, want %d", snap.Version(), want-1)
		}
		tx := tbl.Begin(snap)
		tx.Add(testAdd(fmt.Sprint("after", attempt)))
		res, err := tx.Commit(ctx)
		if err != nil {
			t.Fatalf("attempt %d: commit on a fresh snapshot (version %d) of the log started over: %v; want version %d", attempt, want-1, err, want)
		}
		if res.Version != want {
			t.Fatalf("attempt %d: committed version %d, want %d", attempt, res.Version, want)
		}
		want++
	}
}

// A transaction of app id "a" version 1 on snapshot 5 committed version 6 but its caller
// never learned it (the answer lost); the Table goes on to 8. The same transaction
// begun again on snapshot 5 is recognized as committed (Skipped), not refused: knownTaken
// sends it to rebase, which finds its txn in version 6.
func TestReview5StaleSnapshotTxnRetrySkipped(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{CheckpointInterval: 100})
	for i := range 6 {
		appendFile(t, tbl, fmt.Sprint(i))
	}
	old := snapshot(t, tbl)
	commitApp := func() (CommitResult, error) {
		tx := tbl.Begin(old)
		tx.SetAppTxn("a", 1)
		tx.Add(testAdd("app-1"))
		return tx.Commit(ctx)
	}
	if res, err := commitApp(); err != nil || res.Version != 6 {
		t.Fatalf("first commit: %+v %v, want version 6", res, err)
	}
	appendFile(t, tbl, "7")
	appendFile(t, tbl, "8")
	res, err := commitApp()
	if err != nil || !res.Skipped {
		t.Fatalf("retried commit of app a/1 on snapshot 5: %+v %v; want Skipped", res, err)
	}
	if _, err := s.Head(ctx, CommitFileKey(9)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the retry wrote version 9 (%v)", err)
	}
	if snap := snapshot(t, tbl); len(snap.Files()) != 9 {
		t.Errorf("latest holds %d files, want 9 (app-1 once)", len(snap.Files()))
	}
}

// After the clean-up deleted the version holding app "a" version 1's commit, the same
// transaction retried on its old snapshot is refused (it cannot be checked), and begun
// again from a new Snapshot, as the error says, it is Skipped: idempotence holds through
// the refusal.
func TestReview5StaleSnapshotTxnRetryAfterCleanup(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, _ := newClockTable(t, c, Options{CheckpointInterval: 10})
	var old *Snapshot
	commitApp := func(snap *Snapshot) (CommitResult, error) {
		tx := tbl.Begin(snap)
		tx.SetAppTxn("a", 1)
		tx.Add(testAdd("app-1"))
		return tx.Commit(ctx)
	}
	review5Aged(t, c, tbl, day0, func() {
		old = snapshot(t, tbl)
		if res, err := commitApp(old); err != nil || res.Version != 6 {
			t.Fatalf("first commit: %+v %v, want version 6", res, err)
		}
	})
	res, err := commitApp(old)
	var cme *ConcurrentModificationError
	if !errors.As(err, &cme) {
		t.Fatalf("retry on the snapshot older than the clean-up: %+v %v; want *ConcurrentModificationError", res, err)
	}
	res, err = commitApp(snapshot(t, tbl))
	if err != nil || !res.Skipped {
		t.Fatalf("retry on a new snapshot: %+v %v; want Skipped", res, err)
	}
}

// A blind append on a snapshot older than the Table knows (no clean-up) is retried at
// the latest + 1 without writing the version known taken: one Write, at 9.
func TestReview5StaleSnapshotBlindAppendRetries(t *testing.T) {
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	s := newMemStore()
	s.Now = c.now
	logs := &countingLogStore{memLogStore: memLogStore{s: s}}
	tbl := Open(s, logs, Options{Now: c.now, RetryBaseDelay: time.Hour, CheckpointInterval: 100})
	for i := range 6 {
		appendFile(t, tbl, fmt.Sprint(i))
	}
	old := snapshot(t, tbl)
	for i := 6; i < 9; i++ {
		appendFile(t, tbl, fmt.Sprint(i))
	}
	logs.writes = nil
	tx := tbl.Begin(old)
	tx.Add(testAdd("late"))
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	res, err := tx.Commit(cctx)
	if err != nil || res.Version != 9 {
		t.Fatalf("blind append on snapshot 5 with the Table at 8: %+v %v; want version 9", res, err)
	}
	if len(logs.writes) != 1 || logs.writes[0] != 9 {
		t.Errorf("writes %v, want [9] (6 is known taken)", logs.writes)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("commit took %v with a 1 h backoff base: it waited before a race it never ran", d)
	}
}

type countingLogStore struct {
	memLogStore
	writes []int64
}

func (l *countingLogStore) Write(ctx context.Context, v int64, data []byte) error {
	l.writes = append(l.writes, v)
	return l.memLogStore.Write(ctx, v, data)
}

// copyFailStore fails CopyIfAbsent while failCopy is set: a DynamoDB writer dies between
// claiming its entry and publishing the commit file (the entry stays incomplete).
type copyFailStore struct {
	*memStore
	failCopy bool
}

func (s *copyFailStore) CopyIfAbsent(ctx context.Context, src, dst string) error {
	if s.failCopy {
		return errors.New("injected: copy lost")
	}
	return s.memStore.CopyIfAbsent(ctx, src, dst)
}

// The DynamoDB log store's commit 4 is claimed (entry incomplete, its temp file written)
// but never copied to 4.json; three days later CleanupTempFiles deletes a decided temp
// files (0..3's, and a loser's of version 2, whose commits exist) and keeps 4's, whatever its age:
// recovery then completes version 4 from it.
func TestReview5TempFilesKeepUndecidedDynamoCommit(t *testing.T) {
	ctx := context.Background()
	ddb := emulators.DynamoDB(t)
	table := emulators.UniqueName("delta_log_")
	if err := dynamo.CreateTable(ctx, ddb, table, dynamo.SetupOptions{SkipTTL: true, PollInterval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	s := newMemStore()
	s.Now = c.now
	fs := &copyFailStore{memStore: s}
	newLogs := func(st storage.Store) *dynamo.LogStore {
		l, err := dynamo.New(ddb, st, dynamo.Options{Table: table, TablePath: "s3a://b/review5tmp", RetryDelay: time.Millisecond, Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	opts := Options{Now: c.now, RetryBaseDelay: time.Microsecond, CheckpointInterval: 100}
	tbl := Open(fs, newLogs(fs), opts)
	for i := range 4 {
		appendFile(t, tbl, fmt.Sprint(i))
	}
	loser := fmt.Sprintf("%s.tmp/%020d.json.loser", LogDir, 2)
	if err := s.Put(ctx, loser, bytes.NewReader([]byte("{}\n")), 3); err != nil {
		t.Fatal(err)
	}
	fs.failCopy = true
	if v := appendFile(t, tbl, "4"); v != 4 {
		t.Fatalf("precondition: commit 4 answered %d", v)
	}
	if _, err := s.Head(ctx, CommitFileKey(4)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("precondition: 4.json published (%v); want the entry left incomplete", err)
	}
	var tmp4 []string
	for oi, err := range s.List(ctx, LogDir+".tmp/", fmt.Sprintf("%s.tmp/%020d", LogDir, 4)) {
		if err != nil {
			t.Fatal(err)
		}
		tmp4 = append(tmp4, oi.Key)
	}
	if len(tmp4) != 1 {
		t.Fatalf("precondition: temp files of 4: %v", tmp4)
	}
	// Decided: the temp files of 0..3 (their commits exist), the loser's included.
	var want []string
	var wantBytes int64
	for oi, err := range s.List(ctx, LogDir+".tmp/", "") {
		if err != nil {
			t.Fatal(err)
		}
		if oi.Key != tmp4[0] {
			want, wantBytes = append(want, oi.Key), wantBytes+oi.Size
		}
	}
	if len(want) != 5 || !slices.Contains(want, loser) {
		t.Fatalf("precondition: decided temp files %v", want)
	}
	c.t = day0.Add(3 * 24 * time.Hour)
	res, err := Open(s, &memLogStore{s: s}, opts).CleanupTempFiles(ctx, TempFileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Deleted, want) || res.DeletedBytes != wantBytes {
		t.Fatalf("deleted %v (%d bytes), want %v (%d bytes)", res.Deleted, res.DeletedBytes, want, wantBytes)
	}
	if _, err := s.Head(ctx, tmp4[0]); err != nil {
		t.Fatalf("the undecided commit's temp file %s: %v", tmp4[0], err)
	}
	snap, err := Open(s, newLogs(s), opts).Snapshot(ctx)
	if err != nil || snap.Version() != 4 || len(snap.Files()) != 5 {
		t.Fatalf("after recovery: %v %v; want version 4 with 5 files", snap, err)
	}
	if _, err := s.Head(ctx, CommitFileKey(4)); err != nil {
		t.Fatalf("4.json after recovery: %v", err)
	}
}
