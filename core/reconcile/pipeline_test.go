package reconcile_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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

// checkInFlight runs job and fails unless every row is MATCH or IN_FLIGHT, with some
// IN_FLIGHT exactly when wantInFlight; the failure lists the rows that differ.
func checkInFlight(t *testing.T, job reconcile.Job, what string, wantInFlight bool) reconcile.JobResult {
	t.Helper()
	res, err := job.Run(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !res.OK() || (res.Counts[reconcile.InFlight] > 0) != wantInFlight {
		var rows []string
		for _, r := range res.Rows {
			if r.Kind != reconcile.Match && r.Kind != reconcile.InFlight {
				rows = append(rows, fmt.Sprintf("%s %s %s", r.Kind, r.Scope, r.Key))
			}
		}
		t.Fatalf("%s: counts %v (applied_lsn %s, max_lsn %s), want IN_FLIGHT %v and no mismatch:\n%s",
			what, res.Counts, res.AppliedLSN, res.MaxLSN, wantInFlight, strings.Join(rows[:min(10, len(rows))], "\n"))
	}
	return res
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
		res := checkInFlight(t, job, what, wantInFlight)
		if !wantInFlight && res.Counts[reconcile.Match] < 5 {
			t.Fatalf("%s: counts %v, want at least 5 MATCH", what, res.Counts)
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

// A chunked snapshot's last waves applied to silver while the stream lags behind their
// stamp: silver then holds the chunks' rows as of their stamp L, but not the changes
// between the stream's position and L to keys outside those chunks (an earlier chunk's
// keys, keys inserted above the plan's MAX), which bronze does not hold yet either. Those
// differences are changes in flight, not mismatches: silver's applied_lsn is what every key
// reflects, the stream's position, not the newest stamp. Once the stream and silver
// catch up, all MATCH.
func TestLaggingStreamAfterAWaveIsInFlight(t *testing.T) {
	ctx := context.Background()
	src := newChunkedSource(t, 13, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 300, 100, 1) // one chunk per wave
	db, gen, lake, spec := src.db, src.gen, src.lake, src.spec
	silverURL := lake.URL("silver")
	apply := func() silver.Result {
		t.Helper()
		res, err := silver.Apply(ctx, silver.Tables{Bronze: lake.Table(spec.Bronze), Silver: lake.Table(silverURL)},
			silver.Options{AppID: spec.AppID, Keys: []string{"id"}, Now: db.Now})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	step := func(n int) {
		t.Helper()
		db.Advance(time.Second)
		if err := gen.Step(n); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, wantInFlight bool) {
		t.Helper()
		checkInFlight(t, reconcile.Job{Spec: spec, Source: db, Silver: lake.Table(silverURL), Bronze: lake.Table(spec.Bronze),
			BucketRows: 100, Sample: 1}, what, wantInFlight)
	}

	src.streamUp() // opens the chunked snapshot at S
	if src.wave() {
		t.Fatal("the snapshot is done after its first wave")
	}
	step(10)
	src.streamUp()
	apply()
	step(40) // the stream does not read these before the next waves and apply
	waves := 1
	for done := false; !done; waves++ {
		done = src.wave()
	}
	if waves < 3 {
		t.Fatalf("%d waves, want at least 3", waves)
	}
	res := apply()
	if pos := res.Snapshot; pos == "" {
		t.Fatalf("apply after the last wave: %+v, want the snapshot whole", res)
	}
	check("the last waves applied, the stream behind their stamps", true)
	src.streamUp()
	apply()
	check("caught up", false)
}
