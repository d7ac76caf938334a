package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/reconcile"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// env is a simulated table under a workload and a silver table copied from it.
type env struct {
	t    *testing.T
	db   *cdcsim.DB
	gen  *workload.Generator
	lake *testlake.Lake
	def  workload.TableDef
	ci   string
	cols []source.Column
	n    int // silver tables written
}

func newEnv(t *testing.T, def workload.TableDef, rows int) *env {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 5, Start: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)})
	t.Cleanup(func() { db.Close() })
	gen := workload.New(db, workload.Config{Seed: 5, TxnSize: 3, Tables: []string{def.Spec.Name}})
	if err := gen.Create(def); err != nil {
		t.Fatal(err)
	}
	if err := gen.Load(def.Spec.Name, rows, 500); err != nil {
		t.Fatal(err)
	}
	if err := gen.Step(50); err != nil {
		t.Fatal(err)
	}
	ci := "dbo_" + def.Spec.Name
	cols, err := db.CapturedColumns(context.Background(), ci)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, gen: gen, lake: testlake.New(t, testlake.Local), def: def, ci: ci, cols: cols}
}

func (e *env) table() source.Table { return source.Table{Schema: "dbo", Name: e.def.Spec.Name} }

func (e *env) keys() []source.Column {
	var out []source.Column
	for _, k := range e.def.Spec.Key {
		i := slices.IndexFunc(e.cols, func(c source.Column) bool { return c.Name == k })
		out = append(out, e.cols[i])
	}
	return out
}

// silver copies the source table as it is now into a new Delta table with silver's
// columns (the captured columns, _start_lsn at the source's max LSN, _commit_ts NULL): a
// silver table in step with the source.
func (e *env) silver() *deltalog.Snapshot {
	e.t.Helper()
	ctx := context.Background()
	max, err := e.db.MaxLSN(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.db.ReadTable(ctx, source.TableRead{Table: e.table(), Columns: e.cols})
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	fields := append(slices.Clone(rows.Schema().Fields()),
		arrow.Field{Name: bronze.ColStartLSN, Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: bronze.ColCommitTS, Type: bronze.CommitTSType, Nullable: true})
	schema := arrow.NewSchema(fields, nil)
	e.n++
	tbl := e.lake.Table(e.lake.URL("silver" + strings.Repeat("x", e.n)))
	w := ingest.NewWriter(tbl.Store(), schema, parquetio.WriterOptions{})
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			e.t.Fatal(err)
		}
		n := int(rec.NumRows())
		lb := array.NewStringBuilder(memory.DefaultAllocator)
		tb := array.NewBuilder(memory.DefaultAllocator, bronze.CommitTSType)
		for range n {
			lb.Append(max.String())
			tb.AppendNull()
		}
		cols := append(slices.Clone(rec.Columns()), lb.NewArray(), tb.NewArray())
		out := array.NewRecordBatch(schema, cols, int64(n))
		if err := w.Write(ctx, out); err != nil {
			e.t.Fatal(err)
		}
		rec.Release()
	}
	files, err := w.Close(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := ingest.Append(ctx, tbl, snap, ingest.Commit{AppID: "silver-test", Version: 1, Schema: schema, Files: files})
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := res.Snapshot(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) run(silver *deltalog.Snapshot, sample float64, bucketRows int64) reconcile.Result {
	e.t.Helper()
	res, err := reconcile.Run(context.Background(), reconcile.Deps{Source: e.db, Silver: silver},
		reconcile.Options{Table: e.table(), Columns: e.cols, Keys: e.keys(), CaptureInstance: e.ci,
			Sample: sample, BucketRows: bucketRows, Seed: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// lose commits fn's changes to the source and then has cleanup purge them from the change
// table, so nothing in flight explains them: silver is simply wrong about those keys.
func (e *env) lose(fn func(tx *cdcsim.Txn) error) {
	e.t.Helper()
	if _, err := e.db.Exec(fn); err != nil {
		e.t.Fatal(err)
	}
	e.db.Advance(time.Second)
	mark := e.db.Idle()
	if err := e.db.Cleanup(e.ci, mark); err != nil {
		e.t.Fatal(err)
	}
}

func keyRows(res reconcile.Result) map[string]reconcile.Kind {
	out := map[string]reconcile.Kind{}
	for _, r := range res.Rows {
		if r.Scope == "key" {
			out[strings.Join(r.Key, ",")] = r.Kind
		}
	}
	return out
}

// A silver table in step with the source: every bucket MATCH, and tier 2 reading every
// bucket (sample 1) finds no key that differs.
func TestSyncedTableMatches(t *testing.T) {
	for _, def := range []workload.TableDef{workload.Orders(), workload.OrderLines(), workload.Customers()} {
		t.Run(def.Spec.Name, func(t *testing.T) {
			e := newEnv(t, def, 1200)
			bucketRows := int64(200)
			if def.Kind != workload.IntKey {
				bucketRows = 5000 // one bucket, read row by row only when it is this small
			}
			res := e.run(e.silver(), 1, bucketRows)
			if !res.OK() || res.Counts[reconcile.Match] == 0 || len(keyRows(res)) != 0 {
				t.Fatalf("counts %v, key rows %v", res.Counts, keyRows(res))
			}
			if def.Kind == workload.IntKey && res.Counts[reconcile.Match] < 5 {
				t.Errorf("an integer key of 1200 rows in buckets of 200 made %d buckets", res.Counts[reconcile.Match])
			}
			if res.Tier2Buckets != res.Counts[reconcile.Match] {
				t.Errorf("sample 1 read %d of %d buckets", res.Tier2Buckets, res.Counts[reconcile.Match])
			}
		})
	}
}

// A missing row, an extra row and a changed value that no change in flight explains are
// each found with its kind; the buckets holding the first two MISMATCH.
func TestPlantedDifferencesAreFound(t *testing.T) {
	e := newEnv(t, workload.Orders(), 1000)
	silver := e.silver()
	ids := func() []int64 {
		rows, _ := e.db.ReadTable(context.Background(), source.TableRead{Table: e.table(), Columns: e.keys()})
		var out []int64
		for {
			rec, err := rows.Next(context.Background())
			if err != nil {
				break
			}
			a := rec.Column(0).(*array.Int32)
			for i := range a.Len() {
				out = append(out, int64(a.Value(i)))
			}
			rec.Release()
		}
		slices.Sort(out)
		return out
	}()
	gone, changed := ids[10], ids[500]
	e.lose(func(tx *cdcsim.Txn) error {
		if err := tx.Delete("orders", []any{gone}); err != nil { // silver keeps it: MISSING_SOURCE
			return err
		}
		if _, err := tx.Insert("orders", cdcsim.Row{"id": int64(900_000), "status": "new"}); err != nil { // MISSING_TARGET
			return err
		}
		return tx.Update("orders", []any{changed}, cdcsim.Row{"status": "changed"}) // RECORD_DIFF
	})
	res := e.run(silver, 0, 200)
	got := keyRows(res)
	want := map[string]reconcile.Kind{
		itoa(gone): reconcile.MissingSource,
		"900000":   reconcile.MissingTarget,
	}
	if !maps.Equal(got, want) {
		t.Errorf("sample 0: key rows %v, want %v (a changed value hides in a matching bucket)", got, want)
	}
	if res.Counts[reconcile.Mismatch] != 2 || res.OK() {
		t.Errorf("sample 0: counts %v, want 2 MISMATCH buckets", res.Counts)
	}
	res = e.run(silver, 1, 200)
	want[itoa(changed)] = reconcile.RecordDiff
	if got := keyRows(res); !maps.Equal(got, want) {
		t.Errorf("sample 1: key rows %v, want %v", got, want)
	}
	for _, r := range res.Rows {
		if r.Kind == reconcile.RecordDiff && (strings.Join(r.Columns, ",") != "status" || r.TargetLSN == "") {
			t.Errorf("RECORD_DIFF %+v: want the status column named and silver's _start_lsn", r)
		}
	}
}

// Changes silver has not applied yet (still in the change table after silver's position)
// are IN_FLIGHT, never a mismatch.
func TestChangesInFlightAreNotMismatches(t *testing.T) {
	for _, def := range []workload.TableDef{workload.Orders(), workload.Customers()} {
		t.Run(def.Spec.Name, func(t *testing.T) {
			e := newEnv(t, def, 800)
			silver := e.silver()
			if err := e.gen.Step(40); err != nil {
				t.Fatal(err)
			}
			res := e.run(silver, 1, 100)
			if !res.OK() || res.Counts[reconcile.InFlight] == 0 {
				t.Fatalf("counts %v; want IN_FLIGHT and no mismatch", res.Counts)
			}
		})
	}
}

// Another key's table larger than BucketRows is cut into tiles of the server's key order;
// with sample 1 tier 2 reads every tile, each MATCH in a synced table, and together they
// hold every row once. With sample 0 and equal counts tier 2 reads nothing: no KeyTiles, no
// ranged read.
func TestOtherKeysSyncedTilesMatch(t *testing.T) {
	for _, def := range []workload.TableDef{workload.Customers(), workload.OrderLines()} {
		t.Run(def.Spec.Name, func(t *testing.T) {
			e := newEnv(t, def, 2000)
			silver := e.silver()
			res := e.run(silver, 1, 200)
			if res.Tiles < 5 || res.TilesSampled != res.Tiles || res.Tier2Buckets != res.Tiles {
				t.Fatalf("tiles %d, sampled %d, tier 2 buckets %d: want about 10, all read", res.Tiles, res.TilesSampled, res.Tier2Buckets)
			}
			var tiles, rows int64
			for _, r := range res.Rows {
				if r.Scope != "tile" {
					continue
				}
				tiles++
				rows += r.SourceRows
				if r.Kind != reconcile.Match || r.SourceRows != r.TargetRows || r.SourceRows == 0 || r.SourceRows > 400 {
					t.Errorf("tile %+v: want MATCH with equal counts of about 200", r)
				}
			}
			whole := res.Rows[0]
			if tiles != int64(res.Tiles) || rows != whole.SourceRows || len(keyRows(res)) != 0 || !res.OK() {
				t.Errorf("%d tile rows holding %d rows (table %d), key rows %v, counts %v", tiles, rows, whole.SourceRows, keyRows(res), res.Counts)
			}

			tilesBefore, readsBefore := e.db.Calls("KeyTiles"), e.db.Calls("ReadTable")
			res = e.run(silver, 0, 200)
			if n := e.db.Calls("KeyTiles") - tilesBefore; n != 0 {
				t.Errorf("sample 0 with equal counts called KeyTiles %d times", n)
			}
			if n := e.db.Calls("ReadTable") - readsBefore; n != 1 { // tier 1's count only
				t.Errorf("sample 0 with equal counts read the table %d times, want 1 (the count)", n)
			}
			if res.Tier2Buckets != 0 || res.TilesSampled != 0 || len(res.Rows) != 1 || res.Counts[reconcile.Match] != 1 {
				t.Errorf("sample 0: tier 2 buckets %d, tiles sampled %d, rows %+v", res.Tier2Buckets, res.TilesSampled, res.Rows)
			}
		})
	}
}

// Planted differences in a tiled table: a row silver lacks, one it still holds and a
// changed value are found by key in the tiles tier 2 reads. With equal counts only
// sampled tiles are read (sample 1: all); with counts that differ every tile is read
// even at sample 0. A partial sample reports no key it did not see differ.
func TestOtherKeysPlantedDifferencesInTiles(t *testing.T) {
	for _, tc := range []struct {
		def    workload.TableDef
		insert cdcsim.Row
		newKey string
		set    cdcsim.Row
		column string
		// insert2 makes the counts differ.
		insert2 cdcsim.Row
		newKey2 string
	}{
		{workload.Customers(), cdcsim.Row{"code": "ZZ-PLANTED", "name": "new"}, "ZZ-PLANTED", cdcsim.Row{"name": "changed"}, "name",
			cdcsim.Row{"code": "ZZ-PLANTED-2"}, "ZZ-PLANTED-2"},
		{workload.OrderLines(), cdcsim.Row{"order_id": int64(9_999_999), "line": int64(1), "sku": "new"}, "9999999,1", cdcsim.Row{"sku": "changed"}, "sku",
			cdcsim.Row{"order_id": int64(9_999_998), "line": int64(2)}, "9999998,2"},
	} {
		name := tc.def.Spec.Name
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, tc.def, 2000)
			silver := e.silver()
			gone, _, err := e.db.RandomKey(name, func(n int) int { return n / 3 })
			if err != nil {
				t.Fatal(err)
			}
			changed, _, err := e.db.RandomKey(name, func(n int) int { return 2 * n / 3 })
			if err != nil {
				t.Fatal(err)
			}
			text := func(k []any) string {
				s := make([]string, len(k))
				for i, v := range k {
					s[i] = fmt.Sprint(v)
				}
				return strings.Join(s, ",")
			}
			e.lose(func(tx *cdcsim.Txn) error {
				if err := tx.Delete(name, gone); err != nil { // silver keeps it: MISSING_SOURCE
					return err
				}
				if _, err := tx.Insert(name, tc.insert); err != nil { // MISSING_TARGET
					return err
				}
				return tx.Update(name, changed, tc.set) // RECORD_DIFF
			})
			want := map[string]reconcile.Kind{
				text(gone):    reconcile.MissingSource,
				tc.newKey:     reconcile.MissingTarget,
				text(changed): reconcile.RecordDiff,
			}
			res := e.run(silver, 1, 200)
			if got := keyRows(res); !maps.Equal(got, want) {
				t.Errorf("sample 1: key rows %v, want %v", got, want)
			}
			if res.Counts[reconcile.Match] != 1+res.Tiles-2 || res.Counts[reconcile.Mismatch] != 2 || res.OK() {
				t.Errorf("sample 1: counts %v over %d tiles: want the table MATCH (equal counts) and the 2 tiles of the new and the changed key MISMATCH", res.Counts, res.Tiles)
			}
			for _, r := range res.Rows {
				if r.Kind == reconcile.RecordDiff && (strings.Join(r.Columns, ",") != tc.column || r.TargetLSN == "") {
					t.Errorf("RECORD_DIFF %+v: want %s named and silver's _start_lsn", r, tc.column)
				}
			}

			res = e.run(silver, 0.5, 200)
			if res.TilesSampled == 0 || res.TilesSampled == res.Tiles {
				t.Errorf("sample 0.5 read %d of %d tiles", res.TilesSampled, res.Tiles)
			}
			for k, kind := range keyRows(res) {
				if want[k] != kind {
					t.Errorf("sample 0.5: key %s %s, want only planted keys", k, kind)
				}
			}

			e.lose(func(tx *cdcsim.Txn) error { _, err := tx.Insert(name, tc.insert2); return err })
			want[tc.newKey2] = reconcile.MissingTarget
			res = e.run(silver, 0, 200)
			if res.TilesSampled != res.Tiles || res.Rows[0].Kind != reconcile.Mismatch {
				t.Errorf("counts differ, sample 0: read %d of %d tiles, table %s; want every tile", res.TilesSampled, res.Tiles, res.Rows[0].Kind)
			}
			if got := keyRows(res); !maps.Equal(got, want) {
				t.Errorf("counts differ, sample 0: key rows %v, want %v", got, want)
			}
		})
	}
}

// A composite or string key's table is one bucket; a lost row is still found by key.
func TestOtherKeysFindALostRow(t *testing.T) {
	e := newEnv(t, workload.Customers(), 300)
	silver := e.silver()
	key, ok, err := e.db.RandomKey("customers", func(n int) int { return n / 2 })
	if err != nil || !ok {
		t.Fatal(err)
	}
	e.lose(func(tx *cdcsim.Txn) error { return tx.Delete("customers", key) })
	res := e.run(silver, 0, 1000)
	if res.Counts[reconcile.Mismatch] != 1 {
		t.Errorf("counts %v, want the one bucket MISMATCH", res.Counts)
	}
	if got := keyRows(res); len(got) != 1 || got[key[0].(string)] != reconcile.MissingSource {
		t.Errorf("key rows %v, want %v MISSING_SOURCE", got, key)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// The report table gets one commit per run, a row per bucket and per differing key,
// keys as JSON text and no other value; runs are numbered by their txn.
func TestReportTable(t *testing.T) {
	e := newEnv(t, workload.Orders(), 500)
	silver := e.silver()
	e.lose(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": int64(700_000), "customer": "secret-name"})
		return err
	})
	res := e.run(silver, 0, 100)
	tbl := e.lake.Table(e.lake.URL("report"))
	at := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for want := int64(1); want <= 2; want++ {
		run, err := reconcile.WriteReport(context.Background(), tbl, "orders", "", at, res)
		if err != nil || run != want {
			t.Fatalf("run %d, %v; want %d", run, err, want)
		}
	}
	// A run key already reported is its report: no third commit.
	other := e.lake.Table(e.lake.URL("report-keyed"))
	for range 2 {
		if run, err := reconcile.WriteReport(context.Background(), other, "orders", "2026-03-02T00:00:00Z", at, res); err != nil || run != 1 {
			t.Fatalf("keyed run %d, %v; want 1 twice", run, err)
		}
	}
	if run, counts, ok, err := reconcile.ReportedRun(context.Background(), other, "orders", "2026-03-02T00:00:00Z"); err != nil || !ok || run != 1 || counts[reconcile.MissingTarget] != 1 {
		t.Fatalf("ReportedRun = %d, %v, %v, %v", run, counts, ok, err)
	}
	if _, _, ok, err := reconcile.ReportedRun(context.Background(), other, "orders", "another"); err != nil || ok {
		t.Fatalf("ReportedRun of another key = %v, %v", ok, err)
	}
	if snap, err := other.Snapshot(context.Background()); err != nil || snap.Version() != 0 {
		t.Fatalf("keyed report table at version %d, %v; want one commit", snap.Version(), err)
	}
	snap, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	it, err := snap.Scan(context.Background(), deltalog.ScanOptions{Columns: []string{"run_id", "kind", "key", "source_rows", "columns"}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	rows, keyRows := 0, 0
	for {
		rec, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			rows++
			for c := range int(rec.NumCols()) {
				if strings.Contains(rec.Column(c).ValueStr(i), "secret-name") {
					t.Fatalf("the report holds a row's value: %v", rec)
				}
			}
			if k := rec.Column(2); k.IsValid(i) {
				keyRows++
				if k.ValueStr(i) != `["700000"]` || rec.Column(1).ValueStr(i) != "MISSING_TARGET" {
					t.Errorf("key row %s %s", rec.Column(1).ValueStr(i), k.ValueStr(i))
				}
			}
		}
		rec.Release()
	}
	if rows != 2*len(res.Rows) || keyRows != 2 {
		t.Errorf("%d rows (%d key rows) after two runs of %d", rows, keyRows, len(res.Rows))
	}
}

// The job resolves the spec's capture instance, columns and key, reads silver at its
// latest version and appends the report; a table found in step is all MATCH.
func TestJobFromSpec(t *testing.T) {
	e := newEnv(t, workload.Orders(), 400)
	e.silver()
	spec := &config.Spec{AppID: "orders", Source: config.Source{CaptureInstance: "DBO_ORDERS"}}
	spec.Defaults()
	job := reconcile.Job{Spec: spec, Source: e.db, Silver: e.lake.Table(e.lake.URL("silverx")),
		Report: e.lake.Table(e.lake.URL("report")), BucketRows: 100, Sample: 1}
	res, err := job.Run(context.Background())
	if err != nil || !res.OK() || res.Run != 1 || res.Counts[reconcile.Match] < 4 {
		t.Fatalf("%+v %v", res.Counts, err)
	}
	spec.Source.CaptureInstance = "dbo_nothing"
	if _, err := job.Run(context.Background()); err == nil {
		t.Error("an unknown capture instance ran")
	}
	job.Spec.Source.CaptureInstance, job.Keys = "dbo_orders", []string{"no_such_column"}
	var ce *config.ConfigError
	if _, err := job.Run(context.Background()); !errors.As(err, &ce) || !strings.Contains(err.Error(), "snapshotKeys") {
		t.Errorf("a key that is not a column: %v", err)
	}
	// Settings that cannot work say so as reconcile's, not "invalid table spec" of a spec
	// that is fine (a silver table not applied yet; keys a flag or the spec gave).
	job.Keys, job.Silver = nil, e.lake.Table(e.lake.URL("never-applied"))
	if _, err := job.Run(context.Background()); !errors.As(err, &ce) ||
		!strings.HasPrefix(err.Error(), "invalid reconcile settings: silver: the silver table does not exist yet") {
		t.Errorf("a silver table not applied yet: %v", err)
	}
}

// A date key is bucketed by its days since 1970-01-01 on both sides (dates before 1970
// included): a synced table is all MATCH in several buckets whose bounds are dates; a
// row moved to the next day in its bucket (same count, another key sum) makes that bucket
// MISMATCH even when tier 2 samples nothing, and the keys show as MISSING_SOURCE and
// MISSING_TARGET.
func TestDateKeyBucketsCountAndSumDays(t *testing.T) {
	ctx := context.Background()
	db := cdcsim.New(cdcsim.Config{Seed: 3, Start: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)})
	t.Cleanup(func() { db.Close() })
	spec := cdcsim.TableSpec{Name: "days", Key: []string{"day"}, Columns: []source.Column{
		{Name: "day", DataType: "date"},
		{Name: "v", DataType: "int", Nullable: true},
	}}
	if err := db.CreateTable(spec); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("days", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	first := time.Date(1969, 6, 1, 0, 0, 0, 0, time.UTC)
	day := func(i int) time.Time { return first.AddDate(0, 0, 2*i) } // every other day
	if _, err := db.Exec(func(tx *cdcsim.Txn) error {
		for i := range 600 {
			if _, err := tx.Insert("days", cdcsim.Row{"day": day(i), "v": int64(i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Advance(time.Second)
	db.Idle()
	cols, err := db.CapturedColumns(ctx, "dbo_days")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, lake: testlake.New(t, testlake.Local), def: workload.TableDef{Spec: spec}, ci: "dbo_days", cols: cols}
	silver := e.silver()
	res := e.run(silver, 1, 100)
	buckets := 0
	for _, r := range res.Rows {
		if r.Scope == "bucket" {
			buckets++
			if _, err := time.Parse(time.DateOnly, r.Lo); err != nil || r.Kind != reconcile.Match {
				t.Errorf("bucket %+v: want MATCH with date bounds", r)
			}
		}
	}
	if !res.OK() || buckets < 5 || len(keyRows(res)) != 0 {
		t.Fatalf("synced: %d buckets, counts %v, key rows %v", buckets, res.Counts, keyRows(res))
	}
	// 1969-06-01 + 2*300 days moves one day later: the same bucket, count unchanged.
	moved := day(300)
	e.lose(func(tx *cdcsim.Txn) error {
		if err := tx.Delete("days", []any{moved}); err != nil {
			return err
		}
		_, err := tx.Insert("days", cdcsim.Row{"day": moved.AddDate(0, 0, 1), "v": int64(300)})
		return err
	})
	res = e.run(silver, 0, 100)
	var mismatched []reconcile.Row
	for _, r := range res.Rows {
		if r.Scope == "bucket" && r.Kind == reconcile.Mismatch {
			mismatched = append(mismatched, r)
		}
	}
	if len(mismatched) != 1 || mismatched[0].SourceRows != mismatched[0].TargetRows {
		t.Fatalf("mismatched buckets %+v (counts %v): want one, counts equal, key sums not", mismatched, res.Counts)
	}
	want := map[string]reconcile.Kind{
		moved.Format(time.DateOnly):                  reconcile.MissingSource,
		moved.AddDate(0, 0, 1).Format(time.DateOnly): reconcile.MissingTarget,
	}
	if got := keyRows(res); !maps.Equal(got, want) {
		t.Fatalf("key rows %v, want %v", got, want)
	}
}

// A failing KeyTiles or tile read fails the run with the source's typed error (a rerun
// compares again: reconcile writes nothing before its report), and the next run matches.
func TestOtherKeysTileFaults(t *testing.T) {
	e := newEnv(t, workload.Customers(), 1000)
	silver := e.silver()
	for _, f := range []cdcsim.Fault{
		{Method: "KeyTiles", Kind: cdcsim.FaultTransient},
		{Method: "ReadTable", Call: 3, Kind: cdcsim.FaultTransient}, // the count, tile 1, tile 2
		{Method: "ReadTable", Call: 2, Kind: cdcsim.FaultLockTimeout},
	} {
		e.db.Inject(f)
		_, err := reconcile.Run(context.Background(), reconcile.Deps{Source: e.db, Silver: silver},
			reconcile.Options{Table: e.table(), Columns: e.cols, Keys: e.keys(), CaptureInstance: e.ci, Sample: 1, BucketRows: 200, Seed: 1})
		var transient *source.TransientError
		var lock *source.LockTimeoutError
		if !errors.As(err, &transient) && !errors.As(err, &lock) {
			t.Errorf("fault %+v: err %v, want the source's typed error", f, err)
		}
		if res := e.run(silver, 1, 200); !res.OK() || res.TilesSampled != res.Tiles || res.Tiles < 3 {
			t.Errorf("rerun after %+v: counts %v, %d of %d tiles", f, res.Counts, res.TilesSampled, res.Tiles)
		}
	}
}

// Silver applied past what the source holds now (the database restored to a backup, failed
// over with data loss, or the DSN names another database): an *LSNRewoundError naming
// silver's position, not a report whose lost changes all read IN_FLIGHT and OK. A silver
// table merely ahead of the max_lsn read first (the stream moved on meanwhile) is not that.
func TestSilverAheadOfARestoredSourceIsRefused(t *testing.T) {
	e := newEnv(t, workload.Orders(), 400)
	b, err := e.db.Backup()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.gen.Step(40); err != nil {
		t.Fatal(err)
	}
	silver := e.silver()
	if res := e.run(silver, 1, 100); !res.OK() {
		t.Fatalf("before the restore: counts %v", res.Counts)
	}
	if err := e.db.Restore(b); err != nil {
		t.Fatal(err)
	}
	_, err = reconcile.Run(context.Background(), reconcile.Deps{Source: e.db, Silver: silver},
		reconcile.Options{Table: e.table(), Columns: e.cols, Keys: e.keys(), CaptureInstance: e.ci, Sample: 1, BucketRows: 100, Seed: 1})
	var rw *source.LSNRewoundError
	if !errors.As(err, &rw) || rw.RecordedBy != source.RecordedBySilverPosition || !strings.Contains(err.Error(), "silver's applied LSN") {
		t.Fatalf("silver ahead of a restored source: %v, want *source.LSNRewoundError on silver's applied LSN", err)
	}
}
