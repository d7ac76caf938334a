package snapshot_test

import (
	"context"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
)

// A composite, string or uniqueidentifier key is cut by keyset seeks sized
// from the row estimate (sys.sp_spaceused), never by NTILE, which scans and spools the
// whole key in one statement (docs/performance.md "Planning statements"): 100 rows on 4
// connections are 4 ranges of 25 rows, and every row is read once (the heap's integer
// snapshotKeys column by uniform ranges over MIN..MAX, as before).
func TestPlanSeeksRangesOfEqualRows(t *testing.T) {
	for _, kc := range keyCases[1:] {
		t.Run(kc.name, func(t *testing.T) {
			e := newEnv(t, kc, 100)
			ctx := context.Background()
			e.spec.Options.NumPartitions = 4
			open, err := snapshot.Open(ctx, e.deps())
			if err != nil {
				t.Fatal(err)
			}
			plan, err := snapshot.Plan(ctx, e.deps(), open.Snapshot)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Ranges) != 4 {
				t.Fatalf("%d ranges, want 4", len(plan.Ranges))
			}
			for _, r := range plan.Ranges {
				res, err := snapshot.Read(ctx, e.deps(), open.Snapshot, r)
				if err != nil {
					t.Fatal(err)
				}
				if res.Rows != 25 {
					t.Errorf("range %d holds %d rows, want 25", r.Index, res.Rows)
				}
			}
			if n := e.db.Calls("KeyTiles"); n != 0 {
				t.Errorf("planning called KeyTiles %d times (NTILE)", n)
			}
			if kc.name != "heap" && (e.db.Calls("KeyBound") < 3 || e.db.Calls("SizeEstimate") != 1) { // the heap's bigint column: uniform
				t.Errorf("planning made %d KeyBound seeks and %d SizeEstimate calls, want 3+ and 1", e.db.Calls("KeyBound"), e.db.Calls("SizeEstimate"))
			}
		})
	}
}
