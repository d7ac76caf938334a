package deltatest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// ConcurrentAppends runs writers goroutines that each append appends batches to one new
// table, each batch one commit carrying txn("writer-<w>", batch). open is called once per
// writer (as each Lambda opens the table itself) and must return handles on the same,
// initially empty, table. Even writers begin each append from the previous commit's
// Transaction.NextSnapshot (so nearly every commit loses races and rebases), odd writers
// from a freshly read snapshot.
//
// It checks: the first commit creates the table (the losers of that race get
// *ConcurrentModificationError and retry on the new table); the versions the writers got
// are exactly 0..writers·appends-1, each once, and the log has no other version; every
// batch's file is live exactly once and every writer's txn version is appends; replaying
// each writer's last batches — from the latest snapshot and from a stale one, so the skip
// is found after a lost race — is skipped and writes nothing.
//
// A commit that ran out of attempts (*deltalog.CommitAttemptsError) is retried by the
// writer, as a caller would; the retries are logged.
func ConcurrentAppends(t *testing.T, open func() (storage.Store, logstore.LogStore), writers, appends int) {
	t.Helper()
	ctx := context.Background()
	opts := deltalog.Options{RetryBaseDelay: 2 * time.Millisecond}
	var (
		mu       sync.Mutex
		versions []int64
		retries  int
		wg       sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			s, l := open()
			tbl := deltalog.Open(s, l, opts)
			app := fmt.Sprintf("writer-%d", w)
			keep := w%2 == 0 // even writers go on from NextSnapshot, odd ones re-read
			var snap *deltalog.Snapshot
			for b := int64(1); b <= int64(appends); b++ {
				path := fmt.Sprintf("w%03d-b%05d.parquet", w, b)
				for try := 0; ; try++ {
					var err error
					if snap == nil || !keep {
						if snap, err = tbl.Snapshot(ctx); err != nil {
							t.Errorf("%s batch %d: %v", app, b, err)
							return
						}
					}
					tx := tbl.Begin(snap)
					if err := tx.SetSchema(Schema); err != nil {
						t.Errorf("%s batch %d: %v", app, b, err)
						return
					}
					tx.Add(fakeAdd(path))
					tx.SetAppTxn(app, b)
					res, err := tx.Commit(ctx)
					if err == nil {
						snap, err = tx.NextSnapshot(ctx)
					}
					var cme *deltalog.ConcurrentModificationError
					var cae *deltalog.CommitAttemptsError
					if (errors.As(err, &cme) && cme.Version == 0) || errors.As(err, &cae) {
						snap = nil
						if try > 100 {
							t.Errorf("%s batch %d: still failing after %d tries: %v", app, b, try, err)
							return
						}
						mu.Lock()
						retries++
						mu.Unlock()
						continue
					}
					if err != nil {
						t.Errorf("%s batch %d: %v", app, b, err)
						return
					}
					if res.Skipped {
						t.Errorf("%s batch %d: skipped at version %d, but it was never committed", app, b, res.Version)
						return
					}
					mu.Lock()
					versions = append(versions, res.Version)
					mu.Unlock()
					break
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d writers × %d appends: %d whole-commit retries", writers, appends, retries)

	total := writers * appends
	slices.Sort(versions)
	for i, v := range versions {
		if v != int64(i) {
			t.Fatalf("committed versions are not 0..%d contiguous and unique: position %d holds %d", total-1, i, v)
		}
	}
	if len(versions) != total {
		t.Fatalf("%d commits acknowledged, want %d", len(versions), total)
	}

	s, l := open()
	tbl := deltalog.Open(s, l, opts)
	latest, err := l.Latest(ctx)
	if err != nil || latest != int64(total-1) {
		t.Fatalf("latest version %d (%v), want %d", latest, err, total-1)
	}
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkAllBatches(t, snap, writers, appends)

	// Replays are skipped: from the latest snapshot (checked against the snapshot) and
	// from a stale one (checked against the winning commits after the lost race).
	stale, err := tbl.SnapshotAt(ctx, max(0, latest-int64(2*writers)))
	if err != nil {
		t.Fatal(err)
	}
	for w := range writers {
		wg.Go(func() {
			app := fmt.Sprintf("writer-%d", w)
			for _, from := range []*deltalog.Snapshot{snap, stale} {
				tx := tbl.Begin(from)
				tx.Add(fakeAdd(fmt.Sprintf("replay-w%03d.parquet", w)))
				tx.SetAppTxn(app, int64(appends))
				res, err := tx.Commit(ctx)
				if err != nil || !res.Skipped {
					t.Errorf("%s: replay of batch %d from version %d: %+v, %v; want skipped", app, appends, from.Version(), res, err)
				}
			}
		})
	}
	wg.Wait()
	if after, err := l.Latest(ctx); err != nil || after != latest {
		t.Fatalf("latest after replays %d (%v), want %d", after, err, latest)
	}
}

// checkAllBatches checks that every writer's batches 1..appends are live exactly once and
// that each writer's txn version is appends.
func checkAllBatches(t *testing.T, snap *deltalog.Snapshot, writers, appends int) {
	t.Helper()
	files := snap.Files()
	if len(files) != writers*appends {
		t.Errorf("%d live files, want %d", len(files), writers*appends)
	}
	for w := range writers {
		if v, ok := snap.TxnVersion(fmt.Sprintf("writer-%d", w)); !ok || v != int64(appends) {
			t.Errorf("writer-%d txn version %d (%v), want %d", w, v, ok, appends)
		}
		for b := 1; b <= appends; b++ {
			if n := countPrefix(files, fmt.Sprintf("w%03d-b%05d.", w, b)); n != 1 {
				t.Errorf("writer %d batch %d: %d live files, want 1", w, b, n)
			}
		}
	}
}
