package deltalog

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/parquet-go/parquet-go"
)

// The rules of docs/decisions/0014-checkpoint-tombstones.md (follow-up of 3 Dec 2026): a
// checkpoint's remove row groups each span less than carrySlack of deletion times, oldest
// first and before the other actions; expiry drops a group whole, never re-encoding the
// others; past mergeAbove groups the newest merge. Every unexpired tombstone is in every
// checkpoint (docs/reference/delta-protocol.md §7.1).

// removeGroupsOf returns, for each row group of checkpoint data holding removes, its
// deletion-time span (ms), oldest group first as the file lists them, and the index of the
// first row group holding anything else.
func removeGroupsOf(t *testing.T, data []byte) (spans [][2]int64, firstOther int) {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	acts, err := decodeCheckpoint(context.Background(), data, nil)
	if err != nil {
		t.Fatal(err)
	}
	firstOther, row := -1, 0
	for rg := range pf.NumRowGroups() {
		n := int(pf.MetaData().RowGroups[rg].NumRows)
		group := acts[row : row+n]
		row += n
		if group[0].Remove == nil {
			if firstOther < 0 {
				firstOther = rg
			}
			continue
		}
		rs := make([]*Remove, len(group))
		for i := range group {
			if group[i].Remove == nil {
				t.Fatalf("row group %d mixes removes with other actions", rg)
			}
			rs[i] = group[i].Remove
		}
		o, nw := spanOf(rs)
		spans = append(spans, [2]int64{o, nw})
	}
	return spans, firstOther
}

// A warm writer over ten days, files removed every six hours: every checkpoint holds every
// unexpired tombstone and none expired more than carrySlack ago; the groups stay few and
// each spans less than a day; after the first, no checkpoint encodes all the tombstones
// again, expired groups are dropped whole; a carried group keeps its offset from one
// checkpoint to the next, and its footer entry's bytes are spliced into the next footer,
// which is still the whole FileMetaData serialized; a fresh read and parquet-go agree.
func TestCheckpointTombstoneGroupsByDay(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 1, 0, 30, 0, 0, time.UTC)}
	s := newMemStore()
	tbl := Open(s, &memLogStore{s: s}, Options{CheckpointInterval: 2, Now: c.now, RetryBaseDelay: 1})
	lgCreate(t, tbl)
	removedAt := map[string]int64{}
	cc := &checkpointCounts
	full0, dropped0, merged0, reused0 := cc.full.Load(), cc.dropped.Load(), cc.merged.Load(), cc.reused.Load()
	var prev []byte
	moved, most := 0, 0
	for i := 1; i <= 10*12; i++ { // every two hours for ten days
		c.t = c.t.Add(2 * time.Hour)
		snap := snapshot(t, tbl)
		_, err := commitAt(t, tbl, snap, func(tx *Transaction) {
			tx.Add(*lgAdd(i))
			if i%3 == 0 {
				for _, a := range snap.Files()[:2] {
					tx.Remove(Remove{Path: a.Path, DeletionTimestamp: lgPtr(c.t.UnixMilli()), DataChange: false})
					removedAt[a.Path] = c.t.UnixMilli()
				}
			}
		})
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		kept := snapshot(t, tbl)
		if kept.CheckpointVersion() != kept.Version() {
			continue
		}
		cutoff := c.t.Add(-DefaultTombstoneRetention).UnixMilli()
		data := checkpointBytes(t, tbl, kept.Version())
		got := map[string]bool{}
		for _, p := range removesInCheckpoint(t, tbl, kept.Version()) {
			got[p] = true
			if removedAt[p] <= cutoff-carrySlack.Milliseconds() {
				t.Fatalf("checkpoint %d carries %s, expired more than carrySlack ago", kept.Version(), p)
			}
		}
		for p, at := range removedAt {
			if at > cutoff && !got[p] {
				t.Fatalf("checkpoint %d lacks the unexpired tombstone %s", kept.Version(), p)
			}
		}
		assertCanonicalFooter(t, data, fmt.Sprintf("checkpoint %d", kept.Version()))
		spans, firstOther := removeGroupsOf(t, data)
		if len(spans) > maxCarriedGroups {
			t.Fatalf("checkpoint %d has %d remove row groups, want at most %d", kept.Version(), len(spans), maxCarriedGroups)
		}
		most = max(most, len(spans))
		for g, sp := range spans {
			if sp[1]-sp[0] >= carrySlack.Milliseconds() {
				t.Fatalf("checkpoint %d remove row group %d spans %v", kept.Version(), g, time.Duration(sp[1]-sp[0])*time.Millisecond)
			}
			if g > 0 && sp[0] < spans[g-1][0] {
				t.Fatalf("checkpoint %d remove row groups not oldest first: %v", kept.Version(), spans)
			}
		}
		if len(spans) > 1 && firstOther >= 0 && firstOther < len(spans)-1 {
			t.Fatalf("checkpoint %d: the carried remove row groups do not come first (other actions at %d)", kept.Version(), firstOther)
		}
		if prev != nil && len(spans) > 1 {
			if g := rowGroupBytes(t, data, 0); bytes.Equal(g, rowGroupBytes(t, prev, 0)) {
				moved++ // the oldest group was carried in place
			}
		}
		prev = data
	}
	if f := cc.full.Load() - full0; f != 1 {
		t.Errorf("%d checkpoints encoded every tombstone, want 1 (the first with any)", f)
	}
	if d, m := cc.dropped.Load()-dropped0, cc.merged.Load()-merged0; d == 0 || m == 0 {
		t.Errorf("%d groups dropped whole, %d merged: want some of each over ten days", d, m)
	}
	if moved == 0 {
		t.Error("no checkpoint kept its oldest remove row group in place")
	}
	if cc.reused.Load() == reused0 {
		t.Error("no carried group's footer entry was spliced as serialized before")
	}
	t.Logf("at most %d remove row groups in a checkpoint", most)
	kept := snapshot(t, tbl)
	fresh := snapshot(t, reopen(tbl))
	want := tombstonePaths(tombstonesOf(t, kept))
	if got := tombstonePaths(tombstonesOf(t, fresh)); !slices.Equal(got, want) {
		t.Fatalf("a fresh read has tombstones %v, the kept snapshot %v", got, want)
	}
	data := checkpointBytes(t, tbl, kept.CheckpointVersion())
	type row struct {
		Remove *struct {
			Path string `parquet:"path"`
		} `parquet:"remove,optional"`
	}
	rows, err := parquet.Read[row](bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("parquet-go reads checkpoint %d: %v", kept.CheckpointVersion(), err)
	}
	var got []string
	for _, r := range rows {
		if r.Remove != nil {
			got = append(got, r.Remove.Path)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, removesInCheckpoint(t, tbl, kept.CheckpointVersion())) {
		t.Fatalf("parquet-go read removes %v", got)
	}
}

// rowGroupBytes are the column chunks of data's row group i; a negative i counts from
// the end (-1 the last).
func rowGroupBytes(t *testing.T, data []byte, i int) []byte {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if i < 0 {
		i += pf.NumRowGroups()
	}
	g, err := groupOf(pf.MetaData(), i, data)
	if err != nil {
		t.Fatal(err)
	}
	return g.chunks
}

// A checkpoint that encodes every tombstone (no base to copy: a cold open of a checkpoint
// of another writer, or one whose single remove row group spans more than carrySlack, as
// written before this rule) puts each UTC day's in a row group of its own, oldest first;
// the next checkpoint copies them, and expiry then drops the oldest day whole.
func TestCheckpointEncodesTombstonesByDay(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	tbl := openDir(t, t.TempDir())
	tbl.opts.Now = c.now
	lgCreate(t, tbl)
	for i := 1; i <= 9; i++ {
		lgCommit(t, tbl, int64(i), Action{Add: lgAdd(i)})
	}
	// Version 10 compacts the nine files: three removed on each of three days.
	compaction := []Action{{Add: lgAdd(100)}}
	for i := 1; i <= 9; i++ {
		at := c.t.Add(-time.Duration((i-1)/3) * 24 * time.Hour)
		compaction = append(compaction, Action{Remove: &Remove{Path: lgAdd(i).Path, DeletionTimestamp: lgPtr(at.UnixMilli())}})
	}
	lgCommit(t, tbl, 10, compaction...)
	writeCheckpointAt(t, tbl, 10)
	spans, _ := removeGroupsOf(t, checkpointBytes(t, tbl, 10))
	if len(spans) != 3 {
		t.Fatalf("checkpoint 10 has %d remove row groups, want 3 (one a day)", len(spans))
	}
	for g, sp := range spans {
		day := c.t.Add(-time.Duration(2-g) * 24 * time.Hour).UnixMilli()
		if sp[0] != day || sp[1] != day {
			t.Fatalf("remove row group %d spans %v, want the removes of day %d", g, spans, g)
		}
	}
	// Six days later the oldest day's have expired: the next checkpoint drops them and
	// copies the other two days' row groups, encoding nothing again.
	c.t = c.t.Add(6*24*time.Hour - time.Hour)
	lgCommit(t, tbl, 11, Action{Add: lgAdd(11)})
	full, dropped := checkpointCounts.full.Load(), checkpointCounts.dropped.Load()
	writeCheckpointAt(t, tbl, 11)
	if f, d := checkpointCounts.full.Load()-full, checkpointCounts.dropped.Load()-dropped; f != 0 || d != 1 {
		t.Fatalf("checkpoint 11 encoded every tombstone %d times and dropped %d groups, want 0 and 1", f, d)
	}
	want := []string{lgAdd(1).Path, lgAdd(2).Path, lgAdd(3).Path, lgAdd(4).Path, lgAdd(5).Path, lgAdd(6).Path}
	slices.Sort(want)
	if got := removesInCheckpoint(t, tbl, 11); !slices.Equal(got, want) {
		t.Fatalf("checkpoint 11 tombstones %v, want %v", got, want)
	}
	if !bytes.Equal(rowGroupBytes(t, checkpointBytes(t, tbl, 11), 0), rowGroupBytes(t, checkpointBytes(t, tbl, 10), -2)) {
		t.Error("checkpoint 11 did not copy checkpoint 10's row group of the second day")
	}
}

// A remove row group spanning more than carrySlack (as checkpoints wrote them before
// groups were bounded) is copied until its oldest tombstone has been expired carrySlack;
// then the tombstones are encoded afresh, a day a row group, and copied from then on.
func TestCheckpointWideTombstoneGroupReencoded(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	tbl := openDir(t, t.TempDir())
	tbl.opts.Now = c.now
	p := Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	m := lgMetadata("p")
	acts := []Action{{Protocol: &p}, {MetaData: m}, {Add: lgAdd(100)}}
	for i := 1; i <= 8; i++ { // removed over four days, in one row group
		at := c.t.Add(-time.Duration((i-1)/2) * 24 * time.Hour)
		acts = append(acts, Action{Remove: &Remove{Path: lgAdd(i).Path, DeletionTimestamp: lgPtr(at.UnixMilli())}})
	}
	lgCommit(t, tbl, 0, Action{Protocol: &p}, Action{MetaData: m})
	for v := int64(1); v < 10; v++ {
		lgCommit(t, tbl, v, Action{Add: lgAdd(200 + int(v))})
	}
	// A checkpoint of version 9 as an earlier release wrote it (the adds of versions 0-9
	// do not matter here: only its tombstones are read).
	data, err := encodeCheckpoint(acts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := tbl.Store().Put(ctx, CheckpointFileKey(9), bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if err := publishLast(ctx, tbl, 9, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	// The oldest expired an hour ago, within the slack: copied.
	c.t = c.t.Add(4*24*time.Hour + time.Hour)
	lgCommit(t, tbl, 10, Action{Add: lgAdd(300)})
	full := checkpointCounts.full.Load()
	writeCheckpointAt(t, tbl, 10)
	if f := checkpointCounts.full.Load() - full; f != 0 {
		t.Fatalf("checkpoint 10 encoded every tombstone (%d), want a copy", f)
	}
	// The oldest expired more than carrySlack ago: encoded afresh by day, unexpired ones only.
	c.t = c.t.Add(carrySlack)
	lgCommit(t, tbl, 11, Action{Add: lgAdd(301)})
	writeCheckpointAt(t, tbl, 11)
	if f := checkpointCounts.full.Load() - full; f != 1 {
		t.Fatalf("checkpoint 11 encoded every tombstone %d times, want 1", f)
	}
	spans, _ := removeGroupsOf(t, checkpointBytes(t, tbl, 11))
	want := []string{lgAdd(1).Path, lgAdd(2).Path, lgAdd(3).Path, lgAdd(4).Path}
	slices.Sort(want)
	if got := removesInCheckpoint(t, tbl, 11); len(spans) != 2 || !slices.Equal(got, want) {
		t.Fatalf("checkpoint 11: %d remove row groups, tombstones %v; want 2 and %v", len(spans), got, want)
	}
}

func publishLast(ctx context.Context, tbl *Table, v, size int64) error {
	hint := fmt.Appendf(nil, `{"version":%d,"size":%d}`, v, size)
	return tbl.Store().Put(ctx, LastCheckpointKey, bytes.NewReader(hint), int64(len(hint)))
}

// Writers checkpointing at once from snapshots that share one base (two Transactions of
// one Table, or two commits racing) write the same bytes: the footer entries they share
// (carriedGroup.moved) are built and read without a race (run with -race).
func TestCarriedCheckpointConcurrentWriters(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	s := newMemStore()
	tbl := Open(s, &memLogStore{s: s}, Options{CheckpointInterval: 2, Now: c.now, RetryBaseDelay: 1})
	lgCreate(t, tbl)
	for i := 1; i <= 30; i++ {
		c.t = c.t.Add(time.Hour)
		snap := snapshot(t, tbl)
		if _, err := commitAt(t, tbl, snap, func(tx *Transaction) {
			tx.Add(*lgAdd(i))
			if i%2 == 0 {
				a := snap.Files()[0]
				tx.Remove(Remove{Path: a.Path, DeletionTimestamp: lgPtr(c.t.UnixMilli()), DataChange: false})
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	kept := snapshot(t, tbl)
	if kb, err := kept.cpTombstones.carryBase(); err != nil || kb == nil || len(kb.groups) < 2 {
		t.Fatal("the kept snapshot has no base of several groups to copy")
	}
	// One more version with a new remove, then its checkpoint from four goroutines.
	for i := 31; i <= 31; i++ {
		c.t = c.t.Add(time.Hour)
		snap := snapshot(t, tbl)
		if _, err := commitAt(t, tbl, snap, func(tx *Transaction) {
			tx.Add(*lgAdd(i))
			tx.Remove(Remove{Path: snap.Files()[0].Path, DeletionTimestamp: lgPtr(c.t.UnixMilli()), DataChange: false})
		}); err != nil {
			t.Fatal(err)
		}
	}
	snap := snapshot(t, tbl)
	base, err := snap.cpTombstones.carryBase()
	if err != nil || base == nil || snap.CheckpointVersion() == snap.Version() {
		t.Skip("the table checkpointed at its last version; nothing to race")
	}
	cutoff := c.t.Add(-DefaultTombstoneRetention).UnixMilli()
	out := make([][]byte, 4)
	var wg sync.WaitGroup
	for w := range out {
		wg.Go(func() {
			parts, _, _, _, err := buildCheckpoint(snap, cutoff)
			if err != nil {
				t.Error(err)
				return
			}
			out[w] = bytes.Join(parts, nil)
		})
	}
	wg.Wait()
	for w := 1; w < len(out); w++ {
		if !bytes.Equal(out[w], out[0]) {
			t.Fatalf("writer %d wrote other bytes than writer 0", w)
		}
	}
	spans, _ := removeGroupsOf(t, out[0])
	if len(spans) < 2 {
		t.Fatalf("the checkpoint has %d remove row groups, want the carried ones and the new", len(spans))
	}
}
