package seed_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// tSpec is dbo.t: an int key and a text.
var tSpec = cdcsim.TableSpec{Name: "t", Key: []string{"id"}, Columns: []source.Column{
	{Name: "id", DataType: "int"}, {Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true}}}

// tEnv is dbo.t with rows 1..n, each committed a second after the last.
func tEnv(t *testing.T, n int, cfg cdcsim.Config) *env {
	t.Helper()
	e := newEnv(t, testlake.Local, tSpec, cfg)
	for i := 1; i <= n; i++ {
		e.insert(i)
	}
	return e
}

// insert commits row i of dbo.t and returns its commit LSN.
func (e *env) insert(i int) lsn.LSN {
	return e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("t", cdcsim.Row{"id": int64(i), "v": fmt.Sprint("v", i)})
		return err
	})
}

// copyNow exports dbo.t as it is now into the lake folder name, one Parquet file, ID and
// V in upper case, and returns its URL.
func (e *env) copyNow(name string) string {
	e.t.Helper()
	url := e.lake.URL(name)
	rows := e.readTable()
	defer rows.Close()
	var recs []arrow.RecordBatch
	for {
		rec, err := rows.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			e.t.Fatal(err)
		}
		recs = append(recs, export(e.t, rec, map[string]userColumn{"id": {name: "ID", typ: arrow.PrimitiveTypes.Int64}, "v": {name: "V"}}))
		rec.Release()
	}
	e.writeParquet(url, "part-0.parquet", false, recs...)
	return url
}

// bronzeVersion is bronze's version (-1 before its first commit).
func (e *env) bronzeVersion() int64 {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return snap.Version()
}

// A time as_of maps to the last commit at or before it, to the second; a rerun with the
// same as_of returns the seed and writes nothing, also after a later snapshot was
// appended, and after CDC cleanup passed the time (the newest snapshot at or before it is
// the seed).
func TestRerunReturnsTheSeed(t *testing.T) {
	e := tEnv(t, 5, cdcsim.Config{})
	l3 := lsn.Zero
	for i := 6; i <= 8; i++ {
		l := e.insert(i)
		if i == 7 {
			l3 = l
		}
	}
	// as_of half a second after row 7's commit: L is that commit.
	ts, _, _ := e.db.CommitTime(context.Background(), l3)
	asOf := ts.Add(500 * time.Millisecond).Format(time.RFC3339Nano)
	url := e.copyNow("copy")
	first := e.mustRun(seed.Request{Copy: url, AsOf: asOf})
	if first.Offset.LSN != l3 || first.Plan.Status != seed.Planned || *first.Commit.Rows != 8 {
		t.Fatalf("first seed %+v, want 8 rows at %s", first, l3)
	}
	v := e.bronzeVersion()
	again := e.mustRun(seed.Request{Copy: url, AsOf: asOf})
	if again.Plan.Status != seed.Found || again.Offset != first.Offset || e.bronzeVersion() != v || again.Commit.Rows == nil || *again.Commit.Rows != 8 {
		t.Fatalf("rerun %+v, bronze version %d (was %d)", again, e.bronzeVersion(), v)
	}
	// A later snapshot appended beside it (a manual re-snapshot): the rerun still finds the seed.
	e.insert(9)
	snapDeps := snapshot.Deps{Spec: e.spec, Source: e.db, Bronze: e.lake.RawTable(e.spec.Bronze), Staging: e.lake.RawStore(e.spec.Checkpoint),
		Options: snapshot.Options{Standalone: true, Resnapshot: true, Now: e.db.Now}}
	later, err := snapshot.Run(context.Background(), snapDeps)
	if err != nil || !first.Offset.LSN.Less(later.LSN) {
		t.Fatalf("later snapshot %v %v", later, err)
	}
	v = e.bronzeVersion()
	again = e.mustRun(seed.Request{Copy: url, AsOf: asOf})
	if again.Plan.Status != seed.Found || again.Offset != first.Offset || e.bronzeVersion() != v {
		t.Fatalf("rerun after a later snapshot: %+v", again)
	}
	// Cleanup removes the mapping rows around as_of: the time maps to nothing, and the
	// newest whole snapshot at or before it is the seed.
	for i := 10; i <= 12; i++ {
		e.insert(i)
	}
	if err := e.db.Cleanup("dbo_t", e.maxLSN()); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := e.db.LSNAtOrBefore(context.Background(), ts); ok {
		t.Fatal("cleanup left the mapping row of as_of")
	}
	again = e.mustRun(seed.Request{Copy: url, AsOf: asOf})
	if again.Plan.Status != seed.Found || again.Offset.LSN != first.Offset.LSN || e.bronzeVersion() != v {
		t.Fatalf("rerun after cleanup: %+v", again)
	}
	if fr := e.factsRows(); count(fr, facts.EventBootstrap) != 1 {
		t.Fatalf("bootstrap rows %d", count(fr, facts.EventBootstrap))
	}
}

// CDC no longer holding the changes right after as_of is a DataLossError and nothing is
// written: cleanup passed an LSN as_of, or no commit is as old as a time as_of.
func TestPurgedAsOfIsDataLoss(t *testing.T) {
	e := tEnv(t, 6, cdcsim.Config{})
	old := e.maxLSN()
	oldTime := e.db.Now()
	url := e.copyNow("copy")
	for i := 7; i <= 9; i++ {
		e.insert(i)
	}
	if err := e.db.Cleanup("dbo_t", e.maxLSN()); err != nil {
		t.Fatal(err)
	}
	var dl *seed.DataLossError
	_, err := e.run(seed.Request{Copy: url, AsOf: old.String()})
	if !errors.As(err, &dl) || dl.L != old || dl.MinLSN.IsZero() || !strings.Contains(err.Error(), "older than the CDC retention") {
		t.Fatalf("LSN as_of behind cleanup: %v, want *DataLossError at %s", err, old)
	}
	_, err = e.run(seed.Request{Copy: url, AsOf: oldTime.Format(time.RFC3339)})
	if !errors.As(err, &dl) || !dl.L.IsZero() {
		t.Fatalf("time as_of behind cleanup: %v, want *DataLossError without an LSN", err)
	}
	// No commit that old at all: before CDC was enabled.
	_, err = e.run(seed.Request{Copy: url, AsOf: "2001-01-01T00:00:00Z"})
	if !errors.As(err, &dl) {
		t.Fatalf("as_of before any commit: %v", err)
	}
	if e.bronzeVersion() != -1 || len(e.factsRows()) != 0 {
		t.Fatal("a refused seed wrote something")
	}
}

// A request without a copy is a ConfigError on "copy" before anything is asked of SQL
// Server (docs/handlers.md: copy and as_of are required), not whatever the as_of check
// finds first: with an as_of behind cleanup it was a DataLossError about the copy's age.
func TestMissingCopyIsAConfigErrorFirst(t *testing.T) {
	e := tEnv(t, 3, cdcsim.Config{})
	for _, asOf := range []string{"2001-01-01T00:00:00Z", e.maxLSN().String()} {
		_, err := e.run(seed.Request{AsOf: asOf})
		var ce *config.ConfigError
		if !errors.As(err, &ce) || !ce.Has("copy") {
			t.Errorf("as_of %s, no copy: %v, want a ConfigError on copy", asOf, err)
		}
	}
	if e.bronzeVersion() != -1 || len(e.factsRows()) != 0 {
		t.Fatal("a refused seed wrote something")
	}
}

// Another snapshot of the table in bronze (a seed at another LSN, a chunked snapshot's
// waves) refuses the seed; reseed seeds a newer copy over an older one, for a new app_id
// and checkpoint, and the new stream rebuilds the table from it.
func TestOtherSnapshotAndReseed(t *testing.T) {
	e := tEnv(t, 4, cdcsim.Config{})
	l1 := e.maxLSN()
	url1 := e.copyNow("copy1")
	e.mustRun(seed.Request{Copy: url1, AsOf: l1.String()})
	for i := 5; i <= 7; i++ {
		e.insert(i)
	}
	e.exec(func(tx *cdcsim.Txn) error { return tx.Delete("t", []any{int64(2)}) })
	l2 := e.maxLSN()
	url2 := e.copyNow("copy2")
	var ex *seed.SnapshotExistsError
	if _, err := e.run(seed.Request{Copy: url2, AsOf: l2.String()}); !errors.As(err, &ex) || ex.Existing != l1 || ex.Seed != l2 {
		t.Fatalf("second seed: %v, want *SnapshotExistsError", err)
	}
	// reseed with the stream's own app_id and checkpoint: refused, they would resume the old stream.
	var re *seed.ReseedError
	if _, err := e.run(seed.Request{Copy: url2, AsOf: l2.String(), Reseed: true}); !errors.As(err, &re) {
		t.Fatalf("reseed with the old app_id: %v, want *ReseedError", err)
	}
	// A new app_id and checkpoint: the newer copy is seeded.
	e.spec.AppID, e.spec.Checkpoint = "t-v2", e.lake.URL("checkpoint-v2")
	res := e.mustRun(seed.Request{Copy: url2, AsOf: l2.String(), Reseed: true})
	if res.Offset.LSN != l2 || *res.Commit.Rows != 6 {
		t.Fatalf("reseed %+v", res)
	}
	// An older copy cannot be reseeded over the newer.
	if _, err := e.run(seed.Request{Copy: url1, AsOf: l1.Prev().String(), Reseed: true}); !errors.As(err, &ex) || !ex.Reseed {
		t.Fatalf("reseed of an older copy: %v", err)
	}
	e.insert(8)
	e.stream()
	e.check()
}

// A chunked snapshot's rows in bronze refuse a seed too.
func TestChunkedSnapshotInBronzeRefusesSeed(t *testing.T) {
	e := tEnv(t, 3, cdcsim.Config{})
	ctx := context.Background()
	cols, _ := e.db.Columns("t")
	schema, err := bronze.Schema(cols)
	if err != nil {
		t.Fatal(err)
	}
	s := e.maxLSN()
	chunk := int32(0)
	rows := e.readTable()
	rec, err := rows.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := bronze.SnapshotRecord(schema, rec, bronze.SnapshotStamp{CaptureInstance: "dbo_t", LSN: s, Snapshot: s, Chunk: &chunk})
	rec.Release()
	rows.Close()
	if err != nil {
		t.Fatal(err)
	}
	bt := e.lake.RawTable(e.spec.Bronze)
	w := ingest.NewWriter(bt.Store(), schema, ingest.Options(parquetOpts))
	if err := w.Write(ctx, out); err != nil {
		t.Fatal(err)
	}
	out.Release()
	files, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Append(ctx, bt, nil, ingest.Commit{AppID: "t-v1#snap." + s.String(), Version: 0, Schema: schema, Files: files}); err != nil {
		t.Fatal(err)
	}
	e.insert(4)
	var ex *seed.SnapshotExistsError
	if _, err := e.run(seed.Request{Copy: e.copyNow("copy"), AsOf: e.maxLSN().String()}); !errors.As(err, &ex) || !ex.Chunked || ex.Existing != s {
		t.Fatalf("seed beside a chunked snapshot: %v", err)
	}
}

// The mode lock: an open snapshot of either mode refuses the seed; a full one stops
// holding the mode once cleanup passed its LSN.
func TestModeLockRefusesSeed(t *testing.T) {
	for _, mode := range []string{facts.ModeChunked, facts.ModeFull} {
		t.Run(mode, func(t *testing.T) {
			e := tEnv(t, 3, cdcsim.Config{})
			ctx := context.Background()
			s := e.maxLSN()
			r := facts.SnapshotRow(e.spec.AppID, e.spec.Bronze, facts.EventSnapshotOpen, lsn.Offset{LSN: s})
			r.Detail = facts.OpenDetail{Mode: mode, Kind: facts.KindBootstrap}.String()
			r.WrittenAt = e.db.Now()
			if _, err := facts.Append(ctx, e.lake.RawTable(e.spec.FactsTable), facts.TxnOpen(e.spec.AppID, s), 0, []facts.Row{r}, parquetOpts); err != nil {
				t.Fatal(err)
			}
			url := e.copyNow("copy")
			var ml *snapshot.ModeLockError
			if _, err := e.run(seed.Request{Copy: url, AsOf: s.String()}); !errors.As(err, &ml) || ml.Snapshot != s || ml.Mode != mode {
				t.Fatalf("seed beside an open %s snapshot: %v, want *ModeLockError", mode, err)
			}
			if mode == facts.ModeChunked {
				return
			}
			// Cleanup passes the full snapshot's LSN: it can never complete, the lock is gone.
			e.insert(4)
			e.insert(5)
			if err := e.db.Cleanup("dbo_t", e.maxLSN()); err != nil {
				t.Fatal(err)
			}
			res := e.mustRun(seed.Request{Copy: e.copyNow("copy2"), AsOf: e.maxLSN().String()})
			if res.Plan.Status != seed.Planned {
				t.Fatalf("seed after cleanup passed the open full snapshot: %+v", res)
			}
		})
	}
}

// Inside the hour before a daylight-saving fall-back, a time as_of maps an hour earlier:
// that hour's local times repeat, so a later commit may read earlier on SQL Server's
// clock. Earlier only replays: the seed and the stream still rebuild the table.
func TestAsOfInFallBackHourMapsAnHourEarlier(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	// 2026-11-01 02:00 EDT falls back to 01:00 EST, at 06:00 UTC.
	start := time.Date(2026, 11, 1, 3, 49, 59, 0, time.UTC) // newEnv takes a second
	e := newEnv(t, testlake.Local, tSpec, cdcsim.Config{Location: ny, Start: start})
	commits := map[string]lsn.LSN{} // by UTC hh:mm
	for i := 1; e.db.Now().Before(time.Date(2026, 11, 1, 7, 30, 0, 0, time.UTC)); i++ {
		e.db.Advance(10*time.Minute - time.Second)
		l := e.insert(i)
		commits[e.db.Now().Format("15:04")] = l
	}
	// 05:30 UTC is 01:30 EDT, in the hour the fall-back repeats: L is the commit at 04:30 UTC
	// (00:30 EDT), not the one at 05:30.
	asOf := "2026-11-01T05:30:00Z"
	e.db.Advance(time.Minute)
	res := e.mustRun(seed.Request{Copy: e.copyNow("copy"), AsOf: asOf})
	if res.Offset.LSN != commits["04:30"] {
		t.Fatalf("as_of %s mapped to %s, want the 04:30 UTC commit %s (05:30 is %s)", asOf, res.Offset.LSN, commits["04:30"], commits["05:30"])
	}
	if got := res.Offset.CommitTime().UTC().Format("15:04"); got != "04:30" {
		t.Fatalf("seed commit time %s", got)
	}
	// An as_of in the second pass (01:30 EST) is exact.
	if l, ok, _ := e.db.LSNAtOrBefore(context.Background(), time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC)); !ok || l != commits["06:30"] {
		t.Fatalf("second-pass as_of mapped to %s, want %s", l, commits["06:30"])
	}
	e.stream()
	e.check()
}

// A value that cannot be cast stops the seed with a CastError naming the file, the row
// group, the column and the value; nothing is committed and no bootstrap row written.
func TestValueThatCannotBeCastIsRefused(t *testing.T) {
	e := tEnv(t, 0, cdcsim.Config{})
	for i := 1; i <= 150; i++ {
		e.insert(i)
	}
	url := e.lake.URL("copy")
	ids := make([]int64, 150)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	ids[130] = 1 << 40 // too big for int
	rec := idRecord(t, ids)
	e.writeParquet(url, "part-0.parquet", false, rec)
	rec.Release()
	_, err := e.run(seed.Request{Copy: url, AsOf: e.maxLSN().String(), AllowMissingColumns: true})
	var ce *seed.CastError
	if !errors.As(err, &ce) {
		t.Fatalf("seed of a copy with an int overflow: %v, want *CastError", err)
	}
	// Row groups of 64 rows: row 130 is row 2 of row group 2.
	if ce.File != "part-0.parquet" || ce.RowGroup != 2 || ce.Row != 2 || ce.FileRow != 130 || ce.Column != "id" || ce.CopyColumn != "ID" ||
		ce.Value != "1099511627776" || !strings.Contains(ce.Reason, "out of range for int") {
		t.Fatalf("cast error %+v", ce)
	}
	for _, s := range []string{"part-0.parquet", "row group 2", "1099511627776", "id", "int"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("message %q lacks %q", err, s)
		}
	}
	if e.bronzeVersion() != -1 || len(e.factsRows()) != 0 {
		t.Fatal("a refused seed committed")
	}
}

// A captured column the copy lacks is a ConfigError naming it; with
// allow_missing_columns it is seeded as NULL.
func TestMissingColumn(t *testing.T) {
	e := tEnv(t, 3, cdcsim.Config{})
	url := e.lake.URL("copy")
	rec := idRecord(t, []int64{1, 2, 3})
	e.writeParquet(url, "ids.parquet", false, rec)
	rec.Release()
	_, err := e.run(seed.Request{Copy: url, AsOf: e.maxLSN().String()})
	var ce *config.ConfigError
	if !errors.As(err, &ce) || !ce.Has("copy") || !strings.Contains(err.Error(), "lacks the captured columns v") {
		t.Fatalf("copy without v: %v, want a ConfigError naming v", err)
	}
	res := e.mustRun(seed.Request{Copy: url, AsOf: e.maxLSN().String(), AllowMissingColumns: true})
	if *res.Commit.Rows != 3 {
		t.Fatalf("seed %+v", res)
	}
	nulls := 0
	e.scanBronze([]string{"v"}, func(rec arrow.RecordBatch) { nulls += rec.Column(0).NullN() }, nil)
	if nulls != 3 {
		t.Fatalf("%d NULL v, want 3", nulls)
	}
}

// A time as_of later than SQL Server's clock now (a mistyped year) is a ConfigError on
// as_of: it mapped to the newest commit, stamping the copy later than it was read, and
// the commits in between were never read. Up to the server's now it is taken.
func TestFutureAsOfIsAConfigError(t *testing.T) {
	e := tEnv(t, 3, cdcsim.Config{})
	url := e.copyNow("copy")
	now := e.db.Now()
	for _, asOf := range []string{"2030-01-01T00:00:00Z", now.Add(time.Second).Format(time.RFC3339Nano)} {
		_, err := e.run(seed.Request{Copy: url, AsOf: asOf})
		var ce *config.ConfigError
		if !errors.As(err, &ce) || !ce.Has("as_of") || !strings.Contains(err.Error(), "later than SQL Server's clock now") {
			t.Errorf("as_of %s with the server at %s: %v, want a ConfigError on as_of", asOf, now, err)
		}
	}
	if e.bronzeVersion() != -1 || len(e.factsRows()) != 0 {
		t.Fatal("a refused seed wrote something")
	}
	e.mustRun(seed.Request{Copy: url, AsOf: now.Format(time.RFC3339Nano)})
}

// A copy that is one file that is no Parquet file is refused with an error naming the
// file's full location, not only its folder (with the file's name said apart, the folder
// and the name were two pieces of a message the reader had to put together).
func TestBadSingleFileCopyNamesItsLocation(t *testing.T) {
	e := tEnv(t, 3, cdcsim.Config{})
	url := e.lake.URL("copies") + "/notpq.parquet"
	if err := e.lake.RawStore(url[:strings.LastIndex(url, "/")]).Put(context.Background(), "notpq.parquet",
		strings.NewReader("this is no parquet file"), 23); err != nil {
		t.Fatal(err)
	}
	_, err := e.run(seed.Request{Copy: url, AsOf: e.maxLSN().String()})
	if err == nil || !strings.Contains(err.Error(), url+":") {
		t.Fatalf("seed of %s: %v, want an error naming %s", url, err, url)
	}
	if e.bronzeVersion() != -1 {
		t.Fatal("a refused seed wrote bronze")
	}
}
