package silver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// env is one cdcsim table streamed into bronze and applied to silver on a test lake.
type env struct {
	t      *testing.T
	db     *cdcsim.DB
	gen    *workload.Generator
	def    workload.TableDef
	spec   *config.Spec
	lake   *testlake.Lake
	silver string
	opts   Options
	// waveSpec, when set, is the spec of a chunked snapshot opened by hand (the stream's
	// spec does not open it).
	waveSpec *config.Spec
	// rebuilds counts the rebuilds of every apply.
	rebuilds int
}

// newEnv creates def's table in a simulator with rows rows loaded before CDC is enabled
// (so only a snapshot brings them), and a lake on backend.
func newEnv(t *testing.T, backend testlake.Backend, cfg cdcsim.Config, def workload.TableDef, rows int) *env {
	t.Helper()
	db := cdcsim.New(cfg)
	gen := workload.New(db, workload.Config{Seed: cfg.Seed, Tables: []string{def.Spec.Name}})
	if err := db.CreateTable(def.Spec); err != nil {
		t.Fatal(err)
	}
	if err := gen.Adopt(def); err != nil {
		t.Fatal(err)
	}
	if rows > 0 {
		if err := gen.Load(def.Spec.Name, rows, 500); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.EnableCapture(def.Spec.Name, cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, backend)
	spec := &config.Spec{
		AppID:  "silver-test",
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_" + def.Spec.Name},
	}
	lake.Use(spec)
	spec.Defaults()
	spec.Bootstrap = true
	spec.Options.StartingLsn = ""
	spec.Options.NumPartitions = 2
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, gen: gen, def: def, spec: spec, lake: lake, silver: lake.URL("silver"),
		opts: Options{AppID: spec.AppID, Keys: def.Spec.Key, Now: db.Now}}
}

func (e *env) streamDeps() stream.Deps {
	return stream.Deps{
		Source:     e.lake.Source(e.db),
		Bronze:     e.lake.RawTable(e.spec.Bronze),
		Facts:      e.lake.RawTable(e.spec.FactsTable),
		Checkpoint: checkpoint.New(e.lake.RawStore(e.spec.Checkpoint), e.spec.AppID),
		Plans:      e.lake.RawTable(e.spec.PlansTable()),
	}
}

// bootstrap takes the full snapshot the stream starts from.
func (e *env) bootstrap() {
	e.t.Helper()
	d := snapshot.Deps{Spec: e.spec, Source: e.db, Bronze: e.lake.RawTable(e.spec.Bronze),
		Facts: e.lake.RawTable(e.spec.FactsTable), Staging: e.lake.RawStore(e.spec.Checkpoint),
		Options: snapshot.Options{Now: e.db.Now}}
	if _, err := snapshot.Run(context.Background(), d); err != nil {
		e.t.Fatal(err)
	}
}

// drain streams until caught up.
func (e *env) drain() {
	e.t.Helper()
	e.db.Idle()
	for range 1000 {
		res, err := stream.Run(context.Background(), e.spec, e.streamDeps(), stream.Options{Now: e.db.Now, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			e.t.Fatalf("stream: %v", err)
		}
		if res.CaughtUp {
			return
		}
	}
	e.t.Fatal("stream never caught up")
}

// tables are the apply's tables, through the lake's faults when set.
func (e *env) tables() Tables {
	return Tables{Bronze: e.lake.Table(e.spec.Bronze), Silver: e.lake.Table(e.silver)}
}

func (e *env) apply() Result {
	e.t.Helper()
	res, err := Apply(context.Background(), e.tables(), e.opts)
	if err != nil {
		e.t.Fatalf("apply: %v", err)
	}
	if !res.CaughtUp {
		e.t.Fatalf("apply did not catch up: %+v", res)
	}
	e.rebuilds += res.Rebuilds
	return res
}

// step writes n transactions of the workload.
func (e *env) step(n int) {
	e.t.Helper()
	e.db.Advance(time.Second)
	if err := e.gen.Step(n); err != nil {
		e.t.Fatal(err)
	}
}

// sourceState is the simulator's table.
func (e *env) sourceState() *rebuild.State {
	e.t.Helper()
	cols, err := e.db.Columns(e.def.Spec.Name)
	if err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.db.ReadTable(context.Background(), source.TableRead{Table: source.Table{Schema: "dbo", Name: e.def.Spec.Name}, Columns: cols})
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := rebuild.FromRows(context.Background(), rows, e.def.Spec.Key)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// scanRows adapts a scan to source.Rows for rebuild.FromRows.
type scanRows struct {
	deltalog.RecordIterator
	schema *arrow.Schema
}

func (s scanRows) Schema() *arrow.Schema { return s.schema }

// silverState reads silver through deltalog's reader: every live row, keyed, with a
// check that no key appears twice.
func (e *env) silverState() *rebuild.State {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.silver).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return e.silverStateOf(snap)
}

// silverStateOf is silverState of silver at snap.
func (e *env) silverStateOf(snap *deltalog.Snapshot) *rebuild.State {
	e.t.Helper()
	sc, err := snap.ArrowSchema()
	if err != nil {
		e.t.Fatal(err)
	}
	var cols []string
	for _, f := range sc.Fields() {
		if f.Name != ColStartLSN && f.Name != ColCommitTS {
			cols = append(cols, f.Name)
		}
	}
	it, err := snap.Scan(context.Background(), deltalog.ScanOptions{Columns: cols})
	if err != nil {
		e.t.Fatal(err)
	}
	var n int
	st, err := rebuild.FromRows(context.Background(), countRows{scanRows{it, it.Schema()}, &n}, e.def.Spec.Key)
	if err != nil {
		e.t.Fatal(err)
	}
	if n != len(st.Rows) {
		e.t.Errorf("silver holds %d rows for %d keys: a key is there twice", n, len(st.Rows))
	}
	return st
}

type countRows struct {
	scanRows
	n *int
}

func (c countRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := c.scanRows.Next(ctx)
	if err == nil {
		*c.n += int(rec.NumRows())
	}
	return rec, err
}

// assertSilverEqualsSource compares silver with the source table row for row.
func (e *env) assertSilverEqualsSource(when string) {
	e.t.Helper()
	e.assertSilverEquals(e.sourceState(), when)
}

func (e *env) assertSilverEquals(want *rebuild.State, when string) {
	e.t.Helper()
	if d := rebuild.Diff(want, e.silverState(), 10); len(d) > 0 {
		e.t.Fatalf("%s: silver differs from the source table:\n%s", when, strings.Join(d, "\n"))
	}
}

// assertVersionsMatchBronze holds every silver version between runs (its position has no
// pass) to the current table of bronze at the version that position records
// (rebuild.Rebuild: docs/bronze.md § The current table, ranked from the newest whole
// snapshot, a chunked one counting once bronze holds its last chunk, found in bronze
// alone): equal
// once no chunked snapshot is open; while one is, every silver row is bronze's, but
// silver may lack keys of chunks not applied yet. It returns how many versions it
// compared.
func (e *env) assertVersionsMatchBronze(when string) int {
	e.t.Helper()
	ctx := context.Background()
	st, bt := e.lake.RawTable(e.silver), e.lake.RawTable(e.spec.Bronze)
	latest, err := st.Snapshot(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	compared := 0
	for v := range latest.Version() + 1 {
		snap, err := st.SnapshotAt(ctx, v)
		if err != nil {
			e.t.Fatal(err)
		}
		pos, ok, err := ReadPosition(snap)
		if err != nil {
			e.t.Fatal(err)
		}
		if !ok || pos.Pass != nil {
			continue
		}
		bsnap, err := bt.SnapshotAt(ctx, pos.Version)
		if err != nil {
			e.t.Fatal(err)
		}
		commits, err := bt.ReadCommits(ctx, 0, pos.Version)
		if err != nil {
			e.t.Fatal(err)
		}
		var whole []string // chunked snapshots whose last chunk bronze holds
		for _, t := range waveTagsOf(commits) {
			if slices.ContainsFunc(t.Chunks, func(c bronze.WaveChunk) bool { return c.Last }) {
				whole = append(whole, t.Snapshot())
			}
		}
		want, _, err := rebuild.Rebuild(ctx, bsnap, e.def.Spec.Key, rebuild.Options{Completed: whole})
		if err != nil {
			e.t.Fatal(err)
		}
		var diffs []string
		for _, d := range rebuild.Diff(want, e.silverStateOf(snap), 0) {
			if pos.OpenSnapshot == "" || !strings.HasSuffix(d, ": missing") {
				diffs = append(diffs, d)
			}
		}
		if len(diffs) > 0 {
			e.t.Fatalf("%s: silver v%d (open snapshot %q) differs from bronze v%d's current table:\n%s",
				when, v, pos.OpenSnapshot, pos.Version, strings.Join(diffs[:min(10, len(diffs))], "\n"))
		}
		compared++
	}
	return compared
}

// cloneTable copies every object of the table at url to URL(name) and returns that URL:
// a table of its own (no log store entries yet) in the state the original is in.
func (e *env) cloneTable(url, name string) string {
	e.t.Helper()
	ctx := context.Background()
	src, dst := e.lake.RawStore(url), e.lake.RawStore(e.lake.URL(name))
	for oi, err := range src.List(ctx, "", "") {
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				break
			}
			e.t.Fatal(err)
		}
		rc, err := src.Get(ctx, oi.Key)
		if err != nil {
			e.t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			e.t.Fatal(err)
		}
		if err := dst.Put(ctx, oi.Key, bytes.NewReader(data), int64(len(data))); err != nil {
			e.t.Fatal(err)
		}
	}
	return e.lake.URL(name)
}

// position is silver's recorded position.
func (e *env) position() Position {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.silver).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	p, _, err := ReadPosition(snap)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// silverFiles are silver's live files.
func (e *env) silverFiles() []deltalog.Add {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.silver).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return snap.Files()
}

// assertClustered checks that silver's files are tagged with their first and last keys,
// and that no two files of one layer (base, delta) have overlapping key ranges.
func (e *env) assertClustered() {
	e.t.Helper()
	type span struct{ lo, hi string }
	spans := map[string][]span{}
	for _, a := range e.silverFiles() {
		lo, hi, ok := tagRange(&a)
		if !ok {
			e.t.Fatalf("file %s has no key tags", a.Path)
		}
		layer := a.Tags[TagLayer]
		spans[layer] = append(spans[layer], span{string(lo), string(hi)})
	}
	for layer, sp := range spans {
		sort.Slice(sp, func(i, j int) bool { return sp[i].lo < sp[j].lo })
		for i := 1; i < len(sp); i++ {
			if sp[i].lo <= sp[i-1].hi {
				e.t.Fatalf("files %d and %d of layer %q overlap: silver is not clustered by key", i-1, i, layer)
			}
		}
	}
}

// silverVersions are silver's commit versions 0..latest.
func (e *env) silverVersions() []int64 {
	e.t.Helper()
	snap, err := e.lake.RawTable(e.silver).Snapshot(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]int64, snap.Version()+1)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// world is one case of the live-workload tests: a backend, a table and which of SQL
// Server's two key-update shapes the simulator writes (split: a delete and an insert).
type world struct {
	backend testlake.Backend
	def     workload.TableDef
	split   bool
}

// worldsWith is every table (an int, a composite and a case-insensitive string key) in both
// key-update shapes on local disk, then the emulator cases given.
func worldsWith(aws ...world) []world {
	var out []world
	for _, def := range []workload.TableDef{workload.Orders(), workload.OrderLines(), workload.Customers()} {
		for _, split := range []bool{false, true} {
			out = append(out, world{testlake.Local, def, split})
		}
	}
	return append(out, aws...)
}
