package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

func insert(id int, amount any) func(tx *cdcsim.Txn) error {
	return func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": id, "amount": amount, "note": fmt.Sprint("n", id)})
		return err
	}
}

// Multi-statement transactions whose change rows come in every order of operations
// (docs/reference/known-failures.md §A1, §A2): the rebuilt state must equal the table after
// each.
func TestMultiStatementTransactionOrders(t *testing.T) {
	forBackends(t, func(t *testing.T, b testlake.Backend) {
		for _, keyAsDeleteInsert := range []bool{false, true} {
			t.Run(fmt.Sprint("keyUpdateAsDeleteInsert=", keyAsDeleteInsert), func(t *testing.T) {
				e := newEnvOn(t, b, cdcsim.Config{Seed: 2, KeyUpdateAsDeleteInsert: keyAsDeleteInsert})
				e.exec(func(tx *cdcsim.Txn) error {
					for i := 1; i <= 10; i++ {
						if err := insert(i, i)(tx); err != nil {
							return err
						}
					}
					return nil
				})
				txns := []func(tx *cdcsim.Txn) error{
					// 2,3,4,3,4,1: insert, two updates, delete of one key.
					func(tx *cdcsim.Txn) error {
						if err := insert(11, 1)(tx); err != nil {
							return err
						}
						if err := tx.Update("orders", []any{11}, cdcsim.Row{"amount": 2}); err != nil {
							return err
						}
						if err := tx.Update("orders", []any{11}, cdcsim.Row{"amount": 3}); err != nil {
							return err
						}
						return tx.Delete("orders", []any{11})
					},
					// 1,2: delete and re-insert the same key.
					func(tx *cdcsim.Txn) error {
						if err := tx.Delete("orders", []any{1}); err != nil {
							return err
						}
						return insert(1, 100)(tx)
					},
					// 3,4 then 1 on another key, then 2 of a new key.
					func(tx *cdcsim.Txn) error {
						if err := tx.Update("orders", []any{2}, cdcsim.Row{"note": "x"}); err != nil {
							return err
						}
						if err := tx.Delete("orders", []any{3}); err != nil {
							return err
						}
						return insert(3, 33)(tx)
					},
					// key update one way (5 -> 105) and back the other way (105 -> 5 -> 6).
					func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{5}, cdcsim.Row{"id": 105}) },
					func(tx *cdcsim.Txn) error {
						if err := tx.Update("orders", []any{105}, cdcsim.Row{"id": 5}); err != nil {
							return err
						}
						return tx.Update("orders", []any{6}, cdcsim.Row{"id": 60, "amount": 7})
					},
					// a key update into a key freed in the same transaction.
					func(tx *cdcsim.Txn) error {
						if err := tx.Delete("orders", []any{7}); err != nil {
							return err
						}
						return tx.Update("orders", []any{8}, cdcsim.Row{"id": 7})
					},
				}
				for i, fn := range txns {
					e.exec(fn)
					e.mustDrain(Options{})
					e.assertConverged()
					if t.Failed() {
						t.Fatalf("after transaction %d", i)
					}
				}
				// Every batch's bronze rows come in the canonical order per commit.
				_, lg := e.bronzeState()
				if lg.ByOp[1] == 0 || lg.ByOp[2] == 0 {
					t.Errorf("ops %v", lg.ByOp)
				}
				if !keyAsDeleteInsert && (lg.ByOp[3] == 0 || lg.ByOp[4] == 0) {
					t.Errorf("ops %v: no update pairs", lg.ByOp)
				}
			})
		}
	})
}

// One transaction of 200,000 rows is one commit: never split across batches or ranges
// even with maxCommitsPerBatch=1 and several partitions.
func TestLargeTransaction(t *testing.T) {
	forBackends(t, func(t *testing.T, b testlake.Backend) {
		e := newEnvOn(t, b, cdcsim.Config{Seed: 3})
		one := 1
		e.spec.Options.MaxCommitsPerBatch = &one
		e.spec.Options.NumPartitions = 4
		e.exec(insert(0, 0))
		const n = 200_000
		e.exec(func(tx *cdcsim.Txn) error {
			for i := 1; i <= n; i++ {
				if _, err := tx.Insert("orders", cdcsim.Row{"id": i, "amount": i}); err != nil {
					return err
				}
			}
			return nil
		})
		res := e.mustDrain(Options{MinRowsPerRange: 10_000})
		if res.Rows != n+1 {
			t.Fatalf("rows = %d", res.Rows)
		}
		var batchRows []int64
		for _, r := range e.factsRows() {
			if r.Event == "" && *r.Rows > 0 {
				batchRows = append(batchRows, *r.Rows)
			}
		}
		if len(batchRows) != 2 || batchRows[1] != n && batchRows[0] != n {
			t.Errorf("batch rows %v, want the big commit whole in one batch", batchRows)
		}
		e.assertConverged()
	})
}

// Ranges are cut on commit boundaries into at least MinRowsPerRange rows, and a short
// tail joins the range before (docs/reference/original-library.md §3.3).
func TestRangesSplitOnCommits(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 4})
	e.spec.Options.NumPartitions = 4
	for c := 0; c < 40; c++ {
		e.exec(func(tx *cdcsim.Txn) error {
			for i := 0; i < 100; i++ {
				if err := insert(c*100+i, i)(tx); err != nil {
					return err
				}
			}
			return nil
		})
	}
	r := &run{spec: e.spec, src: e.db, opts: Options{MinRowsPerRange: 1000}.withDefaults()}
	max, _ := e.db.MaxLSN(context.Background())
	insts, _ := e.db.CaptureInstances(context.Background())
	rr, err := r.ranges(context.Background(), spans(insts, lsn.Zero, max))
	if err != nil {
		t.Fatal(err)
	}
	if len(rr) != 4 || rr[0].From != lsn.Zero || rr[3].To != max {
		t.Fatalf("ranges %+v", rr)
	}
	for i := 1; i < len(rr); i++ {
		if rr[i].From != rr[i-1].To.Next() {
			t.Errorf("gap between ranges %d and %d", i-1, i)
		}
	}
	res := e.mustDrain(Options{MinRowsPerRange: 1000})
	if res.Rows != 4000 {
		t.Errorf("rows %d", res.Rows)
	}
	e.assertConverged()
}

// A quiet table still advances: idle entries move max_lsn, each invocation writes an
// empty batch (facts row, rows 0) and moves the offset (docs/reference/known-failures.md §D9).
func TestIdleEntriesAdvanceTheOffset(t *testing.T) {
	forBackends(t, func(t *testing.T, b testlake.Backend) {
		e := newEnvOn(t, b, cdcsim.Config{Seed: 5})
		e.exec(insert(1, 1))
		e.mustDrain(Options{})
		var last lsn.LSN
		for i := 0; i < 3; i++ {
			last = e.db.Idle()
			res := e.mustDrain(Options{})
			if res.Batches != 1 || res.Rows != 0 || res.Offset.LSN != last || !res.Offset.HasTime() {
				t.Fatalf("idle run %d: %+v (idle entry %s)", i, res, last)
			}
		}
		rows := e.factsRows()
		empty := 0
		for _, r := range rows {
			if r.Event == "" && *r.Rows == 0 {
				empty++
				if r.MinLSN != "" || r.EndLSN == "" || r.EndCommitTS == nil || r.RetentionHeadroomHours == nil {
					t.Errorf("empty batch row %+v", r)
				}
			}
		}
		if empty != 3 {
			t.Errorf("%d empty batch rows, want 3", empty)
		}
		e.assertConverged()
	})
}

// maxCommitsPerBatch bounds a batch by commits of cdc.lsn_time_mapping.
func TestMaxCommitsPerBatch(t *testing.T) {
	forBackends(t, func(t *testing.T, b testlake.Backend) {
		e := newEnvOn(t, b, cdcsim.Config{Seed: 6})
		three := 3
		e.spec.Options.MaxCommitsPerBatch = &three
		for i := 1; i <= 10; i++ {
			e.exec(insert(i, i))
		}
		res := e.mustDrain(Options{})
		if res.Batches != 4 || res.Rows != 10 {
			t.Errorf("drain %+v, want 4 batches", res)
		}
		// MaxBatches bounds one invocation; the next resumes.
		for i := 11; i <= 20; i++ {
			e.exec(insert(i, i))
		}
		r1, err := e.run(Options{MaxBatches: 1})
		if err != nil || r1.Batches != 1 || r1.CaughtUp || r1.Rows != 3 {
			t.Fatalf("bounded run %+v %v", r1, err)
		}
		r2 := e.mustDrain(Options{})
		if r2.Rows != 7 {
			t.Errorf("rest %+v", r2)
		}
		e.assertConverged()
	})
}

// A newer capture instance enabled mid-range: the batch reads the old instance below S
// and the new one from S, adds the new column to bronze and writes
// capture_instance_switched (docs/reference/known-failures.md §C7, §C8).
func TestCaptureInstanceSwitchMidRange(t *testing.T) {
	forBackends(t, func(t *testing.T, b testlake.Backend) {
		e := newEnvOn(t, b, cdcsim.Config{Seed: 7})
		e.exec(insert(1, 1))
		e.mustDrain(Options{})
		e.exec(insert(2, 2))
		if _, err := e.db.AddColumn("orders", source.Column{Name: "region", DataType: "varchar", MaxLength: 10, Nullable: true}); err != nil {
			t.Fatal(err)
		}
		e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{1}, cdcsim.Row{"amount": 10}) })
		ci, err := e.db.EnableCapture("orders", cdcsim.CaptureOptions{Name: "dbo_orders_v2"})
		if err != nil {
			t.Fatal(err)
		}
		// An update of only the new column before S writes no change row in any instance
		// (docs/reference/sqlserver-cdc.md §3.6): only updates from S on carry it.
		e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{1}, cdcsim.Row{"region": "eu"}) })
		e.exec(func(tx *cdcsim.Txn) error {
			_, err := tx.Insert("orders", cdcsim.Row{"id": 3, "amount": 3, "region": "us"})
			return err
		})
		e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{2}, cdcsim.Row{"region": "ap"}) })
		res := e.mustDrain(Options{})
		if res.Batches != 1 {
			t.Errorf("one batch spans the switch: %+v", res)
		}
		var sw, ddl int
		for _, r := range e.factsRows() {
			switch r.Event {
			case facts.EventCaptureInstanceSwitched:
				sw++
				if r.MinLSN != ci.StartLSN.String() || !strings.Contains(r.Detail, "dbo_orders -> dbo_orders_v2") {
					t.Errorf("switch row %+v", r)
				}
			case facts.EventSchemaChange:
				ddl++
			}
		}
		if sw != 1 || ddl != 1 {
			t.Errorf("switch rows %d, schema_change rows %d", sw, ddl)
		}
		st, _ := e.bronzeState()
		if st.Rows["3"] == nil || st.Rows["3"][3] != "us" {
			t.Errorf("row 3 from the new instance: %v (columns %v)", st.Rows["3"], st.Columns)
		}
		e.assertConverged()
		// Later batches read only the new instance, with no second event; the old one can go,
		// and the configured default name still resolves to the table's newest instance.
		if err := e.db.DisableCapture("dbo_orders"); err != nil {
			t.Fatal(err)
		}
		e.exec(insert(4, 4))
		if res := e.mustDrain(Options{}); res.Rows != 1 {
			t.Errorf("after disable: %+v", res)
		}
		st, lg := e.bronzeState()
		if d := rebuild.Diff(e.sourceState(), st, 10); len(d) > 0 || lg.Duplicates != 0 {
			t.Errorf("after disable: %v, %d duplicates", d, lg.Duplicates)
		}
	})
}

// A purged range stops the stream with DataLossError; failOnDataLoss=false skips with a
// data_skipped row (docs/reference/original-library.md §7.3).
func TestPurgedRange(t *testing.T) {
	forBackends(t, func(t *testing.T, b testlake.Backend) {
		for _, fail := range []bool{true, false} {
			t.Run(fmt.Sprint("failOnDataLoss=", fail), func(t *testing.T) {
				e := newEnvOn(t, b, cdcsim.Config{Seed: 8})
				e.spec.Options.FailOnDataLoss = &fail
				e.exec(insert(1, 1))
				e.mustDrain(Options{})
				e.exec(insert(2, 2))
				mark := e.exec(insert(3, 3))
				e.exec(insert(4, 4))
				if err := e.db.Cleanup("dbo_orders", mark); err != nil {
					t.Fatal(err)
				}
				_, err := e.run(Options{})
				var dl *DataLossError
				if fail {
					if !errors.As(err, &dl) || dl.CaptureInstance != "dbo_orders" || !strings.Contains(err.Error(), "failOnDataLoss=false") || !strings.Contains(err.Error(), "mssqlcdc snapshot --spec FILE --resnapshot") {
						t.Fatalf("err = %v, want DataLossError", err)
					}
					// A rerun fails the same way.
					if _, err := e.run(Options{}); !errors.As(err, &dl) {
						t.Fatalf("rerun: %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var skipped []facts.Row
				for _, r := range e.factsRows() {
					if r.Event == facts.EventDataSkipped {
						skipped = append(skipped, r)
					}
				}
				if len(skipped) != 1 || skipped[0].LostFromTS == nil || skipped[0].LostToTS == nil {
					t.Fatalf("data_skipped rows %+v", skipped)
				}
				var d facts.DataSkippedDetail
				if err := json.Unmarshal([]byte(skipped[0].Detail), &d); err != nil || !d.Certain || d.To != skipped[0].MinLSN {
					t.Errorf("detail %q %v", skipped[0].Detail, err)
				}
				st, _ := e.bronzeState()
				if st.Rows["2"] != nil || st.Rows["4"] == nil {
					t.Errorf("after skip: %v", st.Rows)
				}
			})
		}
	})
}

// A second stream on the same checkpoint loses the conditional put of the batch's
// offsets and stops with ConcurrentStreamError; the tables are untouched by it.
func TestSecondStreamRefused(t *testing.T) {
	forBackends(t, func(t *testing.T, b testlake.Backend) {
		e := newEnvOn(t, b, cdcsim.Config{Seed: 9})
		e.exec(insert(1, 1))
		e.mustDrain(Options{})
		e.exec(insert(2, 2))
		rival := checkpoint.New(e.lake.RawStore(e.spec.Checkpoint), e.spec.AppID)
		e.lake.WrapStore = func(s storage.Store) storage.Store {
			return &raceStore{Store: s, before: func(ctx context.Context, key string) {
				if key == "offsets/1.json" {
					if err := rival.WriteOffsets(ctx, checkpoint.Batch{ID: 1}); err != nil {
						t.Errorf("rival: %v", err)
					}
				}
			}}
		}
		_, err := e.run(Options{})
		var ce *checkpoint.ConcurrentStreamError
		if !errors.As(err, &ce) {
			t.Fatalf("err = %v, want ConcurrentStreamError", err)
		}
		if _, lg := e.bronzeState(); lg.ChangeRows() != 1 {
			t.Errorf("bronze rows %d after the refused run", lg.ChangeRows())
		}
	})
}

type raceStore struct {
	storage.Store
	before func(ctx context.Context, key string)
}

func (s *raceStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	s.before(ctx, key)
	return s.Store.PutIfAbsent(ctx, key, data)
}

// startingLsn=latest skips what is there; an LSN is taken as processed.
func TestStartingLsn(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 10})
	first := e.exec(insert(1, 1))
	e.exec(insert(2, 2))
	e.spec.Options.StartingLsn = "latest"
	// The first invocation records where latest was in an empty batch 0, so what commits
	// before the next invocation is read, not skipped by a new "latest".
	if res := e.mustDrain(Options{}); res.Batches != 1 || res.Rows != 0 {
		t.Errorf("latest: %+v", res)
	}
	e.exec(insert(3, 3))
	if res := e.mustDrain(Options{}); res.Rows != 1 {
		t.Errorf("after latest: %+v", res)
	}
	if res := e.mustDrain(Options{}); res.Batches != 0 {
		t.Errorf("nothing new: %+v", res)
	}
	e2 := newEnv(t, cdcsim.Config{Seed: 10})
	e2.exec(insert(1, 1))
	e2.exec(insert(2, 2))
	e2.spec.Options.StartingLsn = first.String()
	if res := e2.mustDrain(Options{}); res.Rows != 1 {
		t.Errorf("lsn: %+v", res)
	}
}

// forBackends runs fn as a subtest per backend.
func forBackends(t *testing.T, fn func(t *testing.T, backend testlake.Backend)) {
	for _, b := range testlake.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}
