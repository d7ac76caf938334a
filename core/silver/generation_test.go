package silver

import (
	"context"
	"fmt"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// A re-snapshot generation: the stream falls behind CDC retention while keys are deleted
// (their delete rows purged, never in bronze), a newer whole snapshot goes into bronze and
// the next generation streams from it. The next apply rebuilds silver from that snapshot:
// the keys deleted in the lost gap leave silver, and silver equals the table again.
func TestResnapshotGenerationRemovesKeysDeletedInTheGap(t *testing.T) {
	for _, backend := range testlake.Backends {
		t.Run(string(backend), func(t *testing.T) {
			e := newEnv(t, backend, cdcsim.Config{Seed: 13}, workload.Orders(), 200)
			e.bootstrap()
			e.step(20)
			e.drain()
			e.apply()
			e.assertSilverEqualsSource("generation 0")

			// The gap: deletes and updates the stream never reads.
			gone := []any{int64(3), int64(5), int64(8)}
			for _, id := range gone {
				if _, ok := e.silverState().Rows[fmt.Sprint(id)]; !ok {
					t.Fatalf("key %v is not in silver before the gap", id)
				}
			}
			for _, id := range gone {
				if _, err := e.db.Exec(func(tx *cdcsim.Txn) error { return tx.Delete("orders", []any{id}) }); err != nil {
					t.Fatal(err)
				}
			}
			e.step(10)
			max, err := e.db.MaxLSN(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := e.db.Cleanup("dbo_orders", max); err != nil {
				t.Fatal(err)
			}

			// Generation 1: a new snapshot in bronze, a new sink app id and checkpoint.
			g1 := *e.spec
			g1.AppID = e.spec.AppID + ".g1"
			g1.Checkpoint = e.lake.URL("checkpoint/generations/1")
			d := snapshot.Deps{Spec: &g1, Source: e.db, Bronze: e.lake.RawTable(g1.Bronze), Facts: e.lake.RawTable(g1.FactsTable),
				Staging: e.lake.RawStore(g1.Checkpoint), Options: snapshot.Options{Resnapshot: true, Now: e.db.Now}}
			if _, err := snapshot.Run(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			e.spec = &g1
			e.step(20)
			e.drain()

			before := e.position()
			res := e.apply()
			if res.Rebuilds != 1 || res.Snapshot <= before.Snapshot {
				t.Fatalf("apply after the re-snapshot: %+v (silver stood on %s)", res, before.Snapshot)
			}
			st := e.silverState()
			for _, id := range gone {
				if _, ok := st.Rows[fmt.Sprint(id)]; ok {
					t.Errorf("key %v deleted in the gap is still in silver", id)
				}
			}
			e.assertSilverEqualsSource("generation 1")
			e.step(20)
			e.drain()
			if res := e.apply(); res.Rebuilds != 0 {
				t.Fatalf("apply after the rebuild: %+v", res)
			}
			e.assertSilverEqualsSource("generation 1, incremental")
		})
	}
}
