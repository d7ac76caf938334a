package reconcile_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/reconcile"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// openSnapshot is a chunked bootstrap read half way: the stream opened S and streams, the
// first wave (chunk 0) is applied to silver, the second (chunk 1) is in bronze but not in
// silver yet, the other chunks are not read.
type openSnapshot struct {
	*chunkedSource
	url string // silver
}

func newOpenSnapshot(t *testing.T, def workload.TableDef) *openSnapshot {
	t.Helper()
	src := newChunkedSourceOf(t, def, 17, time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), 600, 100, 1) // one chunk per wave
	o := &openSnapshot{chunkedSource: src, url: src.lake.URL("silver")}
	src.streamUp() // opens the chunked snapshot at S
	if src.wave() {
		t.Fatal("the snapshot is done after its first wave")
	}
	o.step(60)
	src.streamUp()
	o.apply()
	if src.wave() {
		t.Fatal("the snapshot is done after its second wave")
	}
	return o
}

func (o *openSnapshot) step(n int) {
	o.t.Helper()
	o.db.Advance(time.Second)
	if err := o.gen.Step(n); err != nil {
		o.t.Fatal(err)
	}
}

func (o *openSnapshot) apply() {
	o.t.Helper()
	if _, err := silver.Apply(context.Background(), silver.Tables{Bronze: o.lake.Table(o.spec.Bronze), Silver: o.lake.Table(o.url)},
		silver.Options{AppID: o.spec.AppID, Keys: o.def.Spec.Key, Now: o.db.Now}); err != nil {
		o.t.Fatal(err)
	}
}

func (o *openSnapshot) run() reconcile.JobResult {
	o.t.Helper()
	res, err := reconcile.Job{Spec: o.spec, Source: o.db, Silver: o.lake.Table(o.url), Bronze: o.lake.Table(o.spec.Bronze),
		Facts: o.lake.Table(o.spec.FactsTable), Plans: o.lake.Table(o.spec.PlansTable()), BucketRows: 100, Sample: 1}.Run(context.Background())
	if err != nil {
		o.t.Fatal(err)
	}
	return res
}

// sourceKeys are the source table's keys now.
func (o *openSnapshot) sourceKeys() map[string]string {
	o.t.Helper()
	cols, err := o.db.CapturedColumns(context.Background(), o.spec.Source.CaptureInstance)
	if err != nil {
		o.t.Fatal(err)
	}
	var keys []source.Column
	for _, k := range o.def.Spec.Key {
		keys = append(keys, cols[slices.IndexFunc(cols, func(c source.Column) bool { return c.Name == k })])
	}
	rows, err := o.db.ReadTable(context.Background(), source.TableRead{Table: source.Table{Schema: "dbo", Name: o.def.Spec.Name}, Columns: keys})
	if err != nil {
		o.t.Fatal(err)
	}
	return rowsOf(o.t, rows, len(keys))
}

// silverKeys are silver's keys and the _start_lsn of each.
func (o *openSnapshot) silverKeys() map[string]string {
	o.t.Helper()
	snap, err := o.lake.Table(o.url).Snapshot(context.Background())
	if err != nil {
		o.t.Fatal(err)
	}
	it, err := snap.Scan(context.Background(), deltalog.ScanOptions{Columns: append(slices.Clone(o.def.Spec.Key), bronze.ColStartLSN)})
	if err != nil {
		o.t.Fatal(err)
	}
	return rowsOf(o.t, it, len(o.def.Spec.Key))
}

// chunkRow is the plans table's chunk row of chunk i.
func (o *openSnapshot) chunkRow(i int32) snapshot.PlanRow {
	o.t.Helper()
	rows, err := snapshot.PlanRows(context.Background(), o.lake.Table(o.spec.PlansTable()), o.spec.AppID, snapshot.PlanEventChunk)
	if err != nil {
		o.t.Fatal(err)
	}
	k := slices.IndexFunc(rows, func(r snapshot.PlanRow) bool { return r.Chunk != nil && *r.Chunk == i })
	if k < 0 {
		o.t.Fatalf("no chunk row for chunk %d", i)
	}
	return rows[k]
}

// bronzeChunkKeys are the keys of bronze's rows of chunk i.
func (o *openSnapshot) bronzeChunkKeys(i int32) map[string]string {
	o.t.Helper()
	snap, err := o.lake.Table(o.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		o.t.Fatal(err)
	}
	it, err := snap.Scan(context.Background(), deltalog.ScanOptions{Columns: o.def.Spec.Key,
		Filter: deltalog.And(deltalog.Eq(bronze.ColChunk, i), deltalog.Eq(bronze.ColOperation, bronze.OpSnapshot))})
	if err != nil {
		o.t.Fatal(err)
	}
	return rowsOf(o.t, it, len(o.def.Spec.Key))
}

// kindsBy counts a result's rows per "scope KIND".
func kindsBy(res reconcile.Result) map[string]int {
	out := map[string]int{}
	for _, r := range res.Rows {
		out[r.Scope+" "+string(r.Kind)]++
	}
	return out
}

// Reconcile while a chunked bootstrap is half read: the source's keys of the chunks silver
// has not applied (chunk 1, in bronze only, and the chunks not read yet) are IN_FLIGHT,
// not MISSING_TARGET, and so are the buckets holding them; the chunk checks say MATCH
// for the two chunks read and IN_FLIGHT for the rest. A key of the applied chunk 0 that
// is really wrong (changes lost: a delete, an update, an insert below the first chunk's
// upper bound) is still reported as what it is, and so is one of chunk 1 that silver holds
// from the stream (an image after S, which the wave would not set right). For an int key,
// a string key (a case-insensitive collation) and a uniqueidentifier (SQL Server's byte
// order): the last two are placed in chunks by the server's read of the unapplied ranges.
func TestReconcileWhileAChunkedSnapshotIsOpen(t *testing.T) {
	for _, tc := range []struct {
		def    workload.TableDef
		low    cdcsim.Row // a new key below chunk 0's upper bound
		change cdcsim.Row // an update
	}{
		{workload.Orders(), cdcsim.Row{"id": int64(-7), "status": "lost"}, cdcsim.Row{"status": "changed"}},
		{workload.Customers(), cdcsim.Row{"code": "AAA-lost", "name": "lost"}, cdcsim.Row{"name": "changed"}},
		{workload.Sessions(), cdcsim.Row{"session_id": "00000000-0000-0000-0000-000000000000", "hits": int64(1)}, cdcsim.Row{"hits": int64(-1)}},
	} {
		t.Run(tc.def.Spec.Name, func(t *testing.T) {
			o := newOpenSnapshot(t, tc.def)
			src, sil := o.sourceKeys(), o.silverKeys()
			want := map[string]reconcile.Kind{}
			for k := range src {
				if _, ok := sil[k]; !ok {
					want[k] = reconcile.InFlight
				}
			}
			if len(want) < 300 {
				t.Fatalf("%d of %d source keys missing from silver, want at least 300 for the test to mean something", len(want), len(src))
			}
			res := o.run()
			if got := keyRows(res.Result); !maps.Equal(got, want) {
				t.Fatalf("key rows: %d (%v), want %d IN_FLIGHT\n%s", len(got), res.Counts, len(want), firstRows(res.Result, 8))
			}
			plans := 0
			for _, r := range res.Rows {
				if r.Scope == "chunk" {
					plans++
				}
			}
			// A bucket or tile is IN_FLIGHT when silver lacks some of its keys, else MATCH.
			wantKinds := map[string]int{"key IN_FLIGHT": len(want), "chunk MATCH": 2, "chunk IN_FLIGHT": plans - 2}
			for _, r := range res.Rows {
				if r.Scope == "bucket" || r.Scope == "tile" {
					kind := reconcile.Match
					if r.TargetRows < r.SourceRows {
						kind = reconcile.InFlight
					}
					wantKinds[r.Scope+" "+string(kind)]++
				}
			}
			if wantKinds["bucket IN_FLIGHT"]+wantKinds["tile IN_FLIGHT"] < 3 {
				t.Errorf("%v: want at least 3 buckets or tiles that differ", wantKinds)
			}
			if got := kindsBy(res.Result); !maps.Equal(got, wantKinds) || plans < 6 || !res.OK() {
				t.Fatalf("rows per kind %v, want %v (%d chunks planned)", got, wantKinds, plans)
			}

			// Lose a delete, an update and an insert in chunk 0: silver is wrong there.
			stamp := o.chunkRow(0).Stamp
			var read []string
			for k, l := range sil {
				if l == stamp {
					read = append(read, k)
				}
			}
			slices.Sort(read)
			if len(read) < 20 {
				t.Fatalf("%d silver keys carry chunk 0's stamp", len(read))
			}
			gone, changed := read[3], read[9]
			// And in chunk 1 (in bronze, not applied to silver), on keys silver holds from
			// the stream, an image after S: the wave will not set them right either.
			var streamed []string
			for k := range o.bronzeChunkKeys(1) {
				if l, ok := sil[k]; ok && l > o.chunkRow(0).Snapshot {
					streamed = append(streamed, k)
				}
			}
			slices.Sort(streamed)
			if len(streamed) < 2 {
				t.Fatalf("%d keys of chunk 1 in silver from the stream, want 2", len(streamed))
			}
			gone1, changed1 := streamed[0], streamed[1]
			keyVal := func(k string) []any {
				if tc.def.Kind == workload.IntKey {
					var id int64
					fmt.Sscan(k, &id)
					return []any{id}
				}
				return []any{k}
			}
			lostKey := fmt.Sprint(tc.low[tc.def.Spec.Key[0]])
			e := &env{t: t, db: o.db, ci: o.spec.Source.CaptureInstance}
			e.lose(func(tx *cdcsim.Txn) error {
				if err := tx.Delete(tc.def.Spec.Name, keyVal(gone)); err != nil {
					return err
				}
				if err := tx.Update(tc.def.Spec.Name, keyVal(changed), tc.change); err != nil {
					return err
				}
				if err := tx.Delete(tc.def.Spec.Name, keyVal(gone1)); err != nil {
					return err
				}
				if err := tx.Update(tc.def.Spec.Name, keyVal(changed1), tc.change); err != nil {
					return err
				}
				_, err := tx.Insert(tc.def.Spec.Name, tc.low)
				return err
			})
			want[gone], want[changed], want[lostKey] = reconcile.MissingSource, reconcile.RecordDiff, reconcile.MissingTarget
			want[gone1], want[changed1] = reconcile.MissingSource, reconcile.RecordDiff
			res = o.run()
			if got := keyRows(res.Result); !maps.Equal(got, want) {
				var diff []string
				for k, v := range got {
					if want[k] != v {
						diff = append(diff, fmt.Sprintf("%s: %s, want %s", k, v, want[k]))
					}
				}
				slices.Sort(diff)
				t.Fatalf("after the lost changes, key rows that differ: %v", diff[:min(10, len(diff))])
			}
			if res.OK() || res.Counts[reconcile.MissingSource] != 2 || res.Counts[reconcile.RecordDiff] != 2 || res.Counts[reconcile.MissingTarget] != 1 {
				t.Fatalf("counts %v, want 2 MISSING_SOURCE, 2 RECORD_DIFF, 1 MISSING_TARGET", res.Counts)
			}
			if tc.def.Kind == workload.IntKey {
				// The lowest bucket, which starts at the lost insert, lies in chunk 0.
				k := slices.IndexFunc(res.Rows, func(r reconcile.Row) bool { return r.Scope == "bucket" && r.Lo == lostKey })
				if k < 0 || res.Rows[k].Kind != reconcile.Mismatch {
					t.Fatalf("no MISMATCH bucket from %s: %+v", lostKey, res.Rows[max(k, 0)])
				}
			}
		})
	}
}

// firstRows lists up to n rows that are neither MATCH nor IN_FLIGHT.
func firstRows(res reconcile.Result, n int) string {
	var out []string
	for _, r := range res.Rows {
		if r.Kind != reconcile.Match && r.Kind != reconcile.InFlight && len(out) < n {
			out = append(out, fmt.Sprintf("%s %s %v [%s, %s) %s", r.Kind, r.Scope, r.Key, r.Lo, r.Hi, r.Detail))
		}
	}
	return strings.Join(out, "\n")
}

// rowsOf are an arrow stream's rows by key text (its first nkeys columns' values joined
// by ",", as keyRows has them), each the text of its other columns (NULL as "NULL").
func rowsOf(t *testing.T, rows parquetio.RecordIterator, nkeys int) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := parquetio.Drain(context.Background(), rows, func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			vals := make([]string, rec.NumCols())
			for j := range vals {
				vals[j] = "NULL"
				if rec.Column(j).IsValid(i) {
					vals[j] = rec.Column(j).ValueStr(i)
				}
			}
			out[strings.Join(vals[:nkeys], ",")] = strings.Join(vals[nkeys:], "\x1f")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// differing are the keys whose row differs between the source table and silver, or that
// one side lacks: the key rows a full reconcile finds.
func (o *openSnapshot) differing() map[string]bool {
	o.t.Helper()
	ctx := context.Background()
	cols, err := o.db.CapturedColumns(ctx, o.spec.Source.CaptureInstance)
	if err != nil {
		o.t.Fatal(err)
	}
	// Keys first, then the other columns, in the same order on both sides.
	var ordered []source.Column
	for _, k := range o.def.Spec.Key {
		ordered = append(ordered, cols[slices.IndexFunc(cols, func(c source.Column) bool { return c.Name == k })])
	}
	for _, c := range cols {
		if !slices.Contains(o.def.Spec.Key, c.Name) {
			ordered = append(ordered, c)
		}
	}
	names := make([]string, len(ordered))
	for i, c := range ordered {
		names[i] = c.Name
	}
	rows, err := o.db.ReadTable(ctx, source.TableRead{Table: source.Table{Schema: "dbo", Name: o.def.Spec.Name}, Columns: ordered})
	if err != nil {
		o.t.Fatal(err)
	}
	src := rowsOf(o.t, rows, len(o.def.Spec.Key))
	snap, err := o.lake.Table(o.url).Snapshot(ctx)
	if err != nil {
		o.t.Fatal(err)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: names})
	if err != nil {
		o.t.Fatal(err)
	}
	sil := rowsOf(o.t, it, len(o.def.Spec.Key))
	out := map[string]bool{}
	for k, v := range src {
		if w, ok := sil[k]; !ok || w != v {
			out[k] = true
		}
	}
	for k := range sil {
		if _, ok := src[k]; !ok {
			out[k] = true
		}
	}
	return out
}

// Reconcile half way through a chunked re-snapshot after data loss (generation 1, decision
// 0024): silver holds generation 0's table, and the gap's deletes, updates and inserts
// (for the int key the top keys too, above generation 1's MAX) that no change row will ever say are
// in silver until generation 1's chunks are applied. Every difference is then IN_FLIGHT:
// a key of a chunk silver has not applied, or only silver holds with an image older than
// S (for a string key anywhere: no range deletes, the completing wave rebuilds). Once the
// re-snapshot is whole and applied, nothing differs and every chunk is MATCH.
func TestReconcileMidwayThroughAResnapshot(t *testing.T) {
	for _, def := range []workload.TableDef{workload.Orders(), workload.Customers()} {
		t.Run(def.Spec.Name, func(t *testing.T) {
			src := newChunkedSourceOf(t, def, 19, time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC), 500, 100, 1)
			src.spec.OnDataLoss = config.OnDataLossResnapshot
			if err := src.spec.Validate(); err != nil {
				t.Fatal(err)
			}
			o := &openSnapshot{chunkedSource: src, url: src.lake.URL("silver")}
			src.streamUp()
			for !src.wave() {
				o.step(10)
				src.streamUp()
				o.apply()
			}
			src.streamUp()
			o.apply()
			if d := o.differing(); len(d) != 0 {
				t.Fatalf("generation 0 applied: %d keys differ", len(d))
			}

			// The gap: changes capture's cleanup purges before the stream reads them.
			keys := slices.Sorted(maps.Keys(o.sourceKeys()))
			e := &env{t: t, db: o.db, ci: o.spec.Source.CaptureInstance}
			e.lose(func(tx *cdcsim.Txn) error {
				for _, i := range []int{5, 150, 300, 450} {
					if err := tx.Delete(def.Spec.Name, keyValue(def, keys[i])); err != nil {
						return err
					}
					if err := tx.Update(def.Spec.Name, keyValue(def, keys[i+7]), cdcsim.Row{def.Spec.Columns[1].Name: "gap"}); err != nil {
						return err
					}
				}
				return nil
			})
			o.step(20)
			if def.Kind == workload.IntKey {
				// The top keys silver holds, and every key above them, deleted: generation
				// 1's MAX lies below them, in no chunk's planned range.
				ids := func(m map[string]string) []int64 {
					var out []int64
					for k := range m {
						out = append(out, keyValue(def, k)[0].(int64))
					}
					slices.Sort(out)
					return out
				}
				top := ids(o.silverKeys())
				top = top[len(top)-3:]
				if _, err := o.db.Exec(func(tx *cdcsim.Txn) error {
					for _, id := range ids(o.sourceKeys()) {
						if id >= top[0] {
							if err := tx.Delete(def.Spec.Name, []any{id}); err != nil {
								return err
							}
						}
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			o.db.Advance(time.Second)
			mark := o.db.Idle()
			if err := o.db.Cleanup(o.spec.Source.CaptureInstance, mark); err != nil {
				t.Fatal(err)
			}
			src.streamUp() // opens generation 1's chunked snapshot at S1
			if src.wave() {
				t.Fatal("generation 1's snapshot is done after one wave")
			}
			o.apply()
			want := map[string]reconcile.Kind{}
			for k := range o.differing() {
				want[k] = reconcile.InFlight
			}
			if len(want) < 8 {
				t.Fatalf("%d keys differ half way, want at least 8 for the test to mean something", len(want))
			}
			res := o.run()
			t.Logf("half way: %d keys differ, counts %v", len(want), res.Counts)
			if got := keyRows(res.Result); !maps.Equal(got, want) || !res.OK() {
				var diff []string
				for k, v := range got {
					if want[k] != v {
						diff = append(diff, fmt.Sprintf("%s: %s, want %s", k, v, want[k]))
					}
				}
				for k := range want {
					if _, ok := got[k]; !ok {
						diff = append(diff, k+": no row")
					}
				}
				slices.Sort(diff)
				t.Fatalf("half way: counts %v; key rows that differ: %v", res.Counts, diff[:min(10, len(diff))])
			}
			if got := kindsBy(res.Result); got["chunk MATCH"] != 1 || got["chunk IN_FLIGHT"] < 4 || got["chunk IN_FLIGHT"]+1 != countScope(res.Result, "chunk") {
				t.Fatalf("half way: rows per kind %v, want chunk 0 MATCH and the others IN_FLIGHT", got)
			}

			for !src.wave() {
			}
			src.streamUp()
			o.apply()
			res = o.run()
			if d := o.differing(); len(d) != 0 || len(keyRows(res.Result)) != 0 || res.Counts[reconcile.Match] != len(res.Rows) {
				t.Fatalf("generation 1 whole: %d keys differ, counts %v", len(d), res.Counts)
			}
		})
	}
}

// keyValue is a key text of a one-column key as the value Txn takes.
func keyValue(def workload.TableDef, k string) []any {
	if def.Kind == workload.IntKey {
		var id int64
		fmt.Sscan(k, &id)
		return []any{id}
	}
	return []any{k}
}

func countScope(res reconcile.Result, scope string) int {
	n := 0
	for _, r := range res.Rows {
		if r.Scope == scope {
			n++
		}
	}
	return n
}
