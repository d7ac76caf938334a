package deltalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// lgCommit writes version v of tbl with the given actions.
func lgCommit(t testing.TB, tbl *Table, v int64, actions ...Action) {
	t.Helper()
	data, err := EncodeActions(actions)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.LogStore().Write(context.Background(), v, data); err != nil {
		t.Fatal(err)
	}
}

// lgCreate writes version 0 of tbl: reader 1, writer 2, and lgMetadata partitioned by p.
func lgCreate(t testing.TB, tbl *Table) {
	t.Helper()
	lgCommit(t, tbl, 0, Action{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}}, Action{MetaData: lgMetadata("p")})
}

func lgPtr[T any](v T) *T { return &v }

func lgMetadata(partitions ...string) *Metadata {
	return &Metadata{
		ID:               "0b6a1ab5-3c3e-4f0e-9d4b-0d5c0d7ab001",
		Format:           Format{Provider: "parquet"},
		SchemaString:     `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`,
		PartitionColumns: partitions,
		Configuration:    map[string]string{"delta.appendOnly": "false"},
		CreatedTime:      lgPtr(int64(1700000000000)),
	}
}

func lgAdd(i int) *Add {
	return &Add{
		Path:             fmt.Sprintf("p=%d/part-%05d.parquet", i%2, i),
		PartitionValues:  map[string]string{"p": fmt.Sprint(i % 2)},
		Size:             int64(100 + i),
		ModificationTime: 1700000000000 + int64(i),
		DataChange:       true,
		Stats:            fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":0},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i+1, i),
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1800000000000)
	tbl := openDir(t, t.TempDir())
	tbl.opts.Now = func() time.Time { return now }
	lgCreate(t, tbl)
	for i := 1; i <= 5; i++ {
		lgCommit(t, tbl, int64(i), Action{Add: lgAdd(i)}, Action{Txn: &Txn{AppID: "app", Version: int64(i)}})
	}
	// Version 6 removes two files: one long ago (expired tombstone), one recently.
	lgCommit(t, tbl, 6,
		Action{Remove: &Remove{Path: lgAdd(1).Path, DeletionTimestamp: lgPtr(now.Add(-8 * 24 * time.Hour).UnixMilli()), DataChange: true, Stats: "x", Tags: map[string]string{"a": "b"}}},
		Action{Remove: &Remove{Path: lgAdd(2).Path, DeletionTimestamp: lgPtr(now.Add(-time.Hour).UnixMilli()), DataChange: true, Stats: "x"}},
		Action{DomainMetadata: &DomainMetadata{Domain: "d1", Configuration: `{"k":1}`}},
		Action{Txn: &Txn{AppID: "other", Version: 9, LastUpdated: lgPtr(int64(5))}},
	)
	before, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckpoint(ctx, before); err != nil {
		t.Fatal(err)
	}
	lc, ok, err := ReadLastCheckpoint(ctx, tbl.Store())
	if err != nil || !ok {
		t.Fatalf("_last_checkpoint: %v %v", ok, err)
	}
	// protocol, metaData, 2 txns, 1 domain, 3 adds, 1 unexpired tombstone
	if lc.Version != 6 || lc.Size != 9 || lc.NumOfAddFiles != 3 || lc.Parts != nil || lc.SizeInBytes <= 0 {
		t.Errorf("_last_checkpoint = %+v", lc)
	}
	raw, _ := tbl.Store().GetRange(ctx, LastCheckpointKey, 0, -1)
	if strings.Contains(string(raw), "parts") {
		t.Errorf("_last_checkpoint %s has parts", raw)
	}

	after, err := reopen(tbl).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.CheckpointVersion() != 6 {
		t.Fatalf("snapshot built from checkpoint %d, want 6", after.CheckpointVersion())
	}
	assertSameState(t, before, after)
	tomb := tombstonesOf(t, after)
	if len(tomb) != 1 || tomb[0].Path != lgAdd(2).Path || tomb[0].Stats != "" {
		t.Errorf("tombstones after checkpoint = %+v, want only the recent one, without stats", tomb)
	}
	if _, ok := after.CommitInfo(6); ok {
		t.Error("commitInfo of the checkpoint version must not come from the checkpoint")
	}
}

func assertSameState(t *testing.T, a, b *Snapshot) {
	t.Helper()
	if a.Version() != b.Version() {
		t.Errorf("version %d != %d", a.Version(), b.Version())
	}
	js := func(v any) string { s, _ := json.Marshal(v); return string(s) }
	if js(a.Protocol()) != js(b.Protocol()) {
		t.Errorf("protocol %s != %s", js(a.Protocol()), js(b.Protocol()))
	}
	if js(a.Metadata()) != js(b.Metadata()) {
		t.Errorf("metadata %s != %s", js(a.Metadata()), js(b.Metadata()))
	}
	if js(a.Files()) != js(b.Files()) {
		t.Errorf("files\n%s\n!=\n%s", js(a.Files()), js(b.Files()))
	}
	if js(a.Txns()) != js(b.Txns()) {
		t.Errorf("txns %s != %s", js(a.Txns()), js(b.Txns()))
	}
	if js(a.DomainMetadata()) != js(b.DomainMetadata()) {
		t.Errorf("domains %s != %s", js(a.DomainMetadata()), js(b.DomainMetadata()))
	}
}

// TestCheckpointSchema pins the Parquet layout other engines read
// (docs/reference/delta-protocol.md §7.2): top-level column order, nested field names, map and
// list encodings, and no stats_parsed.
func TestCheckpointSchema(t *testing.T) {
	p := &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{FeatureTimestampNTZ}, WriterFeatures: []string{FeatureTimestampNTZ}}
	data, err := encodeCheckpoint([]Action{{Protocol: p}, {MetaData: lgMetadata()}, {Add: lgAdd(1)}})
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	sc := pf.MetaData().Schema
	var paths []string
	for i := 0; i < sc.NumColumns(); i++ {
		paths = append(paths, sc.Column(i).ColumnPath().String())
	}
	want := []string{
		"txn.appId", "txn.version", "txn.lastUpdated",
		"add.path", "add.partitionValues.key_value.key", "add.partitionValues.key_value.value",
		"add.size", "add.modificationTime", "add.dataChange", "add.tags.key_value.key", "add.tags.key_value.value",
		"add.deletionVector.storageType", "add.deletionVector.pathOrInlineDv", "add.deletionVector.offset",
		"add.deletionVector.sizeInBytes", "add.deletionVector.cardinality", "add.baseRowId",
		"add.defaultRowCommitVersion", "add.clusteringProvider", "add.stats",
		"remove.path", "remove.deletionTimestamp", "remove.dataChange", "remove.extendedFileMetadata",
		"remove.partitionValues.key_value.key", "remove.partitionValues.key_value.value", "remove.size",
		"remove.deletionVector.storageType", "remove.deletionVector.pathOrInlineDv", "remove.deletionVector.offset",
		"remove.deletionVector.sizeInBytes", "remove.deletionVector.cardinality", "remove.baseRowId",
		"remove.defaultRowCommitVersion",
		"metaData.id", "metaData.name", "metaData.description", "metaData.format.provider",
		"metaData.format.options.key_value.key", "metaData.format.options.key_value.value",
		"metaData.schemaString", "metaData.partitionColumns.list.element", "metaData.createdTime",
		"metaData.configuration.key_value.key", "metaData.configuration.key_value.value",
		"protocol.minReaderVersion", "protocol.minWriterVersion",
		"protocol.readerFeatures.list.element", "protocol.writerFeatures.list.element",
		"domainMetadata.domain", "domainMetadata.configuration", "domainMetadata.removed",
	}
	if !slices.Equal(paths, want) {
		t.Errorf("checkpoint columns\n%v\nwant\n%v", paths, want)
	}
	var buf bytes.Buffer
	schema.PrintSchema(sc.Root(), &buf, 0)
	for _, s := range []string{"(Map)", "(List)", "(String)"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("schema lacks %s annotations:\n%s", s, buf.String())
		}
	}
	acts, err := decodeCheckpoint(context.Background(), data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 3 || acts[0].Protocol == nil || !slices.Equal(acts[0].Protocol.ReaderFeatures, []string{FeatureTimestampNTZ}) {
		t.Fatalf("read back %+v", acts)
	}
	if acts[2].Add == nil || acts[2].Add.Stats != lgAdd(1).Stats || acts[2].Add.PartitionValues["p"] != "1" || acts[2].Add.Tags != nil {
		t.Errorf("add read back %+v", acts[2].Add)
	}
}

// dirTableOfAdds is a table on local disk created at version 0 with one add a commit
// after it, lgAdd(1) to lgAdd(n) at versions 1 to n.
func dirTableOfAdds(t *testing.T, n int) *Table {
	t.Helper()
	tbl := openDir(t, t.TempDir())
	lgCreate(t, tbl)
	for i := 1; i <= n; i++ {
		lgCommit(t, tbl, int64(i), Action{Add: lgAdd(i)})
	}
	return tbl
}

// putCheckpointPart stores data as part (from 1) of the total parts of version v's
// multi-part checkpoint.
func putCheckpointPart(t *testing.T, tbl *Table, v int64, part, total int, data []byte) {
	t.Helper()
	key := fmt.Sprintf("_delta_log/%020d.checkpoint.%010d.%010d.parquet", v, part, total)
	if err := tbl.Store().Put(context.Background(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
}

// TestMultiPartCheckpoint reads a two-part checkpoint, and ignores a set missing a part.
func TestMultiPartCheckpoint(t *testing.T) {
	ctx := context.Background()
	tbl := dirTableOfAdds(t, 4)
	full, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, m := full.Protocol(), full.Metadata()
	files := full.Files()
	part1, _ := encodeCheckpoint([]Action{{Protocol: &p}, {MetaData: &m}, {Add: &files[0]}})
	part2, _ := encodeCheckpoint([]Action{{Add: &files[1]}, {Add: &files[2]}, {Add: &files[3]}})
	putCheckpointPart(t, tbl, 4, 1, 2, part1)
	putCheckpointPart(t, tbl, 4, 2, 2, part2)
	// An incomplete three-part set for version 3 must be ignored.
	putCheckpointPart(t, tbl, 3, 1, 3, part1)
	hint := []byte(`{"version":4,"size":5,"parts":2}`)
	if err := tbl.Store().Put(ctx, LastCheckpointKey, bytes.NewReader(hint), int64(len(hint))); err != nil {
		t.Fatal(err)
	}

	snap, err := reopen(tbl).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.CheckpointVersion() != 4 {
		t.Errorf("built from checkpoint %d, want 4", snap.CheckpointVersion())
	}
	assertSameState(t, full, snap)

	at3, err := tbl.SnapshotAt(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if at3.CheckpointVersion() != -1 || len(at3.Files()) != 3 {
		t.Errorf("version 3: checkpoint %d, %d files; want a replay from 0 with 3 files", at3.CheckpointVersion(), len(at3.Files()))
	}
}

func TestParseInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"interval 1 week":  7 * 24 * time.Hour,
		"interval 30 days": 30 * 24 * time.Hour,
		"INTERVAL 2 HOURS": 2 * time.Hour,
		"15 minutes":       15 * time.Minute,
	} {
		got, err := ParseInterval(in)
		if err != nil || got != want {
			t.Errorf("ParseInterval(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// An interval beyond time.Duration (about 292 years) is refused, not wrapped to a
	// negative or short retention that would let VACUUM or log clean-up delete what
	// readers need (issue 12 item 6).
	for _, bad := range []string{"", "interval", "interval 1 month", "interval x days", "interval -1 days",
		"interval 999999999 weeks", "interval 106752 days", "9223372036854775807 seconds"} {
		if _, err := ParseInterval(bad); err == nil {
			t.Errorf("ParseInterval(%q) succeeded", bad)
		}
	}
}
