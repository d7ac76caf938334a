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
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
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

// keysOf are the key texts (values joined by ",", as keyRows has them) of an arrow
// stream's first len(def.Spec.Key) columns, with the column after them when withLSN.
func keysOf(t *testing.T, rows parquetio.RecordIterator, nkeys int, withLSN bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := parquetio.Drain(context.Background(), rows, func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			vals := make([]string, nkeys)
			for j := range vals {
				vals[j] = rec.Column(j).ValueStr(i)
			}
			v := ""
			if withLSN {
				v = rec.Column(nkeys).(*array.String).Value(i)
			}
			out[strings.Join(vals, ",")] = v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
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
	return keysOf(o.t, rows, len(keys), false)
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
	return keysOf(o.t, it, len(o.def.Spec.Key), true)
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
	return keysOf(o.t, it, len(o.def.Spec.Key), false)
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
// upper bound) is still reported as what it is.
func TestReconcileWhileAChunkedSnapshotIsOpen(t *testing.T) {
	for _, tc := range []struct {
		def workload.TableDef
		low cdcsim.Row // a new key below chunk 0's upper bound
	}{
		{workload.Orders(), cdcsim.Row{"id": int64(-7), "status": "lost"}},
		{workload.Customers(), cdcsim.Row{"code": "AAA-lost", "name": "lost"}},
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
				if err := tx.Update(tc.def.Spec.Name, keyVal(changed), cdcsim.Row{tc.def.Spec.Columns[1].Name: "changed"}); err != nil {
					return err
				}
				if err := tx.Delete(tc.def.Spec.Name, keyVal(gone1)); err != nil {
					return err
				}
				if err := tx.Update(tc.def.Spec.Name, keyVal(changed1), cdcsim.Row{tc.def.Spec.Columns[1].Name: "changed"}); err != nil {
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
