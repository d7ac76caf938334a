package stream

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// A commit whose cdc.lsn_time_mapping row is gone (the mapping is cleaned up on its own
// schedule, docs/reference/sqlserver-cdc.md §3.7) still reaches bronze: its rows are written
// with a NULL _commit_ts, and the rebuilt table matches the source.
func TestChangeRowsWithoutMappingRowReachBronze(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 7})
	lost := e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 1, "amount": 10, "note": "a"})
		return err
	})
	e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 2, "amount": 20, "note": "b"})
		return err
	})
	if err := e.db.ForgetCommitTime(lost); err != nil {
		t.Fatal(err)
	}
	if res := e.mustDrain(Options{}); res.Rows != 2 {
		t.Fatalf("streamed %d rows, want 2: %+v", res.Rows, res)
	}
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	it, err := snap.Scan(context.Background(), deltalog.ScanOptions{Columns: []string{bronze.ColStartLSN, bronze.ColCommitTS}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	nullAt := map[string]bool{}
	for {
		rec, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lsns := rec.Column(0).(interface{ Value(int) string })
		for i := 0; i < int(rec.NumRows()); i++ {
			nullAt[lsns.Value(i)] = rec.Column(1).IsNull(i)
		}
	}
	if len(nullAt) != 2 || !nullAt[lost.String()] {
		t.Fatalf("bronze rows by _start_lsn (NULL _commit_ts): %v, want 2 with the NULL at %s", nullAt, lost)
	}
	for l, isNull := range nullAt {
		if l != lost.String() && isNull {
			t.Errorf("row at %s has a NULL _commit_ts but its mapping row exists", l)
		}
	}
	e.assertConverged()
}
