package snapshot_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// computedEnv is a table t(id int PK, v int, twice AS v * 2) with rows 1..n written before
// CDC was enabled, snapshotted into a local test lake.
func computedEnv(t *testing.T, n int, computed bool) *env {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 9})
	cols := []source.Column{{Name: "id", DataType: "int"}, {Name: "v", DataType: "int", Nullable: true},
		{Name: "twice", DataType: "int", Nullable: true, Computed: computed}}
	compute := map[string]func(cdcsim.Row) any{"twice": func(r cdcsim.Row) any {
		if v, ok := r["v"].(int64); ok {
			return v * 2
		}
		return nil
	}}
	if !computed {
		compute = nil
	}
	if err := db.CreateTable(cdcsim.TableSpec{Name: "t", Columns: cols, Key: []string{"id"}, Compute: compute}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(func(tx *cdcsim.Txn) error {
		for i := 1; i <= n; i++ {
			row := cdcsim.Row{"id": i, "v": i}
			if !computed {
				row["twice"] = 2 * i
			}
			if _, err := tx.Insert("t", row); err != nil {
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
	lake := testlake.New(t, testlake.Local)
	spec := &config.Spec{AppID: "t-v1", Bootstrap: true,
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_t"}}
	lake.Use(spec)
	spec.Defaults()
	spec.Options.NumPartitions = 2
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, spec: spec, lake: lake, kc: keyCases[0]}
}

func fieldNames(s *arrow.Schema) string {
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ",")
}

// One rule for computed columns on every path (docs/types.md "Computed columns";
// docs/decisions/0011-source-continuity-and-computed-columns.md): the bronze table a
// snapshot creates, the files an export writes, and the columns the stream appends all
// leave the computed column out, so no bronze row holds a value that the change rows
// (where SQL Server stores NULL) would then flip to NULL.
func TestComputedColumnsLeftOutOnEveryPath(t *testing.T) {
	ctx := context.Background()
	e := computedEnv(t, 12, true)
	source, err := e.db.Columns("t")
	if err != nil {
		t.Fatal(err)
	}
	if len(source) != 3 || !source[2].Computed {
		t.Fatalf("the simulated table lacks its computed column: %+v", source)
	}
	// Export.
	dst, err := localstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := snapshot.Export(ctx, e.deps(), dst, lsn.Zero)
	if err != nil || len(res.Files) == 0 || res.Rows != 12 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	for _, f := range res.Files {
		it, err := parquetio.ReadFile(ctx, dst, f.Path, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := it.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if names := fieldNames(rec.Schema()); strings.Contains(names, "twice") || !strings.Contains(names, ",v,") {
			t.Fatalf("export file %s has columns %s, want v and no computed twice", f.Path, names)
		}
		rec.Release()
		it.Close()
	}
	// Snapshot: the bronze table it creates.
	if _, err := e.run(); err != nil {
		t.Fatal(err)
	}
	bronzeNames := func() string {
		snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, err := snap.ArrowSchema()
		if err != nil {
			t.Fatal(err)
		}
		return fieldNames(s)
	}
	if names := bronzeNames(); strings.Contains(names, "twice") || !strings.Contains(names, ",v,") {
		t.Fatalf("bronze created by the snapshot has %s, want v and no computed twice", names)
	}
	// Stream: an update after the snapshot appends no computed column either.
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("t", []any{int64(3)}, cdcsim.Row{"v": 30}) })
	e.stream()
	if names := bronzeNames(); strings.Contains(names, "twice") {
		t.Fatalf("bronze after the stream has %s", names)
	}
	e.check()
}

// A computed column already in a bronze schema (a table written before this rule, here
// by a database where the column was a plain one) stays, and a new snapshot writes NULL in
// it, as the stream does, never the computed value.
func TestComputedColumnInExistingBronzeReadsNULL(t *testing.T) {
	ctx := context.Background()
	old := computedEnv(t, 4, false)
	if _, err := old.run(); err != nil {
		t.Fatal(err)
	}
	e := computedEnv(t, 4, true)
	e.lake, e.spec = old.lake, old.spec
	e.opts.Resnapshot = true
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("t", []any{int64(2)}, cdcsim.Row{"v": 20}) })
	l, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: []string{"_start_lsn", "twice"}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	values, nulls := 0, 0
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		starts, twice := rec.Column(0).(*array.String), rec.Column(1)
		for i := 0; i < int(rec.NumRows()); i++ {
			switch {
			case starts.Value(i) != l.LSN.String():
				values++ // the old database's snapshot, where twice was a plain column
			case twice.IsNull(i):
				nulls++
			default:
				t.Fatalf("the new snapshot wrote a value in computed column twice: %v", twice)
			}
		}
		rec.Release()
	}
	if values != 4 || nulls != 4 {
		t.Fatalf("rows of the old snapshot %d, NULL twice of the new one %d; want 4 and 4", values, nulls)
	}
}
