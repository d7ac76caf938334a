package deltalog

import (
	"bytes"
	"context"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"
)

// A checkpoint that cannot be carried (several files, or Spark's row groups mixing
// removes with other actions) is decoded in full by a cold maintenance run that keeps
// tombstones; after that nothing reads its bytes again, and the snapshot must not hold
// them (lazyTombstones; docs/decisions/0014-checkpoint-tombstones.md, follow-up
// "Tombstones decoded by what reads them"). The reads that follow still answer as a full
// decode does.

// bytesHeld is a weak pointer to the array behind data: nil once nothing holds it.
func bytesHeld(data []byte) weak.Pointer[byte] { return weak.Make(&data[0]) }

// collected reports whether every array behind ps was collected, after a collection.
func collected(ps []weak.Pointer[byte]) bool {
	runtime.GC()
	for _, p := range ps {
		if p.Value() != nil {
			return false
		}
	}
	return true
}

// A cold snapshot of a two-part checkpoint with removes in both parts: its checkpoint
// built (no carry base: the full decode) leaves neither part's bytes held, and its
// tombstones, their keys and its checkpoint are then what a fresh snapshot gives.
func TestColdMultiPartTombstonesReleased(t *testing.T) {
	ctx := context.Background()
	tbl := dirTableOfAdds(t, 8)
	now := time.Now()
	var removes []Action
	for i := 1; i <= 5; i++ {
		removes = append(removes, Action{Remove: &Remove{Path: lgAdd(i).Path, DeletionTimestamp: lgPtr(now.Add(-time.Duration(i) * time.Hour).UnixMilli()), Size: lgPtr(int64(100 + i)), PartitionValues: lgAdd(i).PartitionValues}})
	}
	lgCommit(t, tbl, 9, removes...)
	full := snapshot(t, tbl)
	p, m := full.Protocol(), full.Metadata()
	files := full.Files()
	if len(files) != 3 {
		t.Fatalf("%d live files, want 3", len(files))
	}
	part1, err := encodeCheckpoint(append([]Action{{Protocol: &p}, {MetaData: &m}, {Add: &files[0]}}, removes[:2]...))
	if err != nil {
		t.Fatal(err)
	}
	part2, err := encodeCheckpoint(append([]Action{{Add: &files[1]}, {Add: &files[2]}}, removes[2:]...))
	if err != nil {
		t.Fatal(err)
	}
	putCheckpointPart(t, tbl, 9, 1, 2, part1)
	putCheckpointPart(t, tbl, 9, 2, 2, part2)
	if err := tbl.Store().Put(ctx, LastCheckpointKey, strings.NewReader(`{"version":9,"size":10,"parts":2}`), -1); err != nil {
		t.Fatal(err)
	}

	snap := snapshot(t, reopen(tbl))
	lt := snap.cpTombstones
	if snap.CheckpointVersion() != 9 || lt == nil || len(lt.parts) != 2 {
		t.Fatalf("checkpoint %d, tombstones kept %v, want both parts of checkpoint 9", snap.CheckpointVersion(), lt != nil)
	}
	held := []weak.Pointer[byte]{bytesHeld(lt.parts[0].data), bytesHeld(lt.parts[1].data)}
	cutoff := now.Add(-DefaultTombstoneRetention).UnixMilli()
	first := builtCheckpoint(t, snap, cutoff) // the carry rule, then the full decode
	groups, err := lt.rowGroups()
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) < 2 || lt.fullyDecoded() != len(groups) {
		t.Fatalf("%d of %d remove row groups decoded in full, want all (at least 2)", lt.fullyDecoded(), len(groups))
	}
	if !collected(held) {
		t.Fatal("the snapshot still holds the checkpoint's bytes after decoding its tombstones in full")
	}

	fresh := snapshot(t, reopen(tbl))
	want := tombstonesOf(t, fresh)
	if len(want) != 5 || !reflect.DeepEqual(tombstonesOf(t, snap), want) {
		t.Fatalf("tombstones after the release\n%+v\nwant (5)\n%+v", tombstonesOf(t, snap), want)
	}
	keys, err := snap.tombstoneKeys()
	if err != nil || !reflect.DeepEqual(keyFieldsOf(keys), keyFieldsOf(want)) {
		t.Fatalf("tombstone keys after the release (%v)\n%+v\nwant\n%+v", err, keyFieldsOf(keys), keyFieldsOf(want))
	}
	if b, err := lt.carryBase(); b != nil || err != nil {
		t.Fatalf("a two-part checkpoint as a carry base: %v, %v", b != nil, err)
	}
	if again := builtCheckpoint(t, snap, cutoff); !bytes.Equal(again, first) || !bytes.Equal(again, builtCheckpoint(t, fresh, cutoff)) {
		t.Fatal("the checkpoint built after the release differs")
	}
	runtime.KeepAlive(snap)
}

// Every testdata checkpoint file with removes, read as one cold open keeps it: once the
// carry rule has looked for a base and the removes are decoded in full, a file that is no
// base (Spark's, mixing removes with other actions in a row group) is no longer held,
// and one that is a base still is (its row groups are copied from those bytes); the
// removes read afterwards are the Arrow decode's.
func TestUncarriedTombstonesReleased(t *testing.T) {
	files := testdataParquet(t, func(name string) bool { return strings.Contains(name, ".checkpoint.") })
	files["rich"] = richRemovesCheckpoint(t)
	mixed, bases := 0, 0
	for name, data := range files {
		want := arrowRemoves(t, data)
		if len(want) == 0 {
			continue
		}
		own := bytes.Clone(data) // the test's copy stays held
		held := []weak.Pointer[byte]{bytesHeld(own)}
		p, err := newCheckpointPart(own)
		if err != nil {
			t.Fatal(name, err)
		}
		l := &lazyTombstones{}
		l.add(p)
		b, err := l.carryBase()
		if err != nil {
			t.Fatal(name, err)
		}
		if _, err := l.load(); err != nil {
			t.Fatal(name, err)
		}
		switch released := collected(held); {
		case b == nil && !released:
			t.Fatalf("%s: no carry base, every remove decoded, and the bytes are still held", name)
		case b != nil && released:
			t.Fatalf("%s: a carry base whose bytes were released", name)
		case b == nil:
			mixed++
		default:
			bases++
		}
		for _, read := range []func() ([]*Remove, error){l.load, l.keyed} {
			got, err := read()
			if err != nil {
				t.Fatal(name, err)
			}
			if !reflect.DeepEqual(keyFieldsOf(derefRemoves(got)), keyFieldsOf(want)) {
				t.Fatalf("%s: removes after the release differ from the Arrow decode", name)
			}
		}
		if all, _ := l.load(); !reflect.DeepEqual(derefRemoves(all), want) {
			t.Fatalf("%s: removes after the release\n%+v\nwant\n%+v", name, derefRemoves(all), want)
		}
		runtime.KeepAlive(l)
	}
	t.Logf("%d files released (no base), %d kept as carry bases", mixed, bases)
	if mixed == 0 || bases == 0 {
		t.Fatalf("the files exercise too little: %d released, %d bases", mixed, bases)
	}
}
