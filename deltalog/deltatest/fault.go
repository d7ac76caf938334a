package deltatest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// The app ids of FaultCommits: the killed writer's batches, and the next writer's own.
const (
	FaultApp = "faulty"
	NextApp  = "next"
)

// FaultCommits kills a writer at every step of a commit and checks what the next writer
// finds. open must return handles on one shared, initially empty table with the writer's
// external calls routed through f: at least f.Store and f.LogStore around the store and
// log store it returns, and — for a log store built on other services — f.Hit around each
// of their requests (and f.Store around the store the log store writes through), so the
// kill can land between any two requests.
//
// For each mode (the k-th call does not happen; the k-th call happens and its answer is
// lost) and for k = 1, 2, … until a commit completes without reaching its k-th call, one
// writer commits batch n with txn(FaultApp, n) on a snapshot read cleanly — the commit's
// writes and the checkpoint it triggers (the interval is 1: every commit writes one) — and
// is killed at its k-th call. Then a clean writer must:
//   - read the table (Snapshot succeeds, every version 0..latest reads);
//   - find every batch that was acknowledged (Commit returned nil) live exactly once;
//   - re-append batch n as the killed writer's retry would: skipped when batch n landed,
//     committed otherwise, and afterwards batch n is live exactly once;
//   - commit a batch of its own (app NextApp).
//
// A Commit that returns an error although nothing was killed fails the test.
func FaultCommits(t *testing.T, open func(f *Faults) (storage.Store, logstore.LogStore)) {
	t.Helper()
	ctx := context.Background()
	opts := deltalog.Options{CheckpointInterval: 1, RetryBaseDelay: time.Millisecond}
	clean := func() *deltalog.Table {
		s, l := open(&Faults{})
		return deltalog.Open(s, l, opts)
	}
	acked := map[int64]bool{}
	batch := int64(0)
	readable := int64(0) // versions below have been read back
	killed := 0
	for _, after := range []bool{false, true} {
		for k := 1; ; k++ {
			if k > 200 {
				t.Fatalf("a commit made over 200 calls")
			}
			batch++
			f := &Faults{KillAt: k, After: after}
			s, l := open(f)
			res, err := appendOnce(ctx, clean(), deltalog.Open(s, l, opts), FaultApp, batch, batchPath(batch, 1))
			fired := f.Killed()
			step := fmt.Sprintf("after=%t k=%d", after, k)
			if fired {
				killed++
				ops := f.Ops()
				step += " (" + ops[len(ops)-1] + ")"
			}
			switch {
			case err == nil && res.Skipped:
				t.Fatalf("%s: batch %d skipped but never committed", step, batch)
			case err == nil:
				acked[batch] = true
			case !fired:
				t.Fatalf("%s: commit failed with no fault injected: %v", step, err)
			case !errors.Is(err, ErrKilled):
				t.Logf("%s: commit error does not wrap ErrKilled: %v", step, err)
			}

			// The next writer: the table is readable and nothing acknowledged is lost.
			tbl := clean()
			readable = checkReadable(t, ctx, tbl, readable, step)
			snap, err := tbl.Snapshot(ctx)
			if err != nil {
				t.Fatalf("%s: snapshot after the kill: %v", step, err)
			}
			for b := range acked {
				if n := countPrefix(snap.Files(), batchPrefix(b)); n != 1 {
					t.Fatalf("%s: acknowledged batch %d has %d live files, want 1", step, b, n)
				}
			}
			// The killed writer's retry (a new attempt, a new file name).
			res, err = appendOnce(ctx, tbl, tbl, FaultApp, batch, batchPath(batch, 2))
			if err != nil {
				t.Fatalf("%s: retry of batch %d: %v", step, batch, err)
			}
			if acked[batch] && !res.Skipped {
				t.Fatalf("%s: retry of acknowledged batch %d was committed again at version %d", step, batch, res.Version)
			}
			acked[batch] = true
			snap, err = tbl.Snapshot(ctx)
			if err != nil {
				t.Fatalf("%s: snapshot after the retry: %v", step, err)
			}
			if n := countPrefix(snap.Files(), batchPrefix(batch)); n != 1 {
				t.Fatalf("%s: batch %d has %d live files after the retry, want 1", step, batch, n)
			}
			// The next writer goes on with its own work (and writes the checkpoint the
			// killed writer may have left undone).
			if _, err := appendOnce(ctx, tbl, tbl, NextApp, batch, fmt.Sprintf("next-b%05d.parquet", batch)); err != nil {
				t.Fatalf("%s: next writer's append: %v", step, err)
			}
			if !fired {
				t.Logf("after=%t: a commit made %d calls: %v", after, f.Calls(), f.Ops())
				break
			}
		}
	}
	t.Logf("killed %d writers; %d batches", killed, batch)
	snap, err := clean().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := snap.TxnVersion(FaultApp); !ok || v != batch {
		t.Fatalf("txn version %d (%v), want %d", v, ok, batch)
	}
	if n := countPrefix(snap.Files(), "fault-"); n != int(batch) {
		t.Fatalf("%d live files, want %d", n, batch)
	}
}

func batchPrefix(b int64) string { return fmt.Sprintf("fault-b%05d-", b) }

func batchPath(b int64, attempt int) string {
	return fmt.Sprintf("%sa%d.parquet", batchPrefix(b), attempt)
}

// checkReadable reads the commit files of versions from..latest and returns latest+1.
func checkReadable(t *testing.T, ctx context.Context, tbl *deltalog.Table, from int64, step string) int64 {
	t.Helper()
	latest, err := tbl.LogStore().Latest(ctx)
	if err != nil {
		t.Fatalf("%s: latest: %v", step, err)
	}
	for v := from; v <= latest; v++ {
		if _, err := tbl.LogStore().Read(ctx, v); err != nil {
			t.Fatalf("%s: version %d of %d unreadable: %v", step, v, latest, err)
		}
	}
	return latest + 1
}
