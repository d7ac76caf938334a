package seed_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// ordersExport is how a user's export holds dbo.orders: Spark's long and decimal(38,18),
// DuckDB's nanosecond timestamps, names in other cases, and an extra column.
var ordersExport = map[string]userColumn{
	"id":       {name: "ID", typ: arrow.PrimitiveTypes.Int64},
	"customer": {name: "Customer"},
	"amount":   {name: "AMOUNT", typ: &arrow.Decimal128Type{Precision: 38, Scale: 18}},
	"created":  {typ: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
}

// workloadEnv is dbo.orders under a workload: loaded, then changed for a while.
func workloadEnv(t *testing.T, backend testlake.Backend) (*env, *workload.Generator) {
	t.Helper()
	def := workload.Orders()
	e := newEnv(t, backend, def.Spec, cdcsim.Config{})
	gen := workload.New(e.db, workload.Config{Seed: 3, TxnSize: 4, Rate: 50, Tables: []string{"orders"}})
	if err := gen.Adopt(def); err != nil {
		t.Fatal(err)
	}
	if err := gen.Load("orders", 2000, 500); err != nil {
		t.Fatal(err)
	}
	if err := gen.Step(200); err != nil {
		t.Fatal(err)
	}
	return e, gen
}

// exportWhileWriting copies dbo.orders into Parquet files under the lake's "copy" folder
// the way a nightly export does: a key range at a time, the workload committing between
// the reads, so commits after the copy started are partly in it. The first file is
// written with Spark's INT96 timestamps. It returns the copy's URL.
func exportWhileWriting(t *testing.T, e *env, gen *workload.Generator) string {
	t.Helper()
	ctx := context.Background()
	url := e.lake.URL("copy")
	cols, err := e.db.Columns("orders")
	if err != nil {
		t.Fatal(err)
	}
	id := cols[0]
	bounds := []any{nil, int64(600), int64(1200), int64(1800), nil}
	for i := 0; i+1 < len(bounds); i++ {
		r := source.TableRead{Table: source.Table{Schema: "dbo", Name: "orders"}, Columns: cols, Keys: []source.Column{id}}
		if bounds[i] != nil {
			r.Range.Lo = source.Key{bounds[i]}
		}
		if bounds[i+1] != nil {
			r.Range.Hi = source.Key{bounds[i+1]}
		}
		rows, err := e.db.ReadTable(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		var recs []arrow.RecordBatch
		for {
			rec, err := rows.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, export(t, rec, ordersExport))
			rec.Release()
		}
		rows.Close()
		e.writeParquet(url, fmt.Sprintf("part-%05d.parquet", i), i == 0, recs...)
		for _, r := range recs {
			r.Release()
		}
		if err := gen.Step(150); err != nil {
			t.Fatal(err)
		}
	}
	return url
}

// A copy taken while a workload runs (as_of before the copy started, later commits partly
// in it), seeded, then the stream from L: bronze rebuilds the source table exactly, and
// the stream never reads the table. As a time and as an LSN.
func TestSeedFromCopyTakenUnderWorkload(t *testing.T) {
	for _, byLSN := range []bool{false, true} {
		t.Run(fmt.Sprintf("as_of_lsn=%v", byLSN), func(t *testing.T) {
			e, gen := workloadEnv(t, testlake.Local)
			asOf := e.db.Now().Format(time.RFC3339Nano)
			wantL, _, err := e.db.LSNAtOrBefore(context.Background(), e.db.Now())
			if err != nil {
				t.Fatal(err)
			}
			if byLSN {
				asOf = e.maxLSN().String()
				wantL = e.maxLSN()
			}
			e.db.Advance(3 * time.Second)
			url := exportWhileWriting(t, e, gen)
			if err := gen.Step(100); err != nil {
				t.Fatal(err)
			}
			reads := e.db.Calls("ReadTable")
			res := e.mustRun(seed.Request{Copy: url, AsOf: asOf})
			if res.Plan.Status != seed.Planned || res.Offset.LSN != wantL || res.Commit.Rows == nil || res.Commit.Skipped {
				t.Fatalf("seed: %+v, want a new seed at %s", res, wantL)
			}
			if !res.Offset.HasTime() {
				t.Fatalf("seed offset %+v has no commit time", res.Offset)
			}
			fr := e.factsRows()
			if count(fr, facts.EventBootstrap) != 1 {
				t.Fatalf("facts rows %+v", fr)
			}
			for _, r := range fr {
				if r.Event == facts.EventBootstrap && (r.Rows == nil || *r.Rows != *res.Commit.Rows || r.MaxLSN != wantL.String()) {
					t.Fatalf("bootstrap row %+v, want %d rows at %s", r, *res.Commit.Rows, wantL)
				}
			}
			if rows := e.snapshotRows(); len(rows) != 1 || rows[wantL.String()] != *res.Commit.Rows {
				t.Fatalf("snapshot rows %v", rows)
			}
			e.stream()
			if got := e.db.Calls("ReadTable"); got != reads {
				t.Fatalf("the seed or the stream read the table (%d reads, want %d)", got, reads)
			}
			e.check()
		})
	}
}

// The seed's rows carry a snapshot row's stamp columns at the seed's L: _operation 0,
// _start_lsn = _snapshot = L, _commit_ts L's commit time, the configured capture
// instance, and NULL change columns.
func TestSeedRowsAreSnapshotRows(t *testing.T) {
	e, gen := workloadEnv(t, testlake.Local)
	asOf := e.maxLSN()
	url := exportWhileWriting(t, e, gen)
	res := e.mustRun(seed.Request{Copy: url, AsOf: asOf.String()})
	n := 0
	e.scanBronze(nil, func(rec arrow.RecordBatch) {
		for i := 0; i < int(rec.NumRows()); i++ {
			n++
			row := map[string]string{}
			for j, f := range rec.Schema().Fields() {
				row[f.Name] = rec.Column(j).ValueStr(i)
			}
			want := map[string]string{"_operation": "0", "_start_lsn": asOf.String(), "_snapshot": asOf.String(),
				"_capture_instance": "dbo_orders", "_seqval": "(null)", "_command_id": "(null)", "_batch_id": "(null)", "_chunk": "(null)",
				"_commit_ts": res.Offset.CommitTime().UTC().Format("2006-01-02T15:04:05.999999")}
			for k, v := range want {
				if row[k] != v {
					t.Fatalf("row %d: %s = %q, want %q (row %v)", n, k, row[k], v, row)
				}
			}
		}
	}, nil)
	if int64(n) != *res.Commit.Rows || n == 0 {
		t.Fatalf("%d rows, commit says %v", n, res.Commit.Rows)
	}
	var _ = lsn.Zero
}
