package deltalog

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// The tombstones of a checkpoint read cold are decoded by what reads them
// (checkpoint_removes.go; docs/decisions/0014-checkpoint-tombstones.md, follow-up
// "Tombstones decoded by what reads them"): the key fields for the carry rule and VACUUM,
// the others only for a checkpoint that re-encodes them. What each consumer gets must be
// what a full decode gives.

// arrowRemoves are the removes of checkpoint data as the Arrow decode reads them (every
// remove leaf, structCols.remove): the oracle for the leaf decoder.
func arrowRemoves(t *testing.T, data []byte) []Remove {
	t.Helper()
	acts, err := decodeCheckpointLeaves(context.Background(), data, nil, nil, memory.DefaultAllocator, onlyRemoves)
	if err != nil {
		t.Fatal(err)
	}
	var out []Remove
	for _, a := range acts {
		if a.Remove != nil {
			out = append(out, *a.Remove)
		}
	}
	return out
}

func derefRemoves(rs []*Remove) []Remove {
	out := make([]Remove, len(rs))
	for i, r := range rs {
		out[i] = *r
	}
	return out
}

// keyFieldsOf keeps the key fields of rs (path, deletionTimestamp, deletionVector).
func keyFieldsOf(rs []Remove) []Remove {
	out := make([]Remove, len(rs))
	for i, r := range rs {
		out[i] = Remove{Path: r.Path, DeletionTimestamp: r.DeletionTimestamp, DeletionVector: r.DeletionVector}
	}
	return out
}

// richRemovesCheckpoint is a checkpoint of this package with removes using every field
// Remove has, nulls included, in several row groups.
func richRemovesCheckpoint(t *testing.T) []byte {
	t.Helper()
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	checkpointBatchRows = 4
	p, m := Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}, lgMetadata("p")
	acts := []Action{{Protocol: &p}, {MetaData: m}, {Add: lgAdd(1)}, {Add: lgAdd(2)}}
	for i := range 11 {
		r := &Remove{Path: fmt.Sprintf("p=%d/part %05d%%.parquet", i%3, i), DataChange: i%2 == 0}
		if i%4 != 3 {
			r.DeletionTimestamp = lgPtr(int64(1800000000000 + i))
		}
		switch i % 3 {
		case 0:
			r.PartitionValues = map[string]string{"p": fmt.Sprint(i), "q": ""}
		case 1:
			r.PartitionValues = map[string]string{}
		}
		if i%2 == 1 {
			r.Size = lgPtr(int64(1000 + i))
			r.ExtendedFileMetadata = lgPtr(i%3 == 1)
		}
		switch i % 4 {
		case 1:
			r.DeletionVector = &DeletionVector{StorageType: DVStorageUUID, PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: lgPtr(int32(4 * i)), SizeInBytes: int32(40 + i), Cardinality: int64(i)}
		case 2:
			r.DeletionVector = &DeletionVector{StorageType: DVStorageInline, PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6}
		}
		if i == 5 {
			r.BaseRowID, r.DefaultRowCommitVersion = lgPtr(int64(77)), lgPtr(int64(9))
		}
		acts = append(acts, Action{Remove: r})
	}
	data, err := encodeCheckpoint(acts)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The leaf decode gives every checkpoint's removes as the Arrow decode does: the key
// fields alone (keyed, what VACUUM and the carry rule read) and every field (load), in
// either order, on this package's checkpoints and on those Spark and delta-rs wrote
// (testdata: deletion vectors, partition values, remove row groups mixed with other
// actions, sidecars); the keyed Removes are not changed by the full decode.
func TestRemoveLeavesMatchArrow(t *testing.T) {
	files := testdataParquet(t, func(name string) bool { return strings.Contains(name, ".checkpoint.") })
	files["rich"] = richRemovesCheckpoint(t)
	var removes, withDV, withPartitions, mixed int
	for name, data := range files {
		want := arrowRemoves(t, data)
		p, err := newCheckpointPart(data)
		if err != nil {
			t.Fatal(name, err)
		}
		keyedFirst, allFirst := &lazyTombstones{}, &lazyTombstones{}
		keyedFirst.add(p)
		allFirst.add(p)
		keys, err := keyedFirst.keyed()
		if err != nil {
			t.Fatal(name, err)
		}
		keysBefore := derefRemoves(keys)
		if got := derefRemoves(keys); !reflect.DeepEqual(keyFieldsOf(got), keyFieldsOf(want)) {
			t.Fatalf("%s: keyed removes\n%+v\nwant\n%+v", name, keyFieldsOf(got), keyFieldsOf(want))
		}
		for _, l := range []*lazyTombstones{keyedFirst, allFirst} {
			all, err := l.load()
			if err != nil {
				t.Fatal(name, err)
			}
			if got := derefRemoves(all); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("%s: removes\n%+v\nwant\n%+v", name, got, want)
			}
		}
		if !reflect.DeepEqual(derefRemoves(keys), keysBefore) {
			t.Fatalf("%s: the full decode changed the keyed Removes", name)
		}
		for _, r := range want {
			removes++
			if r.DeletionVector != nil {
				withDV++
			}
			if len(r.PartitionValues) > 0 {
				withPartitions++
			}
		}
		if len(want) > 0 {
			if b, err := keyedFirst.carryBase(); err == nil && b == nil {
				mixed++ // a file whose removes share row groups with other actions
			}
		}
	}
	t.Logf("%d files, %d removes, %d with deletion vectors, %d with partition values, %d files mixing removes with other actions",
		len(files), removes, withDV, withPartitions, mixed)
	if withDV < 5 || withPartitions < 5 || mixed == 0 {
		t.Fatalf("the files exercise too little: %d removes with deletion vectors, %d with partition values, %d mixed files", withDV, withPartitions, mixed)
	}
}

// A table opened cold from a checkpoint decodes its footer once, for the open, the adds'
// stats, the totals, the carry base and both steps of the tombstones; a snapshot read from
// a different checkpoint of the same version (a second writer's) has that file's footer,
// never the first one's, and its tombstones are that file's.
func TestCheckpointFooterParsedOnceNotShared(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.UnixMilli(1800000000000)}
	tbl, _ := newClockTable(t, c, Options{})
	lgCreate(t, tbl)
	for i := 1; i <= 6; i++ {
		lgCommit(t, tbl, int64(i), Action{Add: lgAdd(i)})
	}
	var compaction []Action
	for i := 1; i <= 5; i++ {
		compaction = append(compaction, Action{Remove: &Remove{Path: lgAdd(i).Path, DeletionTimestamp: lgPtr(c.t.Add(-time.Duration(i) * 24 * time.Hour).UnixMilli())}})
	}
	lgCommit(t, tbl, 7, append(compaction, Action{Add: lgAdd(100)})...)
	writeCheckpointAt(t, tbl, 7)

	parsed := footerParses.Load()
	a := snapshot(t, reopen(tbl))
	if len(a.cpTombstones.parts) != 1 {
		t.Fatalf("the checkpoint was kept as %d parts, want 1", len(a.cpTombstones.parts))
	}
	pa := a.cpTombstones.parts[0] // the tombstones hold it until their row groups are listed
	if _, err := a.Totals(); err != nil {
		t.Fatal(err)
	}
	a.Files()
	if _, err := a.cpTombstones.carryBase(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.tombstoneKeys(); err != nil {
		t.Fatal(err)
	}
	tombsA := tombstonesOf(t, a)
	if n := footerParses.Load() - parsed; n != 1 {
		t.Fatalf("a cold open and every decode of its checkpoint parsed %d footers, want 1", n)
	}

	// A second writer writes checkpoint 7 again, three days later: two tombstones have
	// expired since, so the file differs.
	c.t = c.t.Add(3 * 24 * time.Hour)
	dataA := checkpointBytes(t, tbl, 7)
	writeCheckpointAt(t, tbl, 7)
	dataB := checkpointBytes(t, tbl, 7)
	if bytes.Equal(dataA, dataB) {
		t.Fatal("the second checkpoint of version 7 is the first one")
	}
	b := snapshot(t, reopen(tbl))
	pb := b.cpTombstones.parts[0]
	if pa.md == pb.md || !bytes.Equal(pa.data, dataA) || !bytes.Equal(pb.data, dataB) {
		t.Fatalf("the snapshots share a footer (%v) or hold other bytes than their checkpoint's", pa.md == pb.md)
	}
	for _, p := range []*checkpointPart{pa, pb} {
		footer, err := p.md.Serialize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if end := len(p.data) - 8; !bytes.Equal(p.data[end-len(footer):end], footer) {
			t.Fatal("a part's footer is not the one its bytes end with")
		}
	}
	if got, want := tombstonesOf(t, b), arrowRemoves(t, dataB); len(got) != 3 || len(want) != 3 || len(tombsA) != 5 {
		t.Fatalf("tombstones: first checkpoint %d, second %d (its file %d), want 5 and 3", len(tombsA), len(got), len(want))
	}
	keysB, err := b.tombstoneKeys()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(keyFieldsOf(keysB), keyFieldsOf(tombstonesOf(t, b))) {
		t.Fatal("the second snapshot's tombstone keys are not its tombstones'")
	}
}

// VACUUM from a cold Table reads the checkpoint's tombstones' keys alone, and still keeps
// every file (and deletion vector file) whose tombstone is within the retention, in every
// row group of removes, while deleting those whose tombstones expired.
func TestVacuumKeepsColdCheckpointTombstones(t *testing.T) {
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	checkpointBatchRows = 3
	ctx := context.Background()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &clock{t: day0}
	tbl, s := newClockTable(t, c, Options{})
	lgCreate(t, tbl)
	put := func(k string) {
		if err := s.Put(ctx, k, bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
	}
	var adds []Action
	for i := 1; i <= 12; i++ {
		a := lgAdd(i)
		if i%4 == 0 {
			dv := fmt.Sprintf("dv/dv-%d.bin", i)
			put(dv)
			a.DeletionVector = &DeletionVector{StorageType: DVStorageAbsolute, PathOrInlineDv: s.URL() + "/" + dv, SizeInBytes: 10, Cardinality: 1, Offset: lgPtr(int32(1))}
		}
		put(a.Path)
		adds = append(adds, Action{Add: a})
	}
	lgCommit(t, tbl, 1, adds...)
	// Nine days on, files 1-10 are removed: 1-4 eight days ago (expired), 5-10 an hour ago
	// (within the week): in the checkpoint's remove row groups of three, after a day each.
	c.t = day0.Add(9 * 24 * time.Hour)
	var removes []Action
	var keep, gone []string
	for i := 1; i <= 10; i++ {
		at := c.t.Add(-time.Hour)
		a := adds[i-1].Add
		if i <= 4 {
			at = c.t.Add(-8 * 24 * time.Hour)
			gone = append(gone, a.Path)
		} else {
			keep = append(keep, a.Path)
		}
		if a.DeletionVector != nil {
			k, _ := dvFileKey(s.URL(), a.DeletionVector)
			if i <= 4 {
				gone = append(gone, k)
			} else {
				keep = append(keep, k)
			}
		}
		removes = append(removes, Action{Remove: &Remove{Path: a.Path, DeletionTimestamp: lgPtr(at.UnixMilli()), DataChange: true, Size: lgPtr(a.Size), DeletionVector: a.DeletionVector}})
	}
	lgCommit(t, tbl, 2, removes...)
	writeCheckpointAt(t, tbl, 2)
	// The tombstones are in the checkpoint, in several row groups.
	cold := reopen(tbl)
	snap := snapshot(t, cold)
	groups, err := snap.cpTombstones.rowGroups()
	if err != nil || snap.CheckpointVersion() != 2 || len(groups) < 2 {
		t.Fatalf("checkpoint %d, %d remove row groups (%v); want 2 and several", snap.CheckpointVersion(), len(groups), err)
	}
	res, err := cold.Vacuum(ctx, VacuumOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(gone)
	if !slices.Equal(res.Deleted, gone) {
		t.Fatalf("deleted %v, want %v (kept: %v)", res.Deleted, gone, keep)
	}
	for _, k := range keep {
		if _, err := s.Head(ctx, k); err != nil {
			t.Fatalf("%s, whose tombstone is within the retention, is gone: %v", k, err)
		}
	}
	if !snap.cpTombstones.decoded() || snap.cpTombstones.fullyDecoded() != 0 {
		t.Fatalf("VACUUM decoded the tombstones' keys %v, every field of %d row groups; want the keys alone", snap.cpTombstones.decoded(), snap.cpTombstones.fullyDecoded())
	}
}

// Ten days of a stream's warm writer (a checkpoint every 10 commits) and a maintenance
// run every two hours from a cold Table (files removed, a checkpoint of the new version,
// VACUUM): every checkpoint the cold runs build is byte for byte the one built from the
// same checkpoint's tombstones decoded in full by the Arrow decode (an independent oracle),
// through carries, merges and dropped groups; VACUUM's tombstone keys equal that decode's;
// and the cold runs decode every field of fewer row groups than they read.
func TestColdCheckpointsEqualFullDecode(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 3, 1, 0, 30, 0, 0, time.UTC)}
	s := newMemStore()
	s.Now = c.now
	stream := Open(s, &memLogStore{s: s}, Options{CheckpointInterval: 10, Now: c.now, RetryBaseDelay: 1})
	lgCreate(t, stream)
	cc := &checkpointCounts
	carried0, merged0, dropped0 := cc.carried.Load(), cc.merged.Load(), cc.dropped.Load()
	next, runs, groups, full := 1, 0, 0, 0
	for h := 1; h <= 10*24; h++ {
		c.t = c.t.Add(time.Hour)
		for range 3 {
			if _, err := commitAt(t, stream, snapshot(t, stream), func(tx *Transaction) { tx.Add(*lgAdd(next)) }); err != nil {
				t.Fatal(err)
			}
			next++
		}
		if h%2 != 0 {
			continue
		}
		runs++
		maint := reopen(stream)
		snap := snapshot(t, maint)
		files := snap.Files()
		if _, err := commitAt(t, maint, snap, func(tx *Transaction) {
			for _, a := range files[:len(files)-1] {
				tx.Remove(Remove{Path: a.Path, DeletionTimestamp: lgPtr(c.t.UnixMilli()), DataChange: false, Size: lgPtr(a.Size), PartitionValues: a.PartitionValues, ExtendedFileMetadata: lgPtr(true)})
			}
			tx.Add(*lgAdd(100000 + h))
		}); err != nil {
			t.Fatal(err)
		}
		lazy := snapshot(t, maint)
		if lazy.CheckpointVersion() == lazy.Version() {
			continue
		}
		eager := snapshot(t, reopen(stream))
		if eager.Version() != lazy.Version() {
			t.Fatalf("hour %d: versions %d and %d", h, eager.Version(), lazy.Version())
		}
		var fromCheckpoint []Remove
		if lazy.cpTombstones != nil {
			// The oracle's tombstones are the Arrow decode's, every field, as a base.
			data := checkpointBytes(t, stream, eager.CheckpointVersion())
			fromCheckpoint = arrowRemoves(t, data)
			var rs []*Remove
			for _, r := range fromCheckpoint {
				rs = append(rs, &r)
			}
			if eager.cpTombstones = writtenTombstones(newTombstoneBase(data, rs)); eager.cpTombstones == nil {
				t.Fatalf("hour %d: checkpoint %d is no base", h, eager.CheckpointVersion())
			}
		}
		cutoff := c.t.Add(-DefaultTombstoneRetention).UnixMilli()
		got, want := builtCheckpoint(t, lazy, cutoff), builtCheckpoint(t, eager, cutoff)
		if !bytes.Equal(got, want) {
			t.Fatalf("hour %d: the cold run's checkpoint of version %d differs from the one built after a full decode (%d and %d bytes)", h, lazy.Version(), len(got), len(want))
		}
		if err := WriteCheckpoint(ctx, lazy); err != nil {
			t.Fatal(err)
		}
		keys, err := lazy.tombstoneKeys()
		if err != nil {
			t.Fatal(err)
		}
		if all := oracleTombstones(lazy, fromCheckpoint); !reflect.DeepEqual(keyFieldsOf(keys), keyFieldsOf(all)) {
			t.Fatalf("hour %d: VACUUM's tombstone keys (%d) differ from a full decode's (%d)", h, len(keys), len(all))
		}
		if _, err := maint.Vacuum(ctx, VacuumOptions{}); err != nil {
			t.Fatal(err)
		}
		if gs, err := lazy.cpTombstones.rowGroups(); err == nil {
			groups += len(gs)
		}
		full += lazy.cpTombstones.fullyDecoded()
	}
	carried, merged, dropped := cc.carried.Load()-carried0, cc.merged.Load()-merged0, cc.dropped.Load()-dropped0
	t.Logf("%d cold runs: %d remove row groups read, %d of them decoded in full; %d checkpoints carried, %d groups merged, %d dropped",
		runs, groups, full, carried, merged, dropped)
	if carried < int64(runs) || merged == 0 || dropped == 0 || groups == 0 {
		t.Fatalf("the run did not exercise carries (%d), merges (%d) and drops (%d)", carried, merged, dropped)
	}
	if full >= groups/2 {
		t.Fatalf("the cold runs decoded every field of %d of %d row groups they read", full, groups)
	}
}

// builtCheckpoint is the checkpoint buildCheckpoint makes of snap, as one byte slice.
func builtCheckpoint(t *testing.T, snap *Snapshot, cutoff int64) []byte {
	t.Helper()
	parts, size, _, _, err := buildCheckpoint(snap, cutoff)
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Join(parts, nil)
	if int64(len(out)) != size {
		t.Fatalf("checkpoint of %d bytes, size says %d", len(out), size)
	}
	return out
}

// oracleTombstones is what Snapshot.Tombstones gives of snap were its checkpoint's
// tombstones fromCheckpoint: those replayed from JSON, and those of the checkpoint whose
// file is neither live nor removed again since, ordered by key.
func oracleTombstones(snap *Snapshot, fromCheckpoint []Remove) []Remove {
	var out []Remove
	for _, r := range snap.tombstones.All() {
		out = append(out, *r)
	}
	for _, r := range fromCheckpoint {
		k := removeKey(&r)
		_, live := snap.files.Get(k)
		_, newer := snap.tombstones.Get(k)
		if !live && !newer {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Remove) int { return compareKeys(removeKey(&a), removeKey(&b)) })
	return out
}

// One cold snapshot's checkpoint read by many goroutines at once (snapshots are safe for
// concurrent use): the footer shared, the two decode steps of each row group run once,
// and every reader gets the same tombstones and the same checkpoint; run under -race.
func TestColdTombstonesConcurrentReaders(t *testing.T) {
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	checkpointBatchRows = 4
	c := &clock{t: time.UnixMilli(1800000000000)}
	tbl, _ := newClockTable(t, c, Options{})
	lgCreate(t, tbl)
	var acts []Action
	for i := 1; i <= 30; i++ {
		acts = append(acts, Action{Add: lgAdd(i)})
	}
	lgCommit(t, tbl, 1, acts...)
	var removes []Action
	for i := 1; i <= 25; i++ {
		removes = append(removes, Action{Remove: &Remove{Path: lgAdd(i).Path, DeletionTimestamp: lgPtr(c.t.Add(-time.Duration(i) * 5 * time.Hour).UnixMilli()), Size: lgPtr(int64(i))}})
	}
	lgCommit(t, tbl, 2, removes...)
	writeCheckpointAt(t, tbl, 2)
	lgCommit(t, tbl, 3, Action{Add: lgAdd(31)})
	snap := snapshot(t, reopen(tbl))
	cutoff := c.t.Add(-DefaultTombstoneRetention).UnixMilli()
	want := builtCheckpoint(t, snapshot(t, reopen(tbl)), cutoff)
	wantAll := tombstonesOf(t, snapshot(t, reopen(tbl)))
	errs := make(chan error, 16)
	for g := range 16 {
		go func() {
			var err error
			switch g % 4 {
			case 0:
				var got []Remove
				if got, err = snap.Tombstones(); err == nil && !reflect.DeepEqual(got, wantAll) {
					err = fmt.Errorf("goroutine %d: other tombstones", g)
				}
			case 1:
				var got []Remove
				if got, err = snap.tombstoneKeys(); err == nil && !reflect.DeepEqual(keyFieldsOf(got), keyFieldsOf(wantAll)) {
					err = fmt.Errorf("goroutine %d: other tombstone keys", g)
				}
			case 2:
				parts, _, _, _, e := buildCheckpoint(snap, cutoff)
				if err = e; err == nil && !bytes.Equal(bytes.Join(parts, nil), want) {
					err = fmt.Errorf("goroutine %d: another checkpoint", g)
				}
			case 3:
				snap.Files()
				_, err = snap.Totals()
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if len(wantAll) != 25 {
		t.Fatalf("%d tombstones, want 25", len(wantAll))
	}
}

// chunkNullCount reads a column chunk's null count from the footer as arrow-go's
// Statistics gives it, for every column chunk of every Parquet file in testdata (Spark's,
// delta-rs's, this package's) and of a checkpoint of ours, and for a writer whose
// statistics arrow-go trusts only when min equals max (parquet-mr 1.8: the Statistics
// path).
func TestChunkNullCountMatchesStatistics(t *testing.T) {
	files := testdataParquet(t, func(string) bool { return true })
	files["rich"] = richRemovesCheckpoint(t)
	old, err := newCheckpointPart(files["rich"])
	if err != nil {
		t.Fatal(err)
	}
	// The same footer as an old parquet-mr wrote it (not trusted for binary columns
	// whose min and max differ).
	oldFooter := *old.md.FileMetaData
	oldFooter.CreatedBy = lgPtr("parquet-mr version 1.8.0 (build abc)")
	raw, err := (&metadata.FileMetaData{FileMetaData: &oldFooter}).Serialize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	oldMD, err := metadata.NewFileMetaData(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	mds := map[string]*metadata.FileMetaData{"rich, parquet-mr 1.8": oldMD}
	for name, data := range files {
		p, err := newCheckpointPart(data)
		if err != nil {
			t.Fatal(name, err)
		}
		mds[name] = p.md
	}
	chunks, known, untrusted := 0, 0, 0
	for name, md := range mds {
		for rg := range md.RowGroups {
			for col := range md.Schema.NumColumns() {
				cc, err := md.RowGroup(rg).ColumnChunk(col)
				if err != nil {
					t.Fatal(name, err)
				}
				st, err := cc.Statistics()
				if err != nil {
					t.Fatal(name, err)
				}
				wantOK := st != nil && st.HasNullCount()
				var want int64
				if wantOK {
					want = st.NullCount()
				}
				got, ok := chunkNullCount(md, rg, col)
				if got != want || ok != wantOK {
					t.Fatalf("%s row group %d column %s: null count %d, %v; Statistics say %d, %v", name, rg, md.Schema.Column(col).Path(), got, ok, want, wantOK)
				}
				chunks++
				if ok {
					known++
				}
				if set, _ := cc.StatsSet(); !set && md.RowGroups[rg].Columns[col].MetaData.Statistics != nil {
					untrusted++
				}
			}
		}
	}
	t.Logf("%d column chunks in %d files: %d with a null count, %d with statistics arrow-go does not trust", chunks, len(mds), known, untrusted)
	if known == 0 || untrusted == 0 {
		t.Fatal("the files exercise too little")
	}
}

// testdataParquet reads every Parquet file under testdata whose file name keep accepts,
// keyed by path.
func testdataParquet(t *testing.T, keep func(name string) bool) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") && keep(d.Name()) {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files[path] = data
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
