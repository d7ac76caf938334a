package stream

import (
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

func TestStreamInsertsUpdatesDeletes(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 1})
	for i := 1; i <= 20; i++ {
		e.exec(func(tx *cdcsim.Txn) error {
			_, err := tx.Insert("orders", cdcsim.Row{"id": i, "amount": i * 10, "note": "n"})
			return err
		})
	}
	res := e.mustDrain(Options{})
	if !res.CaughtUp || res.Rows != 20 {
		t.Fatalf("first drain: %+v", res)
	}
	e.exec(func(tx *cdcsim.Txn) error {
		if err := tx.Update("orders", []any{3}, cdcsim.Row{"amount": 1}); err != nil {
			return err
		}
		return tx.Delete("orders", []any{4})
	})
	res = e.mustDrain(Options{})
	if res.Rows != 3 || res.Batches != 1 {
		t.Errorf("second drain: %+v", res)
	}
	// Nothing new: no batch.
	res = e.mustDrain(Options{})
	if res.Batches != 0 || !res.CaughtUp {
		t.Errorf("idle drain: %+v", res)
	}
	e.assertConverged()
}
