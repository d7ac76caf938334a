package deltalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
)

// logCalls counts a log store's Latest and Read calls apart.
type logCalls struct {
	logstore.LogStore
	latest, reads atomic.Int64
}

func (c *logCalls) Latest(ctx context.Context) (int64, error) {
	c.latest.Add(1)
	return c.LogStore.Latest(ctx)
}

func (c *logCalls) Read(ctx context.Context, v int64) ([]byte, error) {
	c.reads.Add(1)
	return c.LogStore.Read(ctx, v)
}

// appendAs commits one blind append of file name with txn(app, version) through tbl,
// begun from the table's latest snapshot.
func appendAs(t *testing.T, tbl *Table, name, app string, version int64) CommitResult {
	t.Helper()
	tx := tbl.Begin(snapshot(t, tbl))
	tx.Add(testAdd(name))
	tx.SetAppTxn(app, version)
	res, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatalf("append %s: %v", name, err)
	}
	return res
}

// A Table keeps the snapshot it read or committed: the next Snapshot asks the log store
// for the latest version and reads only the commits made since, by this Table or by
// others, and the result equals a fresh read of the table.
func TestTableKeepsSnapshot(t *testing.T) {
	s := newMemStore()
	calls := &logCalls{LogStore: &memLogStore{s: s}}
	tbl := Open(s, calls, Options{CheckpointInterval: 5})
	other := Open(s, &memLogStore{s: s}, Options{CheckpointInterval: 5})
	createTable(t, tbl)

	step := func(name string, wantVersion, wantReads int64) {
		t.Helper()
		calls.latest.Store(0)
		calls.reads.Store(0)
		got := snapshot(t, tbl)
		if got.Version() != wantVersion {
			t.Fatalf("%s: version %d, want %d", name, got.Version(), wantVersion)
		}
		if l, r := calls.latest.Load(), calls.reads.Load(); l != 1 || r != wantReads {
			t.Errorf("%s: %d Latest and %d Read calls, want 1 and %d", name, l, r, wantReads)
		}
		if g, w := snapState(t, got), snapState(t, snapshot(t, reopen(tbl))); g != w {
			t.Fatalf("%s: kept snapshot\n%s\nfresh read\n%s", name, g, w)
		}
	}
	step("after our create", 0, 0)
	step("nothing new", 0, 0)
	appendAs(t, tbl, "a1", "a", 1)
	step("after our append", 1, 0)
	appendAs(t, other, "b1", "b", 1)
	appendAs(t, other, "b2", "b", 2)
	step("after two of another writer's", 3, 2)
	// Across a checkpoint written by the other writer (version 5), and then one by us.
	for v := range int64(4) {
		appendAs(t, other, fmt.Sprint("b", v+3), "b", v+3)
	}
	step("across another writer's checkpoint", 7, 4)
	for v := range int64(3) {
		appendAs(t, tbl, fmt.Sprint("a", v+2), "a", v+2)
	}
	step("across our checkpoint", 10, 0)
	if _, err := s.Head(context.Background(), CheckpointFileKey(10)); err != nil {
		t.Fatalf("checkpoint 10: %v", err)
	}

	// Further behind than hintedReplayLimit: read afresh from the newest checkpoint.
	for v := range int64(hintedReplayLimit + 1) {
		appendAs(t, other, fmt.Sprint("c", v), "c", v+1)
	}
	latest := 10 + int64(hintedReplayLimit) + 1
	calls.reads.Store(0)
	got := snapshot(t, tbl)
	if got.Version() != latest || calls.reads.Load() != latest%5 {
		t.Fatalf("far behind: version %d after %d commit reads, want %d after %d (from the checkpoint)",
			got.Version(), calls.reads.Load(), latest, latest%5)
	}
}

// Writers that each keep their own snapshot (separate processes, one Table each) append
// concurrently, each beginning every transaction from its Table's Snapshot, or chaining
// the transaction's NextSnapshot: every commit lands once, each writer's kept state ends
// equal to a fresh read, and the checkpoints written on the way are complete.
func TestConcurrentWritersKeepSnapshots(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	opts := Options{CheckpointInterval: 7, RetryBaseDelay: 1}
	first := Open(s, &memLogStore{s: s}, opts)
	createTable(t, first)

	const writers, commits = 4, 15
	tables := make([]*Table, writers)
	for i := range tables {
		tables[i] = Open(s, &memLogStore{s: s}, opts)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i, tbl := range tables {
		wg.Go(func() {
			app := fmt.Sprint("w", i)
			var snap *Snapshot
			for k := range int64(commits) {
				if snap == nil || i%2 == 0 {
					var err error
					if snap, err = tbl.Snapshot(ctx); err != nil {
						errs <- err
						return
					}
				}
				tx := tbl.Begin(snap)
				tx.Add(testAdd(fmt.Sprint(app, "-", k)))
				tx.SetAppTxn(app, k+1)
				res, err := tx.Commit(ctx)
				if err != nil || res.Skipped {
					errs <- fmt.Errorf("%s commit %d: %+v %v", app, k, res, err)
					return
				}
				if snap, err = tx.NextSnapshot(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	fresh := snapshot(t, reopen(first))
	if want := int64(writers * commits); fresh.Version() != want || fresh.NumFiles() != writers*commits+1 {
		t.Fatalf("version %d with %d files, want %d with %d", fresh.Version(), fresh.NumFiles(), want, writers*commits+1)
	}
	for i := range writers {
		if v, ok := fresh.TxnVersion(fmt.Sprint("w", i)); !ok || v != commits {
			t.Errorf("txn w%d = %d, %v", i, v, ok)
		}
	}
	want := snapState(t, fresh)
	for i, tbl := range append(tables, first) {
		if got := snapState(t, snapshot(t, tbl)); got != want {
			t.Errorf("writer %d keeps\n%s\nfresh read\n%s", i, got, want)
		}
	}
	// Every checkpoint lists every file live at its version.
	for v := int64(7); v <= fresh.Version(); v += 7 {
		cp, err := readCheckpointSnapshot(ctx, s, v)
		if err != nil {
			t.Fatalf("checkpoint %d: %v", v, err)
		}
		if cp != int(v)+1 {
			t.Errorf("checkpoint %d lists %d files, want %d", v, cp, v+1)
		}
	}
}

// readCheckpointSnapshot is the number of live files in the checkpoint of version v.
func readCheckpointSnapshot(ctx context.Context, s *memStore, v int64) (int, error) {
	acts, adds, _, _, err := readCheckpoint(ctx, s, []string{CheckpointFileKey(v)})
	if err != nil {
		return 0, err
	}
	n := len(adds)
	for _, a := range acts {
		if a.Add != nil {
			n++
		}
	}
	return n, nil
}

// A transaction begun from a kept snapshot that was advanced from the log still sees every
// commit made after it: conflicts and replays are detected as from a fresh read, and the
// Table's kept state afterwards holds the winners.
func TestKeptSnapshotConflicts(t *testing.T) {
	ctx := context.Background()
	evolved := arrow.NewSchema(append(testSchema.Fields(), arrow.Field{Name: "z", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), nil)
	cases := []struct {
		name   string
		winner func(tx *Transaction)
		check  func(t *testing.T, res CommitResult, err error)
	}{
		{"metadata changed", func(tx *Transaction) {
			if err := tx.SetSchema(evolved); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, res CommitResult, err error) {
			var cme *ConcurrentModificationError
			if !errors.As(err, &cme) || cme.Version != 4 || cme.Reason != "changed the metadata" {
				t.Fatalf("%+v %v", res, err)
			}
		}},
		{"same app txn at our version", func(tx *Transaction) { tx.SetAppTxn("app", 5) },
			func(t *testing.T, res CommitResult, err error) {
				if err != nil || res != (CommitResult{Version: 4, Skipped: true}) {
					t.Fatalf("%+v %v", res, err)
				}
			}},
		{"same app txn below our version", func(tx *Transaction) { tx.SetAppTxn("app", 4) },
			func(t *testing.T, res CommitResult, err error) {
				var cte *ConcurrentTxnError
				if !errors.As(err, &cte) || cte.Recorded != 4 || cte.Version != 4 {
					t.Fatalf("%+v %v", res, err)
				}
			}},
		{"other app txn", func(tx *Transaction) { tx.SetAppTxn("other", 9) },
			func(t *testing.T, res CommitResult, err error) {
				if err != nil || res != (CommitResult{Version: 5}) {
					t.Fatalf("%+v %v", res, err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newMemStore()
			calls := &logCalls{LogStore: &memLogStore{s: s}}
			ours := Open(s, calls, Options{RetryBaseDelay: 1})
			other := Open(s, &memLogStore{s: s}, Options{RetryBaseDelay: 1})
			createTable(t, ours)
			appendAs(t, other, "o1", "other", 1)
			appendAs(t, other, "o2", "other", 2)
			appendAs(t, other, "o3", "other", 3)
			calls.reads.Store(0)
			base := snapshot(t, ours) // advanced from version 0: three commits read
			if base.Version() != 3 || calls.reads.Load() != 3 {
				t.Fatalf("advanced to %d reading %d commits", base.Version(), calls.reads.Load())
			}
			tx := ours.Begin(base)
			tx.Add(testAdd("ours"))
			tx.SetAppTxn("app", 5)

			winner := other.Begin(snapshot(t, other))
			winner.Add(testAdd("winner"))
			c.winner(winner)
			if res, err := winner.Commit(ctx); err != nil || res.Version != 4 {
				t.Fatalf("winner: %+v %v", res, err)
			}
			res, err := tx.Commit(ctx)
			c.check(t, res, err)

			if g, w := snapState(t, snapshot(t, ours)), snapState(t, snapshot(t, reopen(ours))); g != w {
				t.Fatalf("kept after the race\n%s\nfresh read\n%s", g, w)
			}
		})
	}
}

// A Table that keeps its snapshot drops, when it writes a checkpoint, the tombstones the
// checkpoint leaves out as expired: its kept state stays what a read from that checkpoint
// gives, and a warm writer's memory and checkpoint work do not grow with every file ever
// removed (BenchmarkThirtyDays: 43,000 removes in 30 days of hourly compaction).
func TestKeptSnapshotDropsExpiredTombstones(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	tbl, _ := newClockTable(t, c, Options{CheckpointInterval: 5})
	appendFile(t, tbl, "a") // 0
	appendFile(t, tbl, "b") // 1
	remove := func(name string) {
		t.Helper()
		if _, err := commitAt(t, tbl, snapshot(t, tbl), func(tx *Transaction) {
			a := testAdd(name)
			tx.Remove(a.RemoveAction(c.t.UnixMilli(), true))
		}); err != nil {
			t.Fatal(err)
		}
	}
	remove("a") // 2
	c.t = c.t.Add(DefaultTombstoneRetention + time.Hour)
	remove("b")             // 3
	appendFile(t, tbl, "c") // 4
	appendFile(t, tbl, "d") // 5: checkpoint
	kept := snapshot(t, tbl)
	if kept.Version() != 5 || kept.CheckpointVersion() != 5 {
		t.Fatalf("kept version %d, checkpoint %d; want 5 and 5", kept.Version(), kept.CheckpointVersion())
	}
	got, want := tombstonePaths(tombstonesOf(t, kept)), tombstonePaths(tombstonesOf(t, snapshot(t, reopen(tbl))))
	if !slices.Equal(got, []string{testAdd("b").Path}) || !slices.Equal(got, want) {
		t.Fatalf("kept tombstones %v, a read from the checkpoint %v; want only b's", got, want)
	}
}
