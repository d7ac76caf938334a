package stream

import (
	"errors"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// Regressions the soak tests found, kept as named tests with their seeds.

// Soak seed 64 (TestSoakExactlyOnce -soak.seeds 200): a standalone snapshot (snapshot(target),
// `mssqlcdc snapshot`) of a table that is empty commits nothing to bronze (core/snapshot
// commit.go: "An empty table commits nothing"), so a fresh stream with bootstrap=true finds
// no snapshot, neither in the facts table (standalone writes none) nor as operation-0 rows
// in bronze, and fails with NoSnapshotError whose advice (run bootstrap) is not what the
// user did wrong. The stream should start after the snapshot's LSN and read the row
// inserted after it. Fixed: the empty snapshot's commit keeps a txn (snapshot.EmptyTxnAppID)
// that Find finds.
func TestSoakRegressionEmptyStandaloneSnapshot(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 64})
	e.spec.Bootstrap, e.spec.Options.StartingLsn = true, ""
	e.exec(insert(1, 1))
	e.exec(func(tx *cdcsim.Txn) error { return tx.Delete("orders", []any{1}) }) // empty again
	off, err := snapshot.Run(t.Context(), e.standaloneDeps())
	if err != nil {
		t.Fatal(err)
	}
	e.exec(insert(2, 2))
	res, err := e.run(Options{})
	if errors.As(err, new(*NoSnapshotError)) {
		t.Fatalf("the stream does not find the empty table's snapshot at %s: %v", off.LSN, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 1 {
		t.Errorf("after the empty snapshot at %s: %+v, want only row 2", off.LSN, res)
	}
	// Only the changes after the snapshot are the stream's (assertConverged counts every
	// change the source has, which fits a stream from earliest).
	st, lg := e.bronzeState()
	if lg.Duplicates != 0 || lg.ChangeRows() != 1 {
		t.Errorf("bronze: %d duplicates, %d change rows; want 0 and 1 (the insert after the snapshot)", lg.Duplicates, lg.ChangeRows())
	}
	if d := rebuild.Diff(e.sourceState(), st, 10); len(d) > 0 {
		t.Errorf("rebuilt state differs from the table:\n%s", joinLines(d))
	}
}

// Soak seed 2 (TestSoakPurgeAheadResnapshots): once the default-named capture instance
// dbo_orders is disabled after a switch to dbo_orders_v1, the stream follows the table's
// newest instance by the default name, but a snapshot of the same spec failed with
// CaptureInstanceNotFoundError, so a re-snapshot after data loss could never run. Fixed:
// the snapshot steps resolve the name as the stream does (source.TableInstances).
func TestSoakRegressionSnapshotFollowsDisabledDefaultName(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 2})
	e.exec(insert(1, 1))
	if _, err := e.db.EnableCapture("orders", cdcsim.CaptureOptions{Name: "dbo_orders_v1"}); err != nil {
		t.Fatal(err)
	}
	e.exec(insert(2, 2))
	if err := e.db.DisableCapture("dbo_orders"); err != nil {
		t.Fatal(err)
	}
	e.exec(insert(3, 3))
	off, err := snapshot.Run(t.Context(), e.standaloneDeps())
	if err != nil {
		t.Fatalf("snapshot by the disabled default name: %v", err)
	}
	st, lg := e.bronzeState()
	if lg.ByOp[0] != 3 || len(st.Rows) != 3 || lg.Newest != off.LSN.String() {
		t.Errorf("snapshot at %s: bronze %+v, rows %v", off.LSN, lg, st.Rows)
	}
}
