package deltalog

import (
	"bytes"
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/parquet-go/parquet-go"
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
	lgCreate(t, tbl)
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
	if got := removesInCheckpoint(t, tbl, 21); !slices.Equal(got, want) {
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
	if got := removesInCheckpoint(t, tbl, 30); !slices.Equal(got, wantAfter) {
		t.Fatalf("checkpoint 30 tombstones %v, want %v", got, wantAfter)
	}
	if got := tombstonePaths(tombstonesOf(t, snapshot(t, reopen(tbl)))); !slices.Equal(got, wantAfter) {
		t.Fatalf("tombstones read from checkpoint 30: %v, want %v", got, wantAfter)
	}

	// A checkpoint written from a snapshot read from checkpoint 30 (which this package
	// wrote, removes in row groups of their own) copies those row groups instead of
	// encoding the tombstones again; a second, independent Parquet reader reads it whole.
	lgCommit(t, tbl, 31, Action{Add: lgAdd(200)})
	writeCheckpointAt(t, tbl, 31)
	if got := removesInCheckpoint(t, tbl, 31); !slices.Equal(got, wantAfter) {
		t.Fatalf("checkpoint 31 tombstones %v, want %v", got, wantAfter)
	}
	data31 := checkpointBytes(t, tbl, 31)
	if g := lastRowGroupBytes(t, checkpointBytes(t, tbl, 30)); !bytes.Contains(data31, g) {
		t.Error("checkpoint 31 did not copy checkpoint 30's remove row group")
	}
	type removeRow struct {
		Path              string `parquet:"path"`
		DeletionTimestamp *int64 `parquet:"deletionTimestamp,optional"`
	}
	type addRow struct {
		Path string `parquet:"path"`
	}
	type row struct {
		Add    *addRow    `parquet:"add,optional"`
		Remove *removeRow `parquet:"remove,optional"`
	}
	rows, err := parquet.Read[row](bytes.NewReader(data31), int64(len(data31)))
	if err != nil {
		t.Fatalf("parquet-go reads checkpoint 31: %v", err)
	}
	var adds, removes []string
	for _, r := range rows {
		if r.Add != nil {
			adds = append(adds, r.Add.Path)
		}
		if r.Remove != nil && r.Remove.DeletionTimestamp != nil {
			removes = append(removes, r.Remove.Path)
		}
	}
	slices.Sort(removes)
	if len(adds) != 11 || !slices.Equal(removes, wantAfter) {
		t.Fatalf("parquet-go read %d adds and removes %v; want 11 and %v", len(adds), removes, wantAfter)
	}

	// A week later they have all expired: the next checkpoint drops their row group whole,
	// encoding nothing again (docs/decisions/0014-checkpoint-tombstones.md, follow-up of
	// 3 Dec 2026: a group spans less than carrySlack, so none is carried longer).
	c.t = c.t.Add(7 * 24 * time.Hour)
	lgCommit(t, tbl, 32, Action{Add: lgAdd(201)})
	dropped, full := checkpointCounts.dropped.Load(), checkpointCounts.full.Load()
	writeCheckpointAt(t, tbl, 32)
	if got := removesInCheckpoint(t, tbl, 32); len(got) != 0 {
		t.Fatalf("checkpoint 32 still has tombstones %v", got)
	}
	if d, f := checkpointCounts.dropped.Load()-dropped, checkpointCounts.full.Load()-full; d != 1 || f != 0 {
		t.Fatalf("checkpoint 32 dropped %d row groups and encoded the tombstones afresh %d times, want 1 and 0", d, f)
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

// removesInCheckpoint decodes checkpoint v in full and returns its remove paths, sorted. It
// fails the test when a row group holds removes and any other action.
func removesInCheckpoint(t *testing.T, tbl *Table, v int64) []string {
	t.Helper()
	data := checkpointBytes(t, tbl, v)
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

func checkpointBytes(t *testing.T, tbl *Table, v int64) []byte {
	t.Helper()
	data, err := tbl.Store().GetRange(context.Background(), CheckpointFileKey(v), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// lastRowGroupBytes are the column chunks of data's last row group.
func lastRowGroupBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	rg := pf.MetaData().RowGroup(pf.NumRowGroups() - 1)
	start, stop := int64(len(data)), int64(0)
	for i := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		first := cc.DataPageOffset()
		if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 {
			first = min(first, cc.DictionaryPageOffset())
		}
		start, stop = min(start, first), max(stop, first+cc.TotalCompressedSize())
	}
	return data[start:stop]
}

// A writer that keeps its Table (a warm stream) checkpoints every few commits while files
// are removed now and then (compactions): each checkpoint copies the previous one's remove
// row groups, also those it copied itself, and holds every tombstone; a fresh read of the
// newest checkpoint, and parquet-go, agree with the kept state.
func TestKeptWriterCarriesTombstones(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.UnixMilli(1800000000000)}
	s := newMemStore()
	tbl := Open(s, &memLogStore{s: s}, Options{CheckpointInterval: 3, Now: c.now, RetryBaseDelay: 1})
	lgCreate(t, tbl)
	var removed []string
	for i := 1; i <= 39; i++ {
		c.t = c.t.Add(time.Minute)
		snap := snapshot(t, tbl)
		_, err := commitAt(t, tbl, snap, func(tx *Transaction) {
			tx.Add(*lgAdd(i))
			if i%5 == 0 { // remove the two oldest live files
				for _, a := range snap.Files()[:2] {
					tx.Remove(Remove{Path: a.Path, DeletionTimestamp: lgPtr(c.t.UnixMilli()), DataChange: false})
					removed = append(removed, a.Path)
				}
			}
		})
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	slices.Sort(removed)
	kept := snapshot(t, tbl)
	if kept.Version() != 39 || kept.CheckpointVersion() != 39 {
		t.Fatalf("kept version %d, checkpoint %d; want 39 and 39", kept.Version(), kept.CheckpointVersion())
	}
	if got := tombstonePaths(tombstonesOf(t, kept)); !slices.Equal(got, removed) {
		t.Fatalf("kept tombstones %v, want %v", got, removed)
	}
	fresh := snapshot(t, reopen(tbl))
	if fresh.CheckpointVersion() != 39 || len(fresh.Files()) != len(kept.Files()) {
		t.Fatalf("fresh read from checkpoint %d with %d files, want 39 and %d", fresh.CheckpointVersion(), len(fresh.Files()), len(kept.Files()))
	}
	if got := tombstonePaths(tombstonesOf(t, fresh)); !slices.Equal(got, removed) {
		t.Fatalf("tombstones read from checkpoint 39: %v, want %v", got, removed)
	}
	data := checkpointBytes(t, tbl, 39)
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	groups := pf.NumRowGroups()
	pf.Close()
	if groups < 5 {
		t.Errorf("checkpoint 39 has %d row groups: its removes were not carried from earlier checkpoints", groups)
	}
	type row struct {
		Remove *struct {
			Path string `parquet:"path"`
		} `parquet:"remove,optional"`
	}
	rows, err := parquet.Read[row](bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("parquet-go reads checkpoint 39: %v", err)
	}
	var got []string
	for _, r := range rows {
		if r.Remove != nil {
			got = append(got, r.Remove.Path)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, removed) {
		t.Fatalf("parquet-go read removes %v, want %v", got, removed)
	}
	lc, ok, err := ReadLastCheckpoint(ctx, s)
	if err != nil || !ok || lc.Version != 39 || lc.SizeInBytes != int64(len(data)) || lc.Size != int64(len(rows)) {
		t.Fatalf("_last_checkpoint %+v %v %v; want version 39, %d bytes, %d rows", lc, ok, err, len(data), len(rows))
	}
}

// partsReader reads its parts as one stream, in reads of any size, from any offset.
func TestPartsReader(t *testing.T) {
	parts := [][]byte{[]byte("ab"), nil, []byte("cde"), []byte("f")}
	r := newPartsReader(parts)
	var got []byte
	buf := make([]byte, 2)
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	if string(got) != "abcdef" {
		t.Fatalf("read %q", got)
	}
	if _, err := r.Seek(3, 0); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	if string(rest) != "def" {
		t.Fatalf("after seek to 3: %q", rest)
	}
	if off, _ := r.Seek(-1, io.SeekEnd); off != 5 {
		t.Fatalf("seek from the end: %d", off)
	}
}
