package stream

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// A captured column whose type changes inside a batch stops the stream before it reads
// (bronze never retypes a column); the DDL is named.
func TestTypeChangeIsSchemaChangedError(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 12})
	e.exec(insert(1, 1))
	e.mustDrain(Options{})
	if _, err := e.db.AlterColumn("orders", source.Column{Name: "amount", DataType: "decimal", Precision: 20, Scale: 4, Nullable: true}); err != nil {
		t.Fatal(err)
	}
	e.exec(insert(2, 2))
	_, err := e.run(Options{})
	var sc *SchemaChangedError
	if !errors.As(err, &sc) || sc.Column != "amount" {
		t.Fatalf("err = %v, want SchemaChangedError on amount", err)
	}
	if _, lg := e.bronzeState(); lg.ChangeRows() != 1 {
		t.Errorf("bronze rows %d: the batch must not be written", lg.ChangeRows())
	}
}

// A column dropped on the source stays in bronze, NULL from then on; ADD COLUMN alone
// changes nothing; both leave schema_change rows.
func TestDropAndAddColumn(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 13})
	e.exec(insert(1, 1))
	e.mustDrain(Options{})
	// Row 3 is captured before the DROP but read after it: the change table keeps its note.
	e.exec(insert(3, 3))
	if _, err := e.db.DropColumn("orders", "note"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.AddColumn("orders", source.Column{Name: "extra", DataType: "int", Nullable: true}); err != nil {
		t.Fatal(err)
	}
	e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 2, "amount": 2, "extra": 5})
		return err
	})
	e.mustDrain(Options{})
	e.assertConverged()
	n := 0
	for _, r := range e.factsRows() {
		if r.Event == facts.EventSchemaChange {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d schema_change rows, want 2", n)
	}
	st, _ := e.bronzeState()
	if st.Rows["2"] == nil || st.Rows["2"][2] != "NULL" || st.Rows["1"][2] != "n1" || st.Rows["3"] == nil || st.Rows["3"][2] != "n3" {
		t.Errorf("rows %v (columns %v)", st.Rows, st.Columns)
	}
}

// A checkpoint deleted under the same app_id is refused: its batches would be skipped by
// their txn, silently.
func TestRewoundCheckpointRefused(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 14})
	e.exec(insert(1, 1))
	e.mustDrain(Options{})
	if err := os.RemoveAll(e.spec.Checkpoint); err != nil {
		t.Fatal(err)
	}
	e.exec(insert(2, 2))
	_, err := e.run(Options{})
	var rw *CheckpointRewoundError
	if !errors.As(err, &rw) {
		t.Fatalf("err = %v, want CheckpointRewoundError", err)
	}
}

// bootstrap=true starts a fresh checkpoint at the newest snapshot of the app_id in the
// facts table; without one it is NoSnapshotError.
func TestBootstrapStartsAtSnapshot(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 15})
	e.spec.Bootstrap, e.spec.Options.StartingLsn = true, ""
	e.exec(insert(1, 1))
	if _, err := e.run(Options{}); !errors.As(err, new(*NoSnapshotError)) {
		t.Fatalf("err = %v, want NoSnapshotError", err)
	}
	s := e.exec(insert(2, 2)) // the snapshot holds rows 1 and 2, stamped at s
	row := facts.Row{AppID: e.spec.AppID, Event: facts.EventBootstrap, Rows: facts.Int64(2), MinLSN: s.String(), MaxLSN: s.String(), EndLSN: s.String(), Target: e.spec.Bronze}
	d := e.deps()
	if _, err := facts.Append(context.Background(), d.Facts, facts.TxnEvents(e.spec.AppID), 0, []facts.Row{row}, parquetio.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	e.exec(insert(3, 3))
	res := e.mustDrain(Options{})
	if res.Rows != 1 || res.Batches != 1 {
		t.Errorf("after the snapshot: %+v, want only row 3", res)
	}
	if _, lg := e.bronzeState(); lg.ByOp[2] != 1 {
		t.Errorf("bronze %+v", lg)
	}
}

// docs/reference/known-failures.md §A1: transaction A writes first (lower seqval) but
// commits after B. Resuming after B's commit must still read all of A, which has the higher
// commit LSN.
func TestInterleavedTransactionsResume(t *testing.T) {
	forBackends(t, func(t *testing.T, b testlake.Backend) {
		e := newEnvOn(t, b, cdcsim.Config{Seed: 16})
		a := e.db.Begin()
		if _, err := a.Insert("orders", cdcsim.Row{"id": 1, "amount": 1}); err != nil {
			t.Fatal(err)
		}
		e.exec(insert(2, 2)) // B commits first
		e.mustDrain(Options{})
		if _, err := a.Insert("orders", cdcsim.Row{"id": 3, "amount": 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Commit(); err != nil {
			t.Fatal(err)
		}
		if res := e.mustDrain(Options{}); res.Rows != 2 {
			t.Errorf("after A commits: %+v, want both of A's rows", res)
		}
		e.assertConverged()
	})
}

// docs/reference/known-failures.md §B6: startingLsn=latest right after CDC was enabled on a
// quiet database, when max_lsn is still below the new instance's start LSN: the stream
// starts just before the instance and reads its first changes.
func TestLatestBeforeCaptureReachedTheInstance(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 17})
	// A second table enabled now has a start LSN above max_lsn.
	if err := e.db.CreateTable(cdcsim.TableSpec{Name: "fresh", Columns: ordersColumns(), Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	ci, err := e.db.EnableCapture("fresh", cdcsim.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	max, _ := e.db.MaxLSN(context.Background())
	if !max.Less(ci.StartLSN) {
		t.Fatalf("max_lsn %s is not below the new instance's start %s", max, ci.StartLSN)
	}
	e.spec.Source.CaptureInstance = ci.Name
	e.spec.Options.StartingLsn = "latest"
	res, err := e.run(Options{})
	if err != nil || res.Offset.LSN != ci.StartLSN.Prev() {
		t.Fatalf("first run: %+v %v, want the offset just before %s", res, err, ci.StartLSN)
	}
	// Capture still has not reached the instance: the checkpoint above max_lsn is not a
	// rewound history (source.CheckContinuity), the run is caught up.
	if res, err := e.run(Options{}); err != nil || !res.CaughtUp || res.Batches != 0 {
		t.Fatalf("second run before capture reached the instance: %+v %v", res, err)
	}
	e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("fresh", cdcsim.Row{"id": 1})
		return err
	})
	if res := e.mustDrain(Options{}); res.Rows != 1 {
		t.Errorf("after the first change: %+v", res)
	}
}
