package deltalog_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// openCondPut opens the table at dir committing by conditional put, every call of both
// through f.
func openCondPut(t *testing.T, dir string, f *deltatest.Faults) *deltalog.Table {
	t.Helper()
	s, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs := f.Store(s)
	return deltalog.Open(fs, condput.New(fs), deltalog.Options{RetryBaseDelay: 1})
}

// A compaction killed at any external call — before the call happens, or after it took
// effect with the answer lost — leaves a readable table with every row exactly once, and
// a re-run converges. Six files in groups of three:
// the kill lands in the first group's reads, writes or commit, between the two commits,
// or in the second group.
func TestCompactKilledAtEveryCall(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	deltatest.AppendIDs(t, openCondPut(t, base, &deltatest.Faults{}), 0, 6)
	want := deltatest.IDs(t, openCondPut(t, base, &deltatest.Faults{}))
	snap, err := openCondPut(t, base, &deltatest.Faults{}).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	size := snap.Files()[0].Size
	opts := deltalog.CompactOptions{TargetFileSize: 3*size + size/2, Writer: parquetio.WriterOptions{TempDir: t.TempDir()}}
	kills := 0
	for _, after := range []bool{false, true} {
		for k := 1; ; k++ {
			if k > 300 {
				t.Fatal("a compaction made over 300 calls")
			}
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			f := &deltatest.Faults{KillAt: k, After: after}
			res, err := openCondPut(t, dir, f).Compact(ctx, opts)
			step := fmt.Sprintf("after=%t k=%d", after, k)
			if !f.Killed() {
				if err != nil || res.LiveFiles != 1 {
					t.Fatalf("%s: clean run %+v, %v", step, res, err)
				}
				t.Logf("after=%t: a compaction made %d calls", after, f.Calls())
				break
			}
			kills++
			ops := f.Ops()
			step += " (" + ops[len(ops)-1] + ")"
			clean := openCondPut(t, dir, &deltatest.Faults{})
			if got := deltatest.IDs(t, clean); !slices.Equal(got, want) {
				t.Fatalf("%s: after the kill the table holds %d ids, want %d exactly once", step, len(got), len(want))
			}
			// Re-runs converge: each packs what is small (compacted files of three small
			// ones are small too) until one has nothing to do, within three runs.
			for run := 1; ; run++ {
				res, err := clean.Compact(ctx, opts)
				if err != nil || run > 3 {
					t.Fatalf("%s: re-run %d: %+v, %v", step, run, res, err)
				}
				if res.Commits == 0 {
					break
				}
			}
			s, err := clean.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := deltatest.IDs(t, clean); !slices.Equal(got, want) || s.NumFiles() > 2 {
				t.Fatalf("%s: after the re-runs %d ids in %d files", step, len(got), s.NumFiles())
			}
			if v, _ := s.TxnVersion("stream"); v != 6 {
				t.Fatalf("%s: stream txn %d", step, v)
			}
			// The stream goes on appending after it.
			deltatest.AppendIDs(t, clean, 6, 1)
			if got := deltatest.IDs(t, clean); len(got) != len(want)+10 {
				t.Fatalf("%s: %d ids after an append", step, len(got))
			}
		}
	}
	t.Logf("killed %d compactions", kills)
}
