package deltalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// appendBatches commits n files of rows, one commit per file as the stream writes bronze:
// file i holds v = 10i..10i+9 and is modified at i seconds (log order).
func appendBatches(t *testing.T, tbl *Table, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		rows := make([]scanRow, 10)
		for j := range rows {
			rows[j] = scanRow{app: "a", op: 2, v: int64(10*i + j)}
		}
		add := writeFile(t, tbl, scanSchema, rows, nil)
		add.ModificationTime = 1700000000000 + int64(i)*1000
		commitFiles(t, tbl, scanSchema, add)
	}
}

// fileValues reads column v of one data file in file order.
func fileValues(t *testing.T, tbl *Table, a Add) []string {
	t.Helper()
	ctx := context.Background()
	it, err := parquetio.ReadFileSized(ctx, tbl.Store(), a.DecodedPath(), a.Size, []string{"v"})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			out = append(out, valueString(rec.Column(0), i))
		}
		rec.Release()
	}
}

// Small files are packed, in log order, into files of about the target size, committed
// as OPTIMIZE does: removes and adds with dataChange false, SnapshotIsolation, not a blind
// append, operationMetrics; the rows and their order within the new files are kept, the
// new files have statistics, and a second run has nothing to do.
func TestCompactPacksSmallFilesInLogOrder(t *testing.T) {
	ctx := context.Background()
	tbl, store := newMemTable(Options{})
	appendBatches(t, tbl, 0, 12)
	before := snapshot(t, tbl)
	rows := scanStrings(t, before)
	size := before.Files()[0].Size
	// The first group holds files up to the target by their sizes: 5 files. Its output
	// shows what a row costs once packed (the small files are mostly footers), so the
	// second group takes the other 7, whose rows fit the target easily; the second pass
	// packs the two small files written into one.
	res, err := tbl.Compact(ctx, CompactOptions{TargetFileSize: 5*size + size/2, Writer: parquetio.WriterOptions{TempDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commits != 3 || res.FilesRemoved != 14 || res.FilesAdded != 3 || res.Rows != 240 || res.LiveFiles != 1 || res.FilesLeft != 0 || res.Version != 14 {
		t.Fatalf("result %+v", res)
	}
	after := snapshot(t, tbl)
	if got := scanStrings(t, after); !slices.Equal(got, rows) {
		t.Fatalf("rows changed:\n%v\nwant\n%v", got, rows)
	}
	for _, a := range after.Files() {
		if a.DataChange {
			t.Fatalf("add %s has dataChange true", a.Path)
		}
		vals := fileValues(t, tbl, a)
		for i := 1; i < len(vals); i++ {
			var x, y int
			fmt.Sscan(vals[i-1], &x)
			fmt.Sscan(vals[i], &y)
			if y != x+1 {
				t.Fatalf("file %s rows out of log order: %v", a.Path, vals)
			}
		}
		n, ok := a.NumRecords()
		st, _, _ := ParseStats(a.Stats)
		if !ok || n != int64(len(vals)) || string(st.MinValues["v"]) != vals[0] || string(st.MaxValues["v"]) != vals[len(vals)-1] {
			t.Fatalf("file %s: stats %s for values %v", a.Path, a.Stats, vals)
		}
		if len(vals) != 120 || vals[0] != "0" {
			t.Fatalf("file %s holds %d rows from %s", a.Path, len(vals), vals[0])
		}
	}
	// The commit's shape.
	raw, err := tbl.LogStore().Read(ctx, 12)
	if err != nil {
		t.Fatal(err)
	}
	actions, err := DecodeActions(raw)
	if err != nil {
		t.Fatal(err)
	}
	ci := actions[0].CommitInfo
	if ci == nil || ci.Operation != "OPTIMIZE" || ci.IsolationLevel != "SnapshotIsolation" || ci.IsBlindAppend == nil || *ci.IsBlindAppend ||
		ci.OperationParameters["predicate"] != "[]" || ci.OperationParameters["zOrderBy"] != "[]" {
		t.Fatalf("commitInfo %+v", ci)
	}
	var metrics map[string]string
	if err := json.Unmarshal(ci.Extra["operationMetrics"], &metrics); err != nil || metrics["numRemovedFiles"] != "5" || metrics["numAddedFiles"] != "1" {
		t.Fatalf("operationMetrics %s: %v", ci.Extra["operationMetrics"], err)
	}
	removes := 0
	sizes := map[string]int64{}
	for _, a := range before.Files() {
		sizes[a.Path] = a.Size
	}
	for _, a := range actions {
		if r := a.Remove; r != nil {
			removes++
			if r.DataChange || r.Size == nil || *r.Size != sizes[r.Path] || r.ExtendedFileMetadata == nil || !*r.ExtendedFileMetadata {
				t.Fatalf("remove %+v", r)
			}
		}
	}
	if removes != 5 {
		t.Fatalf("%d removes, want 5", removes)
	}
	// The removed files stay on storage for time travel until VACUUM.
	if _, err := store.Head(ctx, before.Files()[0].Path); err != nil {
		t.Fatalf("removed file deleted: %v", err)
	}
	// Nothing more to do for files of the original size: a re-run changes nothing.
	again, err := tbl.Compact(ctx, CompactOptions{TargetFileSize: 5*size + size/2, MinFileSize: size + 50})
	if err != nil || again.Commits != 0 || again.Version != 14 {
		t.Fatalf("second run %+v, %v", again, err)
	}
}

// MaxBytes bounds a run; the next run does the rest. DryRun writes nothing.
func TestCompactBudgetAndDryRun(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	appendBatches(t, tbl, 0, 9)
	size := snapshot(t, tbl).Files()[0].Size
	opts := CompactOptions{TargetFileSize: 3*size + size/2, MaxBytes: 4 * size, Writer: parquetio.WriterOptions{TempDir: t.TempDir()}}
	dry := opts
	dry.DryRun = true
	res, err := tbl.Compact(ctx, dry)
	if err != nil || res.Commits != 1 || res.FilesRemoved != 3 || res.FilesLeft != 6 || res.Version != 8 || snapshot(t, tbl).Version() != 8 {
		t.Fatalf("dry run %+v, %v", res, err)
	}
	// Each run rewrites at most MaxBytes (its first group always), and leaves the rest.
	res, err = tbl.Compact(ctx, opts)
	if err != nil || res.Commits != 1 || res.FilesRemoved != 3 || res.FilesLeft != 6 || res.LiveFiles != 7 {
		t.Fatalf("first run %+v, %v", res, err)
	}
	// Compacted files are small too: later runs pack them with the rest, in log order (their
	// INSERTION_TIME tags), until nothing is left to do. Every file then holds one
	// contiguous run of rows, in order, and the runs follow the files' tags.
	for run := 0; ; run++ {
		res, err := tbl.Compact(ctx, opts)
		if err != nil || run > 6 || (res.Commits > 1 && res.BytesRemoved > opts.MaxBytes) {
			t.Fatalf("run %d: %+v, %v", run, res, err)
		}
		if res.Commits == 0 {
			break
		}
	}
	final := snapshot(t, tbl).Files()
	slices.SortFunc(final, func(a, b Add) int { return compareInt64(minInsertionTime(&a), minInsertionTime(&b)) })
	next := 0
	for _, f := range final {
		for _, v := range fileValues(t, tbl, f) {
			if v != fmt.Sprint(next) {
				t.Fatalf("file %s (tags %v): value %s, want %d", f.Path, f.Tags, v, next)
			}
			next++
		}
	}
	if next != 90 || len(final) > 3 {
		t.Fatalf("%d rows in %d files", next, len(final))
	}
}

// hookLogStore runs before once, ahead of the first Write: another writer's commit lands
// between the compaction's read and its commit.
type hookLogStore struct {
	logstore.LogStore
	before func()
}

func (h *hookLogStore) Write(ctx context.Context, v int64, data []byte) error {
	if f := h.before; f != nil {
		h.before = nil
		f()
	}
	return h.LogStore.Write(ctx, v, data)
}

// The conflict rules of a compaction (docs/reference/delta-protocol.md §10.2, §10.3):
// a blind append that wins the race does not conflict with it, nor does it conflict with a
// blind append that loses; a winner that removed one of the files it removes does.
func TestCompactConflicts(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*Table, *Table, *hookLogStore) {
		plain, store := newMemTable(Options{})
		appendBatches(t, plain, 0, 4)
		h := &hookLogStore{LogStore: plain.LogStore()}
		return plain, Open(store, h, Options{RetryBaseDelay: 1}), h
	}
	opts := CompactOptions{Writer: parquetio.WriterOptions{TempDir: t.TempDir()}}

	t.Run("blind append wins the race", func(t *testing.T) {
		plain, tbl, h := setup(t)
		h.before = func() { appendBatches(t, plain, 4, 1) }
		// The group of four commits after the append; the second pass packs the compacted
		// file with the appended one.
		res, err := tbl.Compact(ctx, opts)
		if err != nil || res.Commits < 1 || res.FilesRemoved < 4 {
			t.Fatalf("compact %+v, %v", res, err)
		}
		raw, err := plain.LogStore().Read(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		if acts, _ := DecodeActions(raw); acts[0].CommitInfo.Operation != "OPTIMIZE" {
			t.Fatalf("version 5 is %s, want the compaction after the append at 4", acts[0].CommitInfo.Operation)
		}
		s := snapshot(t, plain)
		if s.NumFiles() > 2 || len(scanStrings(t, s)) != 50 {
			t.Fatalf("%d files, %d rows", s.NumFiles(), len(scanStrings(t, s)))
		}
	})

	t.Run("blind append loses the race", func(t *testing.T) {
		plain, tbl, _ := setup(t)
		stale := snapshot(t, plain) // the appender read the table before the compaction
		if _, err := tbl.Compact(ctx, opts); err != nil {
			t.Fatal(err)
		}
		add := writeFile(t, plain, scanSchema, []scanRow{{app: "a", op: 2, v: 999}}, nil)
		res, err := commitAt(t, plain, stale, func(tx *Transaction) {
			tx.SetAppTxn("stream", 1)
			tx.Add(add)
		})
		if err != nil || res.Version != 5 || res.Skipped {
			t.Fatalf("append after the compaction: %+v, %v", res, err)
		}
		if got := len(scanStrings(t, snapshot(t, plain))); got != 41 {
			t.Fatalf("%d rows, want 41", got)
		}
	})

	t.Run("a compacted file removed meanwhile", func(t *testing.T) {
		plain, tbl, h := setup(t)
		victim := snapshot(t, plain).Files()[1]
		h.before = func() {
			s := snapshot(t, plain)
			if _, err := commitAt(t, plain, s, func(tx *Transaction) { tx.Remove(victim.RemoveAction(1, true)) }); err != nil {
				t.Fatal(err)
			}
		}
		res, err := tbl.Compact(ctx, opts)
		var cme *ConcurrentModificationError
		if !errors.As(err, &cme) || cme.Path != victim.Path || res.Commits != 0 || res.FilesLeft != 4 {
			t.Fatalf("compact %+v, %v; want a conflict on %s", res, err, victim.Path)
		}
		// Its new files were deleted; the table holds the three others, uncompacted.
		s := snapshot(t, plain)
		if s.Version() != 4 || s.NumFiles() != 3 {
			t.Fatalf("version %d, %d files", s.Version(), s.NumFiles())
		}
		for oi, err := range plain.Store().List(ctx, "", "") {
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(oi.Key, ".parquet") && !strings.HasPrefix(oi.Key, "_") {
				if _, live := s.files.Get(fileKey{path: oi.Key}); !live && oi.Key != victim.Path {
					t.Fatalf("compaction output %s left behind", oi.Key)
				}
			}
		}
		// The next run compacts what is there.
		res, err = tbl.Compact(ctx, opts)
		if err != nil || res.FilesRemoved != 3 || len(scanStrings(t, snapshot(t, plain))) != 30 {
			t.Fatalf("rerun %+v, %v", res, err)
		}
	})
}

// Files written before a column was added read it as NULL; the compacted file holds the
// column. Partitions are compacted apart and keep their values.
func TestCompactEvolvedSchemaAndPartitions(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newMemTable(Options{})
	appendBatches(t, tbl, 0, 2)
	wider := arrow.NewSchema(append(scanSchema.Fields(), arrow.Field{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	add := writeFile(t, tbl, wider, []scanRow{{app: "b", op: 2, v: 7}}, func(b *array.RecordBuilder) {
		b.Field(3).(*array.StringBuilder).Append("x")
	})
	add.ModificationTime = 1700000009000
	commitFiles(t, tbl, wider, add)
	want := scanStrings(t, snapshot(t, tbl))
	res, err := tbl.Compact(ctx, CompactOptions{Writer: parquetio.WriterOptions{TempDir: t.TempDir()}})
	if err != nil || res.FilesRemoved != 3 || res.FilesAdded != 1 {
		t.Fatalf("compact %+v, %v", res, err)
	}
	if got := scanStrings(t, snapshot(t, tbl)); !slices.Equal(got, want) {
		t.Fatalf("rows\n%v\nwant\n%v", got, want)
	}

	// Two partitions of two files each: two groups, each keeping its partition values.
	ptbl, _ := newMemTable(Options{})
	var adds []Add
	for i, p := range []string{"1", "2", "1", "2"} {
		a := writeFile(t, ptbl, scanSchema, []scanRow{{app: "p", op: 2, v: int64(i)}}, nil)
		a.PartitionValues = map[string]string{"part": p}
		adds = append(adds, a)
	}
	schema := `{"type":"struct","fields":[{"name":"app_id","type":"string","nullable":true,"metadata":{}},{"name":"_operation","type":"integer","nullable":true,"metadata":{}},{"name":"v","type":"long","nullable":true,"metadata":{}},{"name":"part","type":"integer","nullable":true,"metadata":{}}]}`
	acts := []Action{{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{MetaData: &Metadata{ID: "id", SchemaString: schema, PartitionColumns: []string{"part"}}}}
	for i := range adds {
		acts = append(acts, Action{Add: &adds[i]})
	}
	data, err := EncodeActions(acts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ptbl.LogStore().Write(ctx, 0, data); err != nil {
		t.Fatal(err)
	}
	want = scanStrings(t, snapshot(t, ptbl))
	res, err = ptbl.Compact(ctx, CompactOptions{Writer: parquetio.WriterOptions{TempDir: t.TempDir()}})
	if err != nil || res.Commits != 2 || res.FilesAdded != 2 {
		t.Fatalf("compact %+v, %v", res, err)
	}
	s := snapshot(t, ptbl)
	if got := scanStrings(t, s); !slices.Equal(got, want) {
		t.Fatalf("rows\n%v\nwant\n%v", got, want)
	}
	var parts []string
	for _, a := range s.Files() {
		parts = append(parts, a.PartitionValues["part"])
	}
	slices.Sort(parts)
	if !slices.Equal(parts, []string{"1", "2"}) {
		t.Fatalf("partitions %v", parts)
	}
}

// A file whose deletion vector deletes more than 5 % of its rows is rewritten without
// them: the remove keeps the DV (the logical file it names), the new file has none.
// (The copy of Spark's table has its deletionVectors feature taken out of the protocol, so
// that this package may commit to it; the DV on the add is what is tested.)
func TestCompactDropsDeletedRows(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(protocolTablesDir, "table-with-dv-small")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	v0 := filepath.Join(dir, "_delta_log", "00000000000000000000.json")
	b, err := os.ReadFile(v0)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]`, `"minReaderVersion":1,"minWriterVersion":2`, 1)
	s = strings.Replace(s, `"delta.enableDeletionVectors":"true",`, ``, 1)
	if s == string(b) {
		t.Fatal("fixture edit did not apply")
	}
	if err := os.WriteFile(v0, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := openDir(t, dir)
	before := snapshot(t, tbl)
	want := scanStrings(t, before)
	dvFile := before.Files()[0]
	if dvFile.DeletionVector == nil || len(want) != 8 {
		t.Fatalf("fixture: %d rows, DV %v", len(want), dvFile.DeletionVector)
	}
	res, err := tbl.Compact(ctx, CompactOptions{Writer: parquetio.WriterOptions{TempDir: t.TempDir()}})
	if err != nil || res.FilesRemoved != 1 || res.FilesAdded != 1 || res.Rows != 8 || res.DeletedRows != 2 {
		t.Fatalf("compact %+v, %v", res, err)
	}
	after := snapshot(t, tbl)
	if got := scanStrings(t, after); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	f := after.Files()[0]
	if n, _ := f.NumRecords(); f.DeletionVector != nil || n != 8 {
		t.Fatalf("new file %+v", f)
	}
	// The remove names the logical file (path, DV); Spark's own earlier remove of the file
	// without a DV stays a separate tombstone.
	var found bool
	for _, r := range tombstonesOf(t, after) {
		if r.DeletionVector != nil {
			found = r.DeletionVector.UniqueID() == dvFile.DeletionVector.UniqueID() && !r.DataChange && r.Path == dvFile.Path
		}
	}
	if !found {
		t.Fatalf("tombstones %+v", tombstonesOf(t, after))
	}
}
