package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// keyCase is one table shape: its columns, unique index (nil: heap), snapshotKeys, the
// key columns rows are told apart by, and the i-th row.
type keyCase struct {
	name         string
	cols         []source.Column
	index        []string
	snapshotKeys []string
	keys         []string
	row          func(i int) cdcsim.Row
	key          func(i int) []any
}

func guid(i int) string { return fmt.Sprintf("%08X-0000-0000-0000-%012X", i*7919, i) }

var keyCases = []keyCase{
	{name: "integer", cols: []source.Column{{Name: "id", DataType: "int"}, {Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true}},
		index: []string{"id"}, keys: []string{"id"},
		row: func(i int) cdcsim.Row { return cdcsim.Row{"id": int64(i), "v": fmt.Sprint("v", i)} },
		key: func(i int) []any { return []any{int64(i)} }},
	{name: "composite", cols: []source.Column{{Name: "a", DataType: "int"}, {Name: "b", DataType: "nvarchar", MaxLength: 10}, {Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true}},
		index: []string{"a", "b"}, keys: []string{"a", "b"},
		row: func(i int) cdcsim.Row {
			return cdcsim.Row{"a": int64(i % 7), "b": fmt.Sprint("k", i), "v": fmt.Sprint("v", i)}
		},
		key: func(i int) []any { return []any{int64(i % 7), fmt.Sprint("k", i)} }},
	{name: "string", cols: []source.Column{{Name: "code", DataType: "nvarchar", MaxLength: 20}, {Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true}},
		index: []string{"code"}, keys: []string{"code"},
		row: func(i int) cdcsim.Row { return cdcsim.Row{"code": fmt.Sprintf("c%04d", i), "v": fmt.Sprint("v", i)} },
		key: func(i int) []any { return []any{fmt.Sprintf("c%04d", i)} }},
	{name: "uniqueidentifier", cols: []source.Column{{Name: "g", DataType: "uniqueidentifier"}, {Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true}},
		index: []string{"g"}, keys: []string{"g"},
		row: func(i int) cdcsim.Row { return cdcsim.Row{"g": guid(i), "v": fmt.Sprint("v", i)} },
		key: func(i int) []any { return []any{guid(i)} }},
	{name: "heap", cols: []source.Column{{Name: "id", DataType: "bigint", Nullable: true}, {Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true}},
		snapshotKeys: []string{"id"}, keys: []string{"id"},
		row: func(i int) cdcsim.Row { return cdcsim.Row{"id": int64(i), "v": fmt.Sprint("v", i)} },
		key: func(i int) []any { return []any{int64(i)} }},
}

type env struct {
	t    *testing.T
	db   *cdcsim.DB
	spec *config.Spec
	kc   keyCase
	lake *testlake.Lake
	opts snapshot.Options
}

func newEnv(t *testing.T, kc keyCase, rows int) *env { return newEnvOn(t, testlake.Local, kc, rows) }

func newEnvOn(t *testing.T, backend testlake.Backend, kc keyCase, rows int) *env {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 7})
	if err := db.CreateTable(cdcsim.TableSpec{Name: "t", Columns: kc.cols, Key: kc.index}); err != nil {
		t.Fatal(err)
	}
	// Rows written before CDC is enabled: only a snapshot holds them.
	if _, err := db.Exec(func(tx *cdcsim.Txn) error {
		for i := 1; i <= rows; i++ {
			if _, err := tx.Insert("t", kc.row(i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	if _, err := db.EnableCapture("t", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, backend)
	spec := &config.Spec{AppID: "t-v1", Bootstrap: true,
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_t"}}
	lake.Use(spec)
	spec.Defaults()
	spec.Options.NumPartitions = 3
	spec.Options.SnapshotKeys = kc.snapshotKeys
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, spec: spec, kc: kc, lake: lake}
}

// deps are the snapshot steps' connections of one invocation (fresh tables, as a new
// Lambda would open), through the lake's fault plan when set.
func (e *env) deps() snapshot.Deps {
	opts := e.opts
	if opts.Now == nil {
		opts.Now = e.db.Now
	}
	return snapshot.Deps{Spec: e.spec, Source: e.lake.Source(e.db), Bronze: e.lake.Table(e.spec.Bronze),
		Facts: e.lake.Table(e.spec.FactsTable), Plans: e.lake.Table(e.spec.PlansTable()), Staging: e.lake.Store(e.spec.Checkpoint), Options: opts}
}

// run takes (or finds) the snapshot in-process.
func (e *env) run() (lsn.Offset, error) { return snapshot.Run(context.Background(), e.deps()) }

func (e *env) stream() {
	e.t.Helper()
	deps := stream.Deps{Source: e.db, Bronze: e.lake.RawTable(e.spec.Bronze), Facts: e.lake.RawTable(e.spec.FactsTable),
		Plans: e.lake.RawTable(e.spec.PlansTable()), Checkpoint: checkpoint.New(e.lake.RawStore(e.spec.Checkpoint), e.spec.AppID)}
	for i := 0; i < 100; i++ {
		res, err := stream.Run(context.Background(), e.spec, deps, stream.Options{Now: e.db.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			e.t.Fatalf("stream: %v", err)
		}
		if res.CaughtUp {
			return
		}
	}
	e.t.Fatal("stream never caught up")
}

func (e *env) exec(fn func(tx *cdcsim.Txn) error) {
	e.t.Helper()
	e.db.Advance(time.Second)
	if _, err := e.db.Exec(fn); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) check() {
	e.t.Helper()
	ctx := context.Background()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	got, _, err := rebuild.FromBronze(ctx, snap, e.kc.keys)
	if err != nil {
		e.t.Fatal(err)
	}
	cols, err := e.db.Columns("t")
	if err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.db.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: "t"}, Columns: cols})
	if err != nil {
		e.t.Fatal(err)
	}
	want, err := rebuild.FromRows(ctx, rows, e.kc.keys)
	if err != nil {
		e.t.Fatal(err)
	}
	if d := rebuild.Diff(want, got, 10); len(d) > 0 {
		e.t.Fatalf("bronze rebuilds to a different table:\n%v", d)
	}
}

func (e *env) factsRows() []facts.Row {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.FactsTable).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	rows, err := facts.ReadRows(context.Background(), snap, e.spec.AppID)
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

func count(rows []facts.Row, event string) int {
	n := 0
	for _, r := range rows {
		if r.Event == event {
			n++
		}
	}
	return n
}

// The bootstrap then the stream rebuild the source table exactly, with writes landing
// between the stamp and the read, deletes of rows the snapshot read and key updates.
func TestBootstrapThenStreamRebuildsTheTable(t *testing.T) {
	for _, kc := range keyCases {
		t.Run(kc.name, func(t *testing.T) { testBootstrapThenStream(t, testlake.Local, kc) })
	}
}

// The same on S3 (gofakes3) with the DynamoDB log store (dynalite).
func TestBootstrapThenStreamOnEmulators(t *testing.T) {
	for _, kc := range keyCases[:2] {
		t.Run(kc.name, func(t *testing.T) { testBootstrapThenStream(t, testlake.AWS, kc) })
	}
}

func testBootstrapThenStream(t *testing.T, backend testlake.Backend, kc keyCase) {
	e := newEnvOn(t, backend, kc, 60)
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("t", kc.key(1), cdcsim.Row{"v": "changed before"}) })
	// Commits between the stamp and the read: an update, a delete, an insert.
	tx := e.db.Begin()
	if err := tx.Update("t", kc.key(2), cdcsim.Row{"v": "during"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete("t", kc.key(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Insert("t", kc.row(1000)); err != nil {
		t.Fatal(err)
	}
	if kc.index != nil { // a key update: the row moves to another key
		if err := tx.Update("t", kc.key(6), kc.row(5000)); err != nil {
			t.Fatal(err)
		}
	}
	e.db.CommitBeforeRead(tx)

	off, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	if off.LSN.IsZero() {
		t.Fatal("no offset")
	}
	// After the snapshot: a delete of a row it read, a key update, an insert.
	e.exec(func(tx *cdcsim.Txn) error { return tx.Delete("t", kc.key(4)) })
	e.exec(func(tx *cdcsim.Txn) error {
		if err := tx.Delete("t", kc.key(5)); err != nil {
			return err
		}
		_, err := tx.Insert("t", kc.row(2000))
		return err
	})
	e.exec(func(tx *cdcsim.Txn) error { _, err := tx.Insert("t", kc.row(3000)); return err })
	if kc.index != nil {
		e.exec(func(tx *cdcsim.Txn) error { return tx.Update("t", kc.key(7), kc.row(6000)) })
	}
	e.stream()
	e.check()

	// A rerun of the whole flow reads nothing and writes no second row.
	reads := e.db.Calls("ReadTable")
	if _, err := e.run(); err != nil {
		t.Fatal(err)
	}
	if e.db.Calls("ReadTable") != reads {
		t.Fatalf("the rerun read the table")
	}
	fr := e.factsRows()
	if count(fr, facts.EventBootstrap) != 1 || count(fr, facts.EventSnapshotOpen) != 1 {
		t.Fatalf("bootstrap rows %d, open rows %d", count(fr, facts.EventBootstrap), count(fr, facts.EventSnapshotOpen))
	}
	e.check()
}

func TestBootstrapWithStartingLsnIsConfigError(t *testing.T) {
	spec := &config.Spec{AppID: "a", Bootstrap: true, Source: config.Source{DSN: "sqlserver://h?database=d", CaptureInstance: "dbo_t"},
		Bronze: "/tmp/b", Checkpoint: "/tmp/c", FactsTable: "/tmp/f", Options: config.Options{StartingLsn: "0x00000020000000100001"}}
	spec.Defaults()
	err := spec.Validate()
	if _, ok := err.(*config.ConfigError); !ok {
		t.Fatalf("err %v, want *config.ConfigError", err)
	}
}

// A rerun whose spec names another capture instance of the table, in another case, finds
// the snapshot taken under the first one and reads nothing (docs/snapshots.md "How it
// behaves": any capture instance of the table, names matched ignoring case).
func TestOpenUnderAnotherCaptureInstanceReadsNothing(t *testing.T) {
	e := newEnv(t, keyCases[0], 30)
	ctx := context.Background()
	first, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	e.db.Advance(time.Second)
	if _, err := e.db.EnableCapture("t", cdcsim.CaptureOptions{Name: "DBO_T_V2"}); err != nil {
		t.Fatal(err)
	}
	e.db.Idle()
	reads := e.db.Calls("ReadTable")
	for _, name := range []string{"DBO_T", "dbo_t_v2"} {
		e.spec.Source.CaptureInstance = name
		res, err := snapshot.Open(ctx, e.deps())
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != snapshot.Found || res.Snapshot != first {
			t.Fatalf("open as %s: %+v, want found %+v", name, res, first)
		}
	}
	if e.db.Calls("ReadTable") != reads {
		t.Fatal("open read the table")
	}
}

// A snapshot left open by a killed run (snapshot_open written, nothing committed) does
// not block a full rerun, which reads the table and closes it with its bootstrap row.
func TestKilledRunThenFullRerunOnDelta(t *testing.T) {
	e := newEnv(t, keyCases[0], 30)
	ctx := context.Background()
	open, err := snapshot.Open(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Plan(ctx, e.deps(), open.Snapshot); err != nil {
		t.Fatal(err)
	}
	// Killed. Capture moves on before the rerun, which stamps a new L.
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("t", []any{int64(1)}, cdcsim.Row{"v": "later"}) })
	off, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	if !open.Snapshot.LSN.Less(off.LSN) {
		t.Fatalf("rerun stamp %s not after the killed run's %s", off.LSN, open.Snapshot.LSN)
	}
	fr := e.factsRows()
	if count(fr, facts.EventSnapshotOpen) != 2 || count(fr, facts.EventBootstrap) != 1 {
		t.Fatalf("open rows %d, bootstrap rows %d", count(fr, facts.EventSnapshotOpen), count(fr, facts.EventBootstrap))
	}
	e.stream()
	e.check()
}

// Export writes the current rows in the stream's schema, stamped with the LSN it
// returns (or the one given), and touches no table.
func TestExport(t *testing.T) {
	e := newEnv(t, keyCases[1], 40)
	ctx := context.Background()
	given := lsn.MustParse("0x00000001000000010001")
	for _, l := range []lsn.LSN{lsn.Zero, given} {
		dst, err := localstore.New(t.TempDir()) // an export refuses a target holding files
		if err != nil {
			t.Fatal(err)
		}
		res, err := snapshot.Export(ctx, e.deps(), dst, l)
		if err != nil {
			t.Fatal(err)
		}
		if l == given && res.Snapshot.LSN != given {
			t.Fatalf("stamp %s, want the given %s", res.Snapshot.LSN, given)
		}
		var rows int64
		for _, f := range res.Files {
			it, err := parquetio.ReadFile(ctx, dst, f.Path, []string{bronze.ColStartLSN, bronze.ColOperation, "a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			for {
				rec, err := it.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < int(rec.NumRows()); i++ {
					if got := rec.Column(0).(*array.String).Value(i); got != res.Snapshot.LSN.String() {
						t.Fatalf("_start_lsn %s, want %s", got, res.Snapshot.LSN)
					}
				}
				rows += rec.NumRows()
				rec.Release()
			}
			it.Close()
		}
		if rows != 40 || res.Rows != 40 {
			t.Fatalf("exported %d rows (reported %d), want 40", rows, res.Rows)
		}
		m := readExportManifest(t, dst)
		if m == nil || m.Format != snapshot.ExportManifestFormat || m.Version != 1 || m.Snapshot != res.Snapshot ||
			m.Rows != 40 || len(m.Files) != len(res.Files) || m.CaptureInstance == "" {
			t.Fatalf("manifest %+v, want the export's stamp, 40 rows and its %d files", m, len(res.Files))
		}
		for i, f := range m.Files {
			if f.Path != res.Files[i].Path || f.Size != res.Files[i].Size || f.Rows <= 0 {
				t.Fatalf("manifest file %d %+v, want %s", i, f, res.Files[i].Path)
			}
		}
	}
	if snap, _ := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx); snap.Version() != -1 {
		t.Fatal("export wrote bronze")
	}
}

// An open chunked snapshot of the stream in the facts table holds the mode: a full
// snapshot refuses to open (docs/reference/original-library.md §9.5).
func TestOpenChunkedSnapshotHoldsTheMode(t *testing.T) {
	e := newEnv(t, keyCases[0], 10)
	ctx := context.Background()
	s := "0x00000001000000010001"
	row := facts.Row{AppID: e.spec.AppID, Event: facts.EventSnapshotOpen, MinLSN: s, MaxLSN: s, EndLSN: s,
		Detail: `{"mode":"chunked","kind":"resnapshot","generation":2}`, Target: e.spec.Bronze, WrittenAt: time.Now().UTC()}
	if _, err := facts.Append(ctx, e.lake.RawTable(e.spec.FactsTable), facts.TxnSnapshots(e.spec.AppID), 2, []facts.Row{row}, parquetio.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := snapshot.Open(ctx, e.deps())
	var ml *snapshot.ModeLockError
	if !errors.As(err, &ml) || ml.Snapshot.String() != s || ml.Mode != "chunked" || ml.Generation != 2 {
		t.Fatalf("open: %v, want *ModeLockError for %s generation 2", err, s)
	}
	// The error names the snapshot's LSN and generation, and how to free the mode
	// (docs/reference/original-library.md §9.5).
	for _, want := range []string{s, "generation 2", "backfill"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if rows := e.factsRows(); len(rows) != 1 {
		t.Errorf("a refused open wrote facts rows: %+v", rows)
	}
}

// The spec's snapshotLsn stamps an export as it stamps a snapshot (docs/spec.md
// snapshotLsn: an LSN recorded before the read); a stamp above the source's max_lsn
// was not recorded before the read and is refused, by name, for export and open alike.
func TestGivenStampFromSpecAndAheadRefused(t *testing.T) {
	e := newEnv(t, keyCases[0], 12)
	ctx := context.Background()
	// Each export gets its own empty target (a target holding files is refused).
	dst := func() storage.Store {
		d, err := localstore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first, err := snapshot.Export(ctx, e.deps(), dst(), lsn.Zero)
	if err != nil {
		t.Fatal(err)
	}
	recorded := first.Snapshot.LSN
	e.db.Advance(time.Second)
	if _, err := e.db.Exec(func(tx *cdcsim.Txn) error { _, err := tx.Insert("t", keyCases[0].row(13)); return err }); err != nil {
		t.Fatal(err)
	}
	e.spec.Options.SnapshotLsn = recorded.String() // recorded before this export's read; max_lsn has moved since
	res, err := snapshot.Export(ctx, e.deps(), dst(), lsn.Zero)
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot.LSN != recorded || res.Rows != 13 {
		t.Fatalf("export %+v (%d rows), want the spec's stamp %s and 13 rows", res.Snapshot, res.Rows, recorded)
	}
	ahead := lsn.MustParse("0x7FFFFFFF000000010001")
	e.spec.Options.SnapshotLsn = ahead.String()
	_, err = snapshot.Export(ctx, e.deps(), dst(), lsn.Zero)
	var sa *snapshot.StampAheadError
	if !errors.As(err, &sa) || sa.Given != ahead {
		t.Fatalf("export with a stamp ahead of max_lsn: %v", err)
	}
	_, err = snapshot.Open(ctx, e.deps())
	if !errors.As(err, &sa) {
		t.Fatalf("open with a stamp ahead of max_lsn: %v", err)
	}
	if rows := e.factsRows(); len(rows) != 0 {
		t.Fatalf("a refused open wrote facts rows: %+v", rows)
	}
}

// A second export into the same target would add its files beside the first and double
// the rows for whoever reads the folder: a target that already holds files is refused, by
// type, before anything is read or written.
func TestExportRefusesNonEmptyTarget(t *testing.T) {
	e := newEnv(t, keyCases[0], 5)
	ctx := context.Background()
	dir := t.TempDir()
	dst, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	first, err := snapshot.Export(ctx, e.deps(), dst, lsn.Zero)
	if err != nil || len(first.Files) == 0 {
		t.Fatalf("first export: %v, %d files", err, len(first.Files))
	}
	// The start marker stays, naming the export's stamp (decisions/0028).
	var started snapshot.ExportStarted
	if ok, err := storage.GetJSON(ctx, dst, snapshot.ExportStartedMarker, &started); err != nil || !ok ||
		started.Format != snapshot.ExportManifestFormat || started.Snapshot != first.Snapshot || started.StartedAt.IsZero() {
		t.Fatalf("%s: %+v (%v, %v), want the export's stamp %v", snapshot.ExportStartedMarker, started, ok, err, first.Snapshot)
	}
	_, err = snapshot.Export(ctx, e.deps(), dst, lsn.Zero)
	var ne *snapshot.TargetNotEmptyError
	if !errors.As(err, &ne) || ne.URL != dst.URL() || ne.Key == "" || !ne.Finished {
		t.Fatalf("second export: %v, want *TargetNotEmptyError naming %s, a key and the finished export", err, dst.URL())
	}
	for _, want := range []string{dst.URL(), "empty", "delete", "a finished export"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	var files []string
	for obj, err := range dst.List(ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, obj.Key)
	}
	if len(files) != len(first.Files)+2 { // and the two markers
		t.Fatalf("target holds %v after the refused export, want the first's %d files and %s, %s", files, len(first.Files), snapshot.ExportStartedMarker, snapshot.ExportMarker)
	}
}
