package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// chunkedEnv is a small chunked snapshot: 40 rows of kc, chunks of 10 (four chunks, two
// waves), 2 connections, no throttle.
func chunkedEnv(t *testing.T, backend testlake.Backend, kc keyCase) *env {
	t.Helper()
	e := newEnvOn(t, backend, kc, 40)
	e.spec.Snapshot = config.SnapshotChunked
	cr, zero := int64(10), 0.0
	e.spec.ChunkRows, e.spec.MinHeadroomHours = &cr, &zero
	e.spec.Defaults()
	e.spec.Options.NumPartitions = 2
	if err := e.spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return e
}

// chunkedPhases are the steps a kill lands in: the open (the stream's), the first backfill
// call (the plan and the first wave) and a second call (one more wave).
var chunkedPhases = []struct {
	name string
	run  func(ctx context.Context, d snapshot.Deps) error
}{
	{"open", func(ctx context.Context, d snapshot.Deps) error { _, err := snapshot.OpenChunked(ctx, d); return err }},
	{"plan and wave 0", func(ctx context.Context, d snapshot.Deps) error { return oneWave(ctx, d) }},
	{"wave 1", func(ctx context.Context, d snapshot.Deps) error { return oneWave(ctx, d) }},
}

func oneWave(ctx context.Context, d snapshot.Deps) error {
	p := snapshot.ParamsOf(d.Spec)
	p.MaxWaves, p.TargetWaveSeconds = 1, 0
	st, err := snapshot.Backfill(ctx, d, p)
	if err == nil && st.State != snapshot.StateRunning && st.State != snapshot.StateDone {
		return fmt.Errorf("state %s: %s", st.State, st.Reason)
	}
	return err
}

// finishChunked runs the phases from the given one on (each as a fresh invocation, a
// killed one rerun without faults as Step Functions retries it), then the rest of the
// backfill and the stream, and returns what the tables hold.
func finishChunked(t *testing.T, e *env, from int, faults *deltatest.Faults) string {
	t.Helper()
	ctx := context.Background()
	for i := from; i < len(chunkedPhases); i++ {
		ph := chunkedPhases[i]
		if i == from && faults != nil {
			e.lake.Faults = faults
			err := ph.run(ctx, e.deps())
			e.lake.Faults = nil
			if err != nil && !errors.Is(err, deltatest.ErrKilled) {
				t.Fatalf("%s, killed: %v", ph.name, err)
			}
		}
		if err := ph.run(ctx, e.deps()); err != nil {
			t.Fatalf("%s: %v", ph.name, err)
		}
	}
	st, err := snapshot.Backfill(ctx, e.deps(), snapshot.ParamsOf(e.spec))
	if err != nil || st.State != snapshot.StateDone {
		t.Fatalf("the rest of the backfill: %+v %v", st, err)
	}
	e.stream()
	e.check()
	return chunkedState(t, e)
}

// chunkedState summarises the tables: bronze's snapshot rows per chunk and key (a key read
// twice shows), the plans table's plan and chunk rows, the facts rows per event.
func chunkedState(t *testing.T, e *env) string {
	t.Helper()
	var b strings.Builder
	perChunk := map[int32]int{}
	keys := map[string]int{}
	x := &t10{env: e, sh: shape{rebuildKeys: e.kc.keys}}
	for _, r := range x.bronzeRows() {
		if r.op == 0 {
			perChunk[r.chunk]++
			keys[r.key]++
		}
	}
	for k, n := range keys {
		if n != 1 {
			fmt.Fprintf(&b, "key %s read %d times\n", k, n)
		}
	}
	chunks := make([]int, 0, len(perChunk))
	for c := range perChunk {
		chunks = append(chunks, int(c))
	}
	sort.Ints(chunks)
	for _, c := range chunks {
		fmt.Fprintf(&b, "bronze chunk %d: %d rows\n", c, perChunk[int32(c)])
	}
	d := e.deps()
	for _, ev := range []string{snapshot.PlanEventOpen, snapshot.PlanEventPlan, snapshot.PlanEventChunk} {
		for _, r := range planRows(t, d, ev) {
			fmt.Fprintf(&b, "plans %s: snapshot %s chunk %d [%s, %s) last %v kind %s keys %s rows %v wave %v stamp %s\n", r.Event, r.Snapshot,
				deref(r.Chunk), r.Lo, r.Hi, deref(r.Last), r.Kind, r.Keys, deref(r.Rows), deref(r.Wave), r.Stamp)
		}
	}
	events := map[string]int{}
	var chunkFacts []string
	for _, r := range e.factsRows() {
		events[r.Event]++
		if r.Event == facts.EventSnapshotChunk {
			chunkFacts = append(chunkFacts, fmt.Sprintf("%s rows %d min %s", r.Detail, *r.Rows, r.MinLSN))
		}
	}
	sort.Strings(chunkFacts)
	fmt.Fprintf(&b, "facts: open %d, plan %d, chunk %d, bootstrap %d\n%s\n", events[facts.EventSnapshotOpen], events[facts.EventSnapshotPlan],
		events[facts.EventSnapshotChunk], events[facts.EventBootstrap], strings.Join(chunkFacts, "\n"))
	return b.String()
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// Kill the open, the plan and a wave at every external call (each store, log store,
// DynamoDB and source call; before it takes effect, and after for writes), rerun the
// killed step and the rest: bronze, the plans table and the facts end up as a clean run
// leaves them, no chunk read twice into bronze and none lost.
//
// One integer key (planned from row counts per slice) at every call; a composite key
// (planned by keyset seeks, the last chunk's end sought again before each wave) at every
// fourth call, which reaches each kind of call its plan and waves make and keeps the
// package's time in bounds on a loaded machine.
func TestChunkedKilledAtEveryCallConverges(t *testing.T) {
	for _, c := range []struct {
		kc    keyCase
		every int
	}{{keyCases[0], 1}, {keyCases[1], 4}} {
		t.Run(c.kc.name, func(t *testing.T) { testChunkedKilled(t, testlake.Local, c.kc, c.every) })
	}
}

// On the emulators (S3 on gofakes3, DynamoDB log store on dynalite), every eleventh call.
func TestChunkedKilledOnEmulatorsConverges(t *testing.T) {
	testChunkedKilled(t, testlake.AWS, keyCases[1], 11)
}

func testChunkedKilled(t *testing.T, backend testlake.Backend, kc keyCase, every int) {
	ctx := context.Background()
	clean := chunkedEnv(t, backend, kc)
	want := finishChunked(t, clean, 0, nil)
	if !strings.Contains(want, "bootstrap 1") || strings.Contains(want, "read 2 times") {
		t.Fatalf("clean run:\n%s", want)
	}
	runs := 0
	for i, ph := range chunkedPhases {
		// The calls the phase makes, counted on a clean run up to it.
		probe := chunkedEnv(t, backend, kc)
		for _, p := range chunkedPhases[:i] {
			if err := p.run(ctx, probe.deps()); err != nil {
				t.Fatal(err)
			}
		}
		counter := &deltatest.Faults{}
		probe.lake.Faults = counter
		if err := ph.run(ctx, probe.deps()); err != nil {
			t.Fatal(err)
		}
		ops := counter.Ops()
		t.Logf("%s makes %d external calls", ph.name, len(ops))
		for _, f := range testlake.KillPlans(ops, every) {
			e := chunkedEnv(t, backend, kc)
			for _, p := range chunkedPhases[:i] {
				if err := p.run(ctx, e.deps()); err != nil {
					t.Fatal(err)
				}
			}
			if got := finishChunked(t, e, i, f); got != want {
				t.Fatalf("%s killed at call %d (%s, after %v):\n%s\nwant:\n%s", ph.name, f.KillAt, ops[f.KillAt-1], f.After, got, want)
			}
			runs++
		}
	}
	t.Logf("%d kills, each rerun to the clean run's tables", runs)
}
