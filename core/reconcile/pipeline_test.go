package reconcile_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/reconcile"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// The whole pipeline on the simulator: rows loaded before CDC (a snapshot brings them),
// bootstrap, stream, silver applied. Reconcile is all MATCH when silver has caught up;
// with a workload still writing (changes silver has not applied) the differences are
// IN_FLIGHT, never MISMATCH; once the stream and silver catch up it is all MATCH again.
func TestPipelineReconcilesOnBothBackends(t *testing.T) {
	for _, backend := range []testlake.Backend{testlake.Local, testlake.AWS} {
		t.Run(string(backend), func(t *testing.T) { pipeline(t, backend) })
	}
}

func pipeline(t *testing.T, backend testlake.Backend) {
	ctx := context.Background()
	def := workload.Orders()
	db := cdcsim.New(cdcsim.Config{Seed: 9, Start: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)})
	t.Cleanup(func() { db.Close() })
	gen := workload.New(db, workload.Config{Seed: 9, TxnSize: 4, Tables: []string{"orders"}})
	if err := db.CreateTable(def.Spec); err != nil {
		t.Fatal(err)
	}
	if err := gen.Adopt(def); err != nil {
		t.Fatal(err)
	}
	if err := gen.Load("orders", 1500, 500); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("orders", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, backend)
	spec := &config.Spec{AppID: "orders", Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_orders"}}
	lake.Use(spec)
	spec.Defaults()
	spec.Bootstrap = true
	spec.Options.StartingLsn = ""
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	sd := snapshot.Deps{Spec: spec, Source: db, Bronze: lake.Table(spec.Bronze), Facts: lake.Table(spec.FactsTable),
		Staging: lake.Store(spec.Checkpoint), Options: snapshot.Options{Now: db.Now}}
	if _, err := snapshot.Run(ctx, sd); err != nil {
		t.Fatal(err)
	}
	silverURL := lake.URL("silver")
	catchUp := func() {
		t.Helper()
		db.Idle()
		deps := stream.Deps{Source: db, Bronze: lake.Table(spec.Bronze), Facts: lake.Table(spec.FactsTable),
			Checkpoint: checkpoint.New(lake.Store(spec.Checkpoint), spec.AppID)}
		for caught := false; !caught; {
			res, err := stream.Run(ctx, spec, deps, stream.Options{Now: db.Now, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			caught = res.CaughtUp
		}
		if _, err := silver.Apply(ctx, silver.Tables{Bronze: lake.Table(spec.Bronze), Silver: lake.Table(silverURL)},
			silver.Options{AppID: spec.AppID, Keys: []string{"id"}, Now: db.Now}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, wantInFlight bool) {
		t.Helper()
		job := reconcile.Job{Spec: spec, Source: db, Silver: lake.Table(silverURL), Bronze: lake.Table(spec.Bronze),
			BucketRows: 300, Sample: 1}
		res, err := job.Run(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !res.OK() || (!wantInFlight && res.Counts[reconcile.Match] < 5) || (res.Counts[reconcile.InFlight] > 0) != wantInFlight {
			t.Fatalf("%s: counts %v, want IN_FLIGHT %v and no mismatch", what, res.Counts, wantInFlight)
		}
	}
	if err := gen.Step(60); err != nil {
		t.Fatal(err)
	}
	catchUp()
	check("caught up", false)
	db.Advance(time.Second)
	if err := gen.Step(30); err != nil { // written, not yet streamed nor applied
		t.Fatal(err)
	}
	check("changes in flight", true)
	catchUp()
	check("caught up again", false)
}
