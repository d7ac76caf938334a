package deltalog

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func lgBase(t *testing.T) *Table {
	t.Helper()
	tbl := openDir(t, t.TempDir())
	lgCommit(t, tbl, 0, Action{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}}, Action{MetaData: lgMetadata()})
	return tbl
}

func TestSnapshotOfMissingTable(t *testing.T) {
	tbl := openDir(t, t.TempDir())
	s, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Version() != -1 || len(s.Files()) != 0 || s.CanWrite() != nil {
		t.Errorf("missing table: version %d, files %d, CanWrite %v", s.Version(), len(s.Files()), s.CanWrite())
	}
	var nf *VersionNotFoundError
	if _, err := tbl.SnapshotAt(context.Background(), 0); !errors.As(err, &nf) || nf.Latest != -1 {
		t.Errorf("SnapshotAt(0) on a missing table: %v", err)
	}
	if err := WriteCheckpoint(context.Background(), s); !errors.Is(err, ErrNoTable) {
		t.Errorf("WriteCheckpoint of a missing table: %v", err)
	}
}

// TestReconciliation follows docs/reference/delta-protocol.md §9.2: the newest action per
// (path, DV id) wins, the latest txn per app id, the latest metaData and protocol,
// domain tombstones delete, commitInfo comes from the JSON commits.
func TestReconciliation(t *testing.T) {
	ctx := context.Background()
	tbl := lgBase(t)
	dv := &DeletionVector{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: lgPtr(int32(1)), SizeInBytes: 36, Cardinality: 2}
	lgCommit(t, tbl, 1,
		Action{CommitInfo: &CommitInfo{Timestamp: 11, Operation: "WRITE", UserMetadata: `{"batch":1}`}},
		Action{Add: lgAdd(1)}, Action{Add: lgAdd(2)},
		Action{Txn: &Txn{AppID: "a", Version: 1}},
		Action{DomainMetadata: &DomainMetadata{Domain: "x", Configuration: "1"}})
	lgCommit(t, tbl, 2,
		Action{Remove: &Remove{Path: lgAdd(1).Path, DataChange: true, DeletionTimestamp: lgPtr(int64(5))}},
		Action{Add: &Add{Path: lgAdd(2).Path, Size: 7, DeletionVector: dv}},
		Action{Remove: &Remove{Path: lgAdd(2).Path, DataChange: true}},
		Action{Txn: &Txn{AppID: "a", Version: 3}},
		Action{DomainMetadata: &DomainMetadata{Domain: "x", Removed: true}})
	// Version 3: the first file comes back; a new metadata replaces the old one entirely.
	md := lgMetadata()
	md.Configuration = map[string]string{"k": "v"}
	lgCommit(t, tbl, 3, Action{Add: lgAdd(1)}, Action{MetaData: md})

	s, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files := s.Files()
	if len(files) != 2 || files[1].Path != lgAdd(1).Path || files[0].DeletionVector.UniqueID() != "uab^-aqEH.-t@S}K{vb[*k^@1" {
		t.Fatalf("files %+v", files)
	}
	if v, ok := s.TxnVersion("a"); !ok || v != 3 {
		t.Errorf("txn a = %d %v", v, ok)
	}
	if _, ok := s.TxnVersion("b"); ok {
		t.Error("txn b should be absent")
	}
	if len(s.DomainMetadata()) != 0 {
		t.Errorf("domains %+v", s.DomainMetadata())
	}
	if s.Metadata().Configuration["k"] != "v" || len(s.Metadata().Configuration) != 1 {
		t.Errorf("metadata %+v", s.Metadata())
	}
	tomb := tombstonesOf(t, s)
	if len(tomb) != 1 || tomb[0].Path != lgAdd(2).Path {
		t.Errorf("tombstones %+v: want only the DV-less %s (file 1 was re-added)", tomb, lgAdd(2).Path)
	}
	ci, ok := s.CommitInfo(1)
	if !ok || ci.Operation != "WRITE" || ci.UserMetadata != `{"batch":1}` || ci.Timestamp != 11 {
		t.Errorf("commitInfo(1) = %+v %v", ci, ok)
	}
	if err := s.CanReadData(); err != nil {
		t.Errorf("CanReadData refused a live file with a deletion vector (Scan honours them): %v", err)
	}

	// Time travel.
	s1, err := tbl.SnapshotAt(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(s1.Files()) != 2 || len(s1.DomainMetadata()) != 1 {
		t.Errorf("version 1: %d files, %d domains", len(s1.Files()), len(s1.DomainMetadata()))
	}
	if v, _ := s1.TxnVersion("a"); v != 1 {
		t.Errorf("version 1: txn a = %d", v)
	}
	var nf *VersionNotFoundError
	if _, err := tbl.SnapshotAt(ctx, 4); !errors.As(err, &nf) || nf.Latest != 3 {
		t.Errorf("SnapshotAt(4): %v", err)
	}
}

// TestLastCheckpointHint: a stale hint (pointing at a deleted checkpoint) and a missing
// one both fall back to listing; a hint newer than a time-travel target is not used.
func TestLastCheckpointHint(t *testing.T) {
	ctx := context.Background()
	tbl := lgBase(t)
	for v := int64(1); v <= 12; v++ {
		lgCommit(t, tbl, v, Action{Add: lgAdd(int(v))})
		if v == 5 || v == 10 {
			s, err := tbl.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteCheckpoint(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(name string, version, wantCP int64) {
		t.Helper()
		s, err := tbl.SnapshotAt(ctx, version)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.CheckpointVersion() != wantCP || len(s.Files()) != int(version) {
			t.Errorf("%s: checkpoint %d, %d files; want %d, %d", name, s.CheckpointVersion(), len(s.Files()), wantCP, version)
		}
	}
	check("hint", 12, 10)
	check("before hint", 7, 5)
	check("before any checkpoint", 4, -1)

	// A hint behind the newest checkpoint is used as it is (more commits to replay).
	old := []byte(`{"version":5,"size":7}`)
	if err := tbl.Store().Put(ctx, LastCheckpointKey, bytes.NewReader(old), int64(len(old))); err != nil {
		t.Fatal(err)
	}
	check("old hint", 12, 5)

	if err := tbl.Store().Delete(ctx, LastCheckpointKey); err != nil {
		t.Fatal(err)
	}
	check("no hint", 12, 10)

	if err := tbl.Store().Delete(ctx, CheckpointFileKey(10)); err != nil {
		t.Fatal(err)
	}
	hint := []byte(`{"version":10,"size":12}`)
	if err := tbl.Store().Put(ctx, LastCheckpointKey, bytes.NewReader(hint), int64(len(hint))); err != nil {
		t.Fatal(err)
	}
	check("stale hint", 12, 5)

	// A corrupt checkpoint falls back to an older one.
	junk := []byte("not parquet")
	if err := tbl.Store().Put(ctx, CheckpointFileKey(10), bytes.NewReader(junk), int64(len(junk))); err != nil {
		t.Fatal(err)
	}
	check("corrupt checkpoint", 12, 5)
}

func TestLogGapIsCorrupt(t *testing.T) {
	ctx := context.Background()
	tbl := lgBase(t)
	for v := int64(1); v <= 3; v++ {
		lgCommit(t, tbl, v, Action{Add: lgAdd(int(v))})
	}
	if err := tbl.Store().Delete(ctx, CommitFileKey(2)); err != nil {
		t.Fatal(err)
	}
	_, err := tbl.Snapshot(ctx)
	var ce *CorruptLogError
	if !errors.As(err, &ce) || ce.Version != 2 {
		t.Fatalf("got %v, want a corrupt log at version 2", err)
	}
	// With version 0 gone and no checkpoint, old versions are no longer reachable.
	if err := tbl.Store().Delete(ctx, CommitFileKey(0)); err != nil {
		t.Fatal(err)
	}
	var nf *VersionNotFoundError
	if _, err := tbl.SnapshotAt(ctx, 1); !errors.As(err, &nf) {
		t.Errorf("got %v, want VersionNotFoundError", err)
	}
}

func TestUnsupportedReaderFeature(t *testing.T) {
	tbl := openDir(t, t.TempDir())
	lgCommit(t, tbl, 0,
		Action{Protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz", "variantType"}, WriterFeatures: []string{"timestampNtz", "variantType"}}},
		Action{MetaData: lgMetadata()})
	_, err := tbl.Snapshot(context.Background())
	var fe *UnsupportedFeatureError
	if !errors.As(err, &fe) || fe.Feature != "variantType" || !fe.Reader || !strings.Contains(err.Error(), "variantType") {
		t.Fatalf("got %v", err)
	}
}
