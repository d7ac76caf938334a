package stream

import (
	"errors"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// A change table without __$command_id (docs/reference/sqlserver-cdc.md §13.5): the
// default stream stops with CommandIDMissingError naming includeCommandId; with
// includeCommandId false it reads the table in (start_lsn, seqval, operation) order and
// bronze converges on the source.
func TestStreamIncludeCommandIDFalse(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 11})
	if err := e.db.DisableCapture("dbo_orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.EnableCapture("orders", cdcsim.CaptureOptions{WithoutCommandID: true}); err != nil {
		t.Fatal(err)
	}
	e.db.Idle()
	for i := 1; i <= 5; i++ {
		e.exec(func(tx *cdcsim.Txn) error {
			if _, err := tx.Insert("orders", cdcsim.Row{"id": i, "amount": i}); err != nil {
				return err
			}
			return tx.Update("orders", []any{i}, cdcsim.Row{"amount": i * 2})
		})
	}
	_, err := e.run(Options{})
	var cm *source.CommandIDMissingError
	if !errors.As(err, &cm) {
		t.Fatalf("default includeCommandId: %v, want *CommandIDMissingError", err)
	}
	off := false
	e.spec.Options.IncludeCommandID = &off
	if res := e.mustDrain(Options{}); res.Rows != 15 {
		t.Fatalf("drain: %+v, want 15 rows", res)
	}
	e.assertConverged()
}
