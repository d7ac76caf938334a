package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/reconcile"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// chunkedLake is a table bootstrapped by a chunked snapshot of chunk_rows 100 (the stream
// opens it, waves of two chunks read it beside a workload), streamed, and a silver table in
// step with the source.
type chunkedLake struct {
	db    *cdcsim.DB
	lake  *testlake.Lake
	spec  *config.Spec
	url   string // silver
	plans int    // chunks planned
}

// chunkedSource is a cdcsim orders table of rows rows loaded before CDC, whose spec
// bootstraps it by a chunked snapshot of chunkRows-row chunks, numPartitions per wave, on
// a local lake.
type chunkedSource struct {
	t    *testing.T
	db   *cdcsim.DB
	gen  *workload.Generator
	def  workload.TableDef
	lake *testlake.Lake
	spec *config.Spec
}

func newChunkedSource(t *testing.T, seed uint64, start time.Time, rows int, chunkRows int64, numPartitions int) *chunkedSource {
	t.Helper()
	return newChunkedSourceOf(t, workload.Orders(), seed, start, rows, chunkRows, numPartitions)
}

// newChunkedSourceOf is newChunkedSource for another workload table.
func newChunkedSourceOf(t *testing.T, def workload.TableDef, seed uint64, start time.Time, rows int, chunkRows int64, numPartitions int) *chunkedSource {
	t.Helper()
	name := def.Spec.Name
	db := cdcsim.New(cdcsim.Config{Seed: seed, Start: start})
	t.Cleanup(func() { db.Close() })
	gen := workload.New(db, workload.Config{Seed: seed, TxnSize: 3, Tables: []string{name}})
	if err := db.CreateTable(def.Spec); err != nil {
		t.Fatal(err)
	}
	if err := gen.Adopt(def); err != nil {
		t.Fatal(err)
	}
	if err := gen.Load(name, rows, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture(name, cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, testlake.Local)
	spec := &config.Spec{AppID: name, Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_" + name}}
	lake.Use(spec)
	spec.Bootstrap, spec.Snapshot = true, config.SnapshotChunked
	zero := 0.0
	spec.ChunkRows, spec.MinHeadroomHours, spec.TargetWaveSeconds = &chunkRows, &zero, &zero
	spec.Defaults()
	spec.Options.StartingLsn = ""
	spec.Options.NumPartitions = numPartitions
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return &chunkedSource{t: t, db: db, gen: gen, def: def, lake: lake, spec: spec}
}

// streamUp streams until caught up (the first run opens the chunked snapshot at S).
func (c *chunkedSource) streamUp() {
	c.t.Helper()
	c.db.Idle()
	deps := stream.Deps{Source: c.db, Bronze: c.lake.Table(c.spec.Bronze), Facts: c.lake.Table(c.spec.FactsTable),
		Plans: c.lake.Table(c.spec.PlansTable()), Checkpoint: checkpoint.New(c.lake.Store(c.spec.Checkpoint), c.spec.AppID)}
	for caught := false; !caught; {
		res, err := stream.Run(context.Background(), c.spec, deps, stream.Options{Now: c.db.Now, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			c.t.Fatal(err)
		}
		caught = res.CaughtUp
	}
}

// wave reads one wave of the chunked snapshot and reports whether it is done.
func (c *chunkedSource) wave() bool {
	c.t.Helper()
	sd := snapshot.Deps{Spec: c.spec, Source: c.db, Bronze: c.lake.Table(c.spec.Bronze), Facts: c.lake.Table(c.spec.FactsTable),
		Plans: c.lake.Table(c.spec.PlansTable()), Staging: c.lake.Store(c.spec.Checkpoint), Options: snapshot.Options{Now: c.db.Now}}
	p := snapshot.ParamsOf(c.spec)
	p.MaxWaves = 1
	st, err := snapshot.Backfill(context.Background(), sd, p)
	if err != nil {
		c.t.Fatal(err)
	}
	return st.State == snapshot.StateDone
}

func newChunkedLake(t *testing.T) *chunkedLake {
	t.Helper()
	ctx := context.Background()
	src := newChunkedSource(t, 11, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), 700, 100, 2)
	db, gen, lake, spec, def := src.db, src.gen, src.lake, src.spec, src.def
	c := &chunkedLake{db: db, lake: lake, spec: spec}
	src.streamUp() // opens the chunked snapshot at S
	for done := false; !done; {
		if err := gen.Step(10); err != nil {
			t.Fatal(err)
		}
		done = src.wave()
	}
	src.streamUp()
	// Silver as a copy of the source table (env.silver): the chunk checks read bronze and
	// the records, and the buckets need a silver in step.
	cols, err := db.CapturedColumns(ctx, "dbo_orders")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, gen: gen, lake: lake, def: def, ci: "dbo_orders", cols: cols}
	e.silver()
	c.url = lake.URL("silverx")
	rows, err := snapshot.PlanRows(ctx, lake.Table(spec.PlansTable()), spec.AppID, snapshot.PlanEventPlan)
	if err != nil {
		t.Fatal(err)
	}
	c.plans = len(rows)
	if c.plans < 6 {
		t.Fatalf("%d chunks planned, want at least 6 for the test to mean something", c.plans)
	}
	return c
}

func (c *chunkedLake) job() reconcile.Job {
	return reconcile.Job{Spec: c.spec, Source: c.db, Silver: c.lake.Table(c.url), Bronze: c.lake.Table(c.spec.Bronze),
		Facts: c.lake.Table(c.spec.FactsTable), Plans: c.lake.Table(c.spec.PlansTable()), BucketRows: 200, Sample: 1}
}

// records reads the chunk records as the job does.
func (c *chunkedLake) records(t *testing.T) *reconcile.ChunkRecords {
	t.Helper()
	r, err := reconcile.ReadChunkRecords(context.Background(), c.lake.Table(c.spec.FactsTable), c.lake.Table(c.spec.PlansTable()), c.spec.AppID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run reconciles with the given chunk records in place of the tables'.
func (c *chunkedLake) run(t *testing.T, rec *reconcile.ChunkRecords) reconcile.Result {
	t.Helper()
	ctx := context.Background()
	ss, err := c.lake.Table(c.url).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := c.lake.Table(c.spec.Bronze).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := c.db.CapturedColumns(ctx, "dbo_orders")
	if err != nil {
		t.Fatal(err)
	}
	keys := cols[slices.IndexFunc(cols, func(c2 source.Column) bool { return c2.Name == "id" })]
	res, err := reconcile.Run(ctx, reconcile.Deps{Source: c.db, Silver: ss, Bronze: bs, Chunks: rec},
		reconcile.Options{Table: source.Table{Schema: "dbo", Name: "orders"}, Columns: cols, Keys: []source.Column{keys}, CaptureInstance: "dbo_orders", BucketRows: 200})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// chunkKinds are the chunk rows' kinds that are not MATCH, as "KIND@chunk".
func chunkKinds(res reconcile.Result) []string {
	var out []string
	for _, r := range res.Rows {
		if r.Scope == "chunk" && r.Kind != reconcile.Match {
			out = append(out, fmt.Sprintf("%s@%d", r.Kind, r.Chunk))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// A healthy chunked snapshot, bootstrapped wave by wave beside a workload: every chunk is
// MATCH (so are the buckets), one row per planned chunk, and the report holds them.
func TestChunkChecksHealthyChunkedSnapshot(t *testing.T) {
	c := newChunkedLake(t)
	job := c.job()
	job.Report = c.lake.Table(c.lake.URL("report"))
	res, err := job.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	chunks := 0
	for _, r := range res.Rows {
		if r.Scope == "chunk" {
			chunks++
			if r.Kind != reconcile.Match || r.SourceRows != r.TargetRows || r.TargetRows == 0 {
				t.Errorf("chunk row %+v", r)
			}
		}
	}
	if chunks != c.plans || !res.OK() || res.ChunkedSnapshot == "" {
		t.Fatalf("%d chunk rows for %d chunks, counts %v, snapshot %q", chunks, c.plans, res.Counts, res.ChunkedSnapshot)
	}
	if res.Counts[reconcile.Match] != len(res.Rows) {
		t.Fatalf("not all MATCH: %v", res.Counts)
	}
}

// Each planted fault in a chunked snapshot's records is found as the kind it is, on the
// chunk it is in, and nothing else is.
func TestChunkChecksFindPlantedFaults(t *testing.T) {
	c := newChunkedLake(t)
	base := c.records(t)
	if got := chunkKinds(c.run(t, base)); len(got) != 0 {
		t.Fatalf("unplanted records: %v", got)
	}
	// find returns the index in rows of event's row for chunk i.
	find := func(rows []snapshot.PlanRow, event string, i int32) int {
		k := slices.IndexFunc(rows, func(r snapshot.PlanRow) bool { return r.Event == event && r.Chunk != nil && *r.Chunk == i })
		if k < 0 {
			t.Fatalf("no %s row for chunk %d", event, i)
		}
		return k
	}
	factOf := func(rows []facts.Row, i int32) int {
		k := slices.IndexFunc(rows, func(r facts.Row) bool {
			var d struct{ Chunk int32 }
			return r.Event == facts.EventSnapshotChunk && json.Unmarshal([]byte(r.Detail), &d) == nil && d.Chunk == i
		})
		if k < 0 {
			t.Fatalf("no snapshot_chunk facts row for chunk %d", i)
		}
		return k
	}
	last := int32(c.plans - 1)
	for _, tc := range []struct {
		name  string
		plant func(r *reconcile.ChunkRecords)
		want  []string
		says  string // a detail some row of the wanted kinds holds
	}{
		{"a gap: chunk 2 planned and read from further up", func(r *reconcile.ChunkRecords) {
			for _, ev := range []string{snapshot.PlanEventPlan, snapshot.PlanEventChunk} {
				k := find(r.Plans, ev, 2)
				r.Plans[k].Lo = shift(t, r.Plans[k].Lo, 5)
			}
		}, []string{"CHUNK_TILING@2"}, ""},
		{"an overlap: chunk 3 read from where chunk 2 starts", func(r *reconcile.ChunkRecords) {
			k := find(r.Plans, snapshot.PlanEventChunk, 3)
			r.Plans[k].Lo = r.Plans[find(r.Plans, snapshot.PlanEventChunk, 2)].Lo
		}, []string{"CHUNK_TILING@3"}, ""},
		{"bounds out of order", func(r *reconcile.ChunkRecords) {
			for _, ev := range []string{snapshot.PlanEventPlan, snapshot.PlanEventChunk} {
				k := find(r.Plans, ev, 1)
				r.Plans[k].Hi = shift(t, r.Plans[k].Lo, -1)
				k2 := find(r.Plans, ev, 2)
				r.Plans[k2].Lo = r.Plans[k].Hi
			}
		}, []string{"CHUNK_TILING@1"}, ""},
		{"a chunk row missing", func(r *reconcile.ChunkRecords) {
			r.Plans = slices.Delete(r.Plans, find(r.Plans, snapshot.PlanEventChunk, 4), find(r.Plans, snapshot.PlanEventChunk, 4)+1)
		}, []string{"CHUNK_ROWS@4", "CHUNK_TILING@4"}, ""},
		{"a chunk row twice", func(r *reconcile.ChunkRecords) {
			r.Plans = append(r.Plans, r.Plans[find(r.Plans, snapshot.PlanEventChunk, 1)])
		}, []string{"CHUNK_TILING@1"}, ""},
		{"the last chunk not flagged last", func(r *reconcile.ChunkRecords) {
			f := false
			r.Plans[find(r.Plans, snapshot.PlanEventChunk, last)].Last = &f
		}, []string{fmt.Sprintf("CHUNK_TILING@%d", last)}, ""},
		{"a chunk row's count off by one", func(r *reconcile.ChunkRecords) {
			k := find(r.Plans, snapshot.PlanEventChunk, 2)
			n := *r.Plans[k].Rows + 1
			r.Plans[k].Rows = &n
		}, []string{"CHUNK_ROWS@2"}, ""},
		{"a facts row's count off by one", func(r *reconcile.ChunkRecords) {
			k := factOf(r.Facts, 3)
			n := *r.Facts[k].Rows - 1
			r.Facts[k].Rows = &n
		}, []string{"CHUNK_ROWS@3"}, ""},
		{"a stamp below S", func(r *reconcile.ChunkRecords) {
			s, err := lsn.Parse(r.Plans[find(r.Plans, snapshot.PlanEventChunk, 0)].Snapshot)
			if err != nil {
				t.Fatal(err)
			}
			below := s.Prev().String()
			k := find(r.Plans, snapshot.PlanEventChunk, 1)
			r.Plans[k].Stamp = below
			r.Facts[factOf(r.Facts, 1)].MinLSN = below
		}, []string{"CHUNK_STAMP@1"}, "below the snapshot's S"},
		{"a facts row with another stamp", func(r *reconcile.ChunkRecords) {
			r.Facts[factOf(r.Facts, 0)].MinLSN = r.Plans[find(r.Plans, snapshot.PlanEventChunk, last)].Snapshot
		}, []string{"CHUNK_STAMP@0"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &reconcile.ChunkRecords{Plans: slices.Clone(base.Plans), Facts: slices.Clone(base.Facts)}
			tc.plant(rec)
			res := c.run(t, rec)
			if got := chunkKinds(res); !slices.Equal(got, tc.want) {
				t.Fatalf("found %v, want %v", got, tc.want)
			}
			if res.OK() {
				t.Fatalf("OK with %v", res.Counts)
			}
			if tc.says != "" && !slices.ContainsFunc(res.Rows, func(r reconcile.Row) bool { return strings.Contains(r.Detail, tc.says) }) {
				t.Fatalf("no row says %q: %+v", tc.says, res.Rows)
			}
		})
	}
}

// shift moves an integer plan bound (a JSON list of one number) by d.
func shift(t *testing.T, bound string, d int64) string {
	t.Helper()
	var v []int64
	if err := json.Unmarshal([]byte(bound), &v); err != nil || len(v) != 1 {
		t.Fatalf("bound %q: %v", bound, err)
	}
	return fmt.Sprintf("[%d]", v[0]+d)
}

// A chunk whose rows bronze holds twice (a wave's rows appended again under another txn,
// as a buggy writer would) is CHUNK_ROWS on that chunk, found from bronze itself with the
// records untouched; nothing else is flagged.
func TestChunkChecksFindAChunkTwiceInBronze(t *testing.T) {
	ctx := context.Background()
	c := newChunkedLake(t)
	bt := c.lake.Table(c.spec.Bronze)
	snap, err := bt.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := snap.ArrowSchema()
	if err != nil {
		t.Fatal(err)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Filter: deltalog.And(deltalog.Eq(bronze.ColChunk, int32(2)), deltalog.Eq(bronze.ColOperation, bronze.OpSnapshot))})
	if err != nil {
		t.Fatal(err)
	}
	w := ingest.NewWriter(bt.Store(), sc, parquetio.WriterOptions{})
	n := int64(0)
	if err := parquetio.Drain(ctx, it, func(rec arrow.RecordBatch) error { n += rec.NumRows(); return w.Write(ctx, rec) }); err != nil {
		t.Fatal(err)
	}
	files, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Append(ctx, bt, nil, ingest.Commit{AppID: "planted", Version: 1, Schema: sc, Files: files}); err != nil || n == 0 {
		t.Fatalf("plant %d rows of chunk 2: %v", n, err)
	}
	res := c.run(t, c.records(t))
	if got := chunkKinds(res); !slices.Equal(got, []string{"CHUNK_ROWS@2"}) {
		t.Fatalf("found %v, want [CHUNK_ROWS@2]", got)
	}
	for _, r := range res.Rows {
		if r.Kind == reconcile.ChunkRows && (r.TargetRows != 2*r.SourceRows || r.TargetRows != 2*n) {
			t.Errorf("CHUNK_ROWS row %+v: want bronze's count twice the recorded %d", r, n)
		}
	}
}
