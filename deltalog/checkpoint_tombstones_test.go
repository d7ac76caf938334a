package deltalog

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// A checkpoint written after a compaction holds every tombstone the compaction left that
// has not expired, in row groups of their own; a table opened from it does not decode them
// (its open, file list and appends never need them); a checkpoint written from that
// snapshot carries them all again, minus a file added back and minus those expired since
// (docs/reference/delta-protocol.md §7.1, §11.3; docs/decisions/0014-checkpoint-tombstones.md).
func TestCheckpointCarriesTombstonesUndecoded(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.UnixMilli(1800000000000)}
	tbl := openDir(t, t.TempDir())
	tbl.opts.Now = c.now
	lgCommit(t, tbl, 0, Action{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}}, Action{MetaData: lgMetadata("p")})
	for i := 1; i <= 20; i++ {
		lgCommit(t, tbl, int64(i), Action{Add: lgAdd(i)})
	}
	// Version 21 compacts the 20 files into one: ten of the removes are recent, ten are
	// stamped eight days ago (expired under the default week).
	compaction := []Action{{Add: lgAdd(100)}}
	var want []string // the unexpired tombstones
	for i := 1; i <= 20; i++ {
		at := c.t.Add(-time.Hour)
		if i > 10 {
			at = c.t.Add(-8 * 24 * time.Hour)
		} else {
			want = append(want, lgAdd(i).Path)
		}
		compaction = append(compaction, Action{Remove: &Remove{Path: lgAdd(i).Path, DeletionTimestamp: lgPtr(at.UnixMilli())}})
	}
	slices.Sort(want)
	lgCommit(t, tbl, 21, compaction...)
	writeCheckpointAt(t, tbl, 21)
	if got := checkpointRemoves(t, tbl, 21); !slices.Equal(got, want) {
		t.Fatalf("checkpoint 21 tombstones %v, want %v", got, want)
	}

	// A new process opens the table from the checkpoint, lists its files and appends:
	// the tombstones stay undecoded.
	reader := reopen(tbl)
	s := snapshot(t, reader)
	if s.CheckpointVersion() != 21 || len(s.Files()) != 1 || s.cpTombstones == nil || s.cpTombstones.decoded() {
		t.Fatalf("opened from checkpoint %d with %d files; tombstones kept %v, decoded %v",
			s.CheckpointVersion(), len(s.Files()), s.cpTombstones != nil, s.cpTombstones.decoded())
	}
	for i := 22; i <= 29; i++ {
		lgCommit(t, tbl, int64(i), Action{Add: lgAdd(i + 100)})
	}
	// Version 30 adds back a compacted file (as a RESTORE does): it is live, not a tombstone.
	lgCommit(t, tbl, 30, Action{Add: lgAdd(3)})
	s = snapshot(t, reader)
	if s.Version() != 30 || s.cpTombstones.decoded() {
		t.Fatalf("advanced to %d, tombstones decoded %v", s.Version(), s.cpTombstones.decoded())
	}
	if err := WriteCheckpoint(ctx, s); err != nil {
		t.Fatal(err)
	}
	if !s.cpTombstones.decoded() {
		t.Fatal("the checkpoint was written without the previous checkpoint's tombstones")
	}
	wantAfter := slices.DeleteFunc(slices.Clone(want), func(p string) bool { return p == lgAdd(3).Path })
	if got := checkpointRemoves(t, tbl, 30); !slices.Equal(got, wantAfter) {
		t.Fatalf("checkpoint 30 tombstones %v, want %v", got, wantAfter)
	}
	if got := tombstonePaths(tombstonesOf(t, snapshot(t, reopen(tbl)))); !slices.Equal(got, wantAfter) {
		t.Fatalf("tombstones read from checkpoint 30: %v, want %v", got, wantAfter)
	}

	// A week later they have all expired: the next checkpoint has none.
	c.t = c.t.Add(7 * 24 * time.Hour)
	lgCommit(t, tbl, 31, Action{Add: lgAdd(200)})
	writeCheckpointAt(t, tbl, 31)
	if got := checkpointRemoves(t, tbl, 31); len(got) != 0 {
		t.Fatalf("checkpoint 31 still has tombstones %v", got)
	}
}

func writeCheckpointAt(t *testing.T, tbl *Table, v int64) {
	t.Helper()
	s := snapshot(t, reopen(tbl))
	if s.Version() != v {
		t.Fatalf("snapshot at %d, want %d", s.Version(), v)
	}
	if err := WriteCheckpoint(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// checkpointRemoves decodes checkpoint v in full and returns its remove paths, sorted. It
// fails the test when a row group holds removes and any other action.
func checkpointRemoves(t *testing.T, tbl *Table, v int64) []string {
	t.Helper()
	data, err := tbl.Store().GetRange(context.Background(), CheckpointFileKey(v), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	var leaves []int
	for i := range pf.MetaData().Schema.NumColumns() {
		leaves = append(leaves, i)
	}
	for rg := range pf.NumRowGroups() {
		tops := map[string]bool{}
		for _, l := range presentLeaves(pf, rg, leaves) {
			tops[pf.MetaData().Schema.Column(l).ColumnPath()[0]] = true
		}
		if tops["remove"] && len(tops) > 1 {
			t.Errorf("checkpoint %d row group %d mixes removes with %v", v, rg, tops)
		}
	}
	acts, err := decodeCheckpoint(context.Background(), data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range acts {
		if a.Remove != nil {
			out = append(out, a.Remove.Path)
		}
	}
	slices.Sort(out)
	return out
}
