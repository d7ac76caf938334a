package silver

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// killedEnv is a bootstrapped table with changes streamed after the snapshot; when
// applied is true silver has applied the snapshot and more changes followed. Applies are
// cut into several key ranges.
func killedEnv(t *testing.T, backend testlake.Backend, applied bool) *env {
	rows := 400
	if applied {
		// Enough rows that the changes after the first apply are marked with deletion
		// vectors and go to the delta layer rather than fold into the base.
		rows = 1500
	}
	e := newEnv(t, backend, cdcsim.Config{Seed: 12, KeyUpdateAsDeleteInsert: applied}, workload.Orders(), rows)
	e.opts.MemoryBytes = 48 << 10
	e.bootstrap()
	e.step(30)
	e.drain()
	if applied {
		e.apply()
		e.step(20)
		e.drain()
	}
	return e
}

// Kill an apply at every external call (each store and log store call, before it takes
// effect or after, its answer lost), then apply again: silver equals the source table,
// stays clustered, and its position has moved exactly as far as its commits: the rebuild of
// a first apply and an incremental one, both in several key ranges.
func TestKilledApplyConverges(t *testing.T) {
	for _, backend := range testlake.Backends {
		for _, applied := range []bool{false, true} {
			t.Run(string(backend)+map[bool]string{false: "/rebuild", true: "/incremental"}[applied], func(t *testing.T) {
				testKilledApply(t, killedEnv(t, backend, applied), applied)
			})
		}
		for _, last := range []bool{false, true} {
			if backend == testlake.AWS && !last {
				continue // the emulators take the last wave's run, which applies a wave too
			}
			t.Run(string(backend)+map[bool]string{false: "/waves", true: "/last wave"}[last], func(t *testing.T) {
				testKilledApply(t, killedWavesEnv(t, backend, last), true)
			})
		}
	}
}

// killedWavesEnv is a chunked bootstrap with a wave applied, then one more wave (the
// last one when last is set) and changes, some committed between the wave's stamp and its
// commit, waiting in bronze; applies are cut into several key ranges.
func killedWavesEnv(t *testing.T, backend testlake.Backend, last bool) *env {
	e := newEnv(t, backend, cdcsim.Config{Seed: 14, KeyUpdateAsDeleteInsert: last}, workload.Orders(), 160)
	e.opts.MemoryBytes = 24 << 10
	chunk := int64(27) // six chunks, three waves
	if last {
		chunk = 40 // four chunks, two waves
	}
	e.chunked(chunk)
	e.drain()
	e.step(10)
	e.drain()
	e.wave(nil, nil)
	e.apply()
	var mu sync.Mutex
	underRead := func() {
		mu.Lock()
		defer mu.Unlock()
		e.step(2)
		e.drain()
	}
	e.step(10)
	e.drain()
	if done := e.wave(underRead, nil); done != last {
		t.Fatalf("after two waves the snapshot is done=%v, want %v", done, last)
	}
	e.step(10)
	e.drain()
	return e
}

func testKilledApply(t *testing.T, e *env, applied bool) {
	backend := e.lake.Backend
	want := e.sourceState()
	// check compares silver with the source: equal, or within it while a chunked snapshot
	// is still open.
	check := func(when string) {
		t.Helper()
		if e.position().OpenSnapshot == "" {
			e.assertSilverEquals(want, when)
		} else {
			e.assertSilverWithinSource(when)
		}
	}
	base := e.silver
	// Each apply runs on its own copy of silver as the environment left it (none, or the
	// applied one), so the world is built once.
	fresh := func(name string) {
		e.silver = e.cloneTable(base, name)
	}
	clean := &deltatest.Faults{}
	fresh("silver-clean")
	e.lake.Faults = clean
	res := e.apply()
	e.lake.Faults = nil
	if res.Commits < 2 {
		t.Fatalf("clean apply: %+v, want several key ranges", res)
	}
	if applied && res.DeletionVectors == 0 {
		t.Fatalf("clean apply: %+v, want deletion vectors written", res)
	}
	check("clean apply")
	wantKeyed := e.silverKeyed()
	ops := clean.Ops()
	every := 1
	if testing.Short() || backend == testlake.AWS {
		every = 5
	}
	plans := testlake.KillPlans(ops, every)
	t.Logf("a clean apply makes %d external calls; %d kill plans", len(ops), len(plans))
	for i, f := range plans {
		fresh(fmt.Sprintf("silver-%d", i))
		e.lake.Faults = f
		_, err := Apply(context.Background(), e.tables(), e.opts)
		if err == nil && f.Killed() {
			t.Errorf("kill at %d (after=%v) went unnoticed", f.KillAt, f.After)
		}
		e.lake.Faults = nil
		e.apply()
		check("rerun")
		if got := e.silverKeyed(); !maps.EqualFunc(got, wantKeyed, maps.Equal) {
			t.Errorf("silver after the rerun holds %d keys, the clean apply's %d, or other values", len(got), len(wantKeyed))
		}
		e.assertClustered()
		if p := e.position(); p.Pass != nil {
			t.Errorf("position after the rerun: %+v", p)
		}
		if t.Failed() {
			t.Fatalf("kill at call %d (after=%v, %s) did not converge", f.KillAt, f.After, ops[f.KillAt-1])
		}
	}
}
