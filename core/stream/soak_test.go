package stream

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// soakSeeds runs the long soak: that many seeds per soak test, e.g.
//
//	go test ./core/stream -run TestSoak -soak.seeds 200 -timeout 1h
//
// Without it a run (make test, CI) takes a bounded few seeds of each (soakSeedsLocal, ...,
// about half a minute), and -short one of each.
var soakSeeds = flag.Int("soak.seeds", 0, "seeds per soak test (0: the bounded default; the long soak: 200)")

// Seeds per soak test in a default run: local disk, the emulators (gofakes3 + dynalite),
// and purges ahead of the stream.
const (
	soakSeedsLocal      = 3
	soakSeedsAWS        = 1
	soakSeedsPurge      = 2
	soakSeedsResnapshot = 2
	soakSeedsChunked    = 2
)

// seeds is how many seeds a soak test runs: -soak.seeds, else def, else 1 with -short.
func seeds(def int) int {
	switch {
	case *soakSeeds > 0:
		return *soakSeeds
	case testing.Short():
		return 1
	}
	return def
}

// Invariant 5 (docs/design.md §5) over the long game: three tables (int, composite and
// case-insensitive string keys) written by a live workload and streamed by many
// invocations, each killed at a random external call (before the call lands or after, its
// answer lost) or not at all, with random batch shapes (maxCommitsPerBatch,
// numPartitions, rows per range, batches per invocation), CDC cleanup behind the committed
// offset (between invocations and underneath one), idle entries, one-transaction bursts
// of thousands of rows, a transaction held open across invocations, and capture-instance
// switches (a new instance, sometimes after an added column; the old one disabled once the
// stream is past the new one's start). After a clean drain,
// bronze holds every change exactly once, its state equals the table and the facts and
// checkpoint agree (soak_check_test.go). Odd seeds start from earliest, even seeds from a
// standalone snapshot taken over existing rows.
func TestSoakExactlyOnce(t *testing.T) {
	runSoakSeeds(t, testlake.Local, soakSeedsLocal)
}

// The same on S3 (gofakes3) with the DynamoDB log store (dynalite), fewer seeds.
func TestSoakExactlyOnceEmulators(t *testing.T) {
	runSoakSeeds(t, testlake.AWS, soakSeedsAWS)
}

// Retention cleanup that purges changes the stream has not read yet, now and then while an
// invocation reads: the stream stops with DataLossError (failOnDataLoss defaults to true)
// or has read them all; it never loses a change silently (invariant 3). Until it stops,
// and after, bronze holds no duplicate and no change the source never had.
func TestSoakPurgeAheadIsNeverSilent(t *testing.T) {
	for seed := uint64(1); seed <= uint64(seeds(soakSeedsPurge)); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runSoak(t, testlake.Local, seed, true)
			if t.Failed() {
				t.Logf("replay: go test ./core/stream -run 'TestSoakPurgeAheadIsNeverSilent/seed=%d$' -v", seed)
			}
		})
	}
}

// The same purges ahead of the stream with on_data_loss "resnapshot" (interval 0): each
// loss opens the next generation, the recover steps are killed at a random external call
// (before it lands or after, its answer lost) and run again until they commit, and the
// stream goes on in the new generation. After a clean drain, bronze holds no duplicate and
// no change the source never had, every change after the live generation's snapshot,
// rebuilds (from the newest snapshot) to the table, and each generation's facts and
// checkpoint are complete, with one resnapshot row per generation
// (checkResnapshotted). Odd seeds start from earliest, even seeds from a snapshot.
func TestSoakPurgeAheadResnapshots(t *testing.T) {
	for seed := uint64(1); seed <= uint64(seeds(soakSeedsResnapshot)); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runSoakMode(t, testlake.Local, seed, soakResnapshot)
			if t.Failed() {
				t.Logf("replay: go test ./core/stream -run 'TestSoakPurgeAheadResnapshots/seed=%d$' -v", seed)
			}
		})
	}
}

// The same with snapshot "chunked": each loss opens the next generation with a chunked
// open at S in the stream (killed at a random external call like every invocation), the
// stream goes on from S at once, and backfill calls, killed at a random external call
// too, read the snapshot in waves between the invocations; a loss while a chunked
// snapshot is open supersedes it. Even seeds start with a chunked bootstrap, odd ones from
// earliest. After a clean drain and a backfill to done, bronze rebuilds from the live
// generation's completed snapshot to the table, and each generation's facts are complete
// (checkResnapshotted).
func TestSoakPurgeAheadResnapshotsChunked(t *testing.T) {
	for seed := uint64(1); seed <= uint64(seeds(soakSeedsChunked)); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runSoakMode(t, testlake.Local, seed, soakResnapshotChunked)
			if t.Failed() {
				t.Logf("replay: go test ./core/stream -run 'TestSoakPurgeAheadResnapshotsChunked/seed=%d$' -v", seed)
			}
		})
	}
}

func runSoakSeeds(t *testing.T, backend testlake.Backend, n int) {
	for seed := uint64(1); seed <= uint64(seeds(n)); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runSoak(t, backend, seed, false)
			if t.Failed() {
				t.Logf("replay: go test ./core/stream -run 'TestSoakExactlyOnce%s/seed=%d$' -v", map[testlake.Backend]string{testlake.Local: "", testlake.AWS: "Emulators"}[backend], seed)
			}
		})
	}
}

// soak is one seed's world.
type soak struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	db      *cdcsim.DB
	gen     *workload.Generator
	streams []*soakStream
	// steps counts the invocations and events, for failure messages.
	steps int
	stats soakStats
	// open is a transaction left open across rounds (docs/reference/known-failures.md §A1:
	// it writes before others commit and commits after them), nil when none; openFor counts
	// its remaining rounds.
	open    *cdcsim.Txn
	openFor int
	openKey int64
	// purgeAhead makes some cleanups underneath an invocation purge unread changes;
	// resnapshot recovers from them (on_data_loss "resnapshot") instead of stopping;
	// chunked takes the snapshots in chunked mode.
	purgeAhead, resnapshot, chunked bool
	// superseded counts the chunked snapshots a loss superseded before they completed
	// (checkChunkedGeneration).
	superseded int
}

// soakMode is what a soak does about data loss.
type soakMode int

const (
	// soakNoLoss never purges unread changes.
	soakNoLoss soakMode = iota
	// soakPurgeAhead purges some; the stream stops with DataLossError.
	soakPurgeAhead
	// soakResnapshot purges some; the stream re-snapshots (on_data_loss "resnapshot").
	soakResnapshot
	// soakResnapshotChunked is soakResnapshot with snapshot "chunked".
	soakResnapshotChunked
)

// soakStats counts what a seed did (logged, and checked so the test cannot go idle).
type soakStats struct {
	Invocations, Kills, Cleanups, Idles, Bursts, Switches, Disables, LongTxns, CleanupsUnderneath, DataLoss int
	PurgesAhead, Resnapshots, RecoverKills                                                                  int
	Backfills, BackfillKills                                                                                int
}

// soakStream is one table's stream and the truth it is checked against.
type soakStream struct {
	*env
	table string
	keys  []string
	// snap is the snapshot's LSN (zero without one): bronze's change rows are those above it.
	snap lsn.LSN
	// truth holds every change row the source ever had in the spans the stream reads,
	// harvested before cleanup or a disable deletes any.
	truth map[string]changeRow
	// lastCalls is the external calls of the last invocation, to draw kill points from.
	lastCalls int
	// versions counts the capture instances enabled (names dbo_<table>_v<n>).
	versions, added int
	// lost is set when the stream stopped with DataLossError (purgeAhead only).
	purgeAhead, lost bool
	// resnapshot recovers from losses; recoverCalls is the external calls of the last
	// recovery, to draw kill points from.
	resnapshot   bool
	recoverCalls int
	// backfillCalls is the external calls of the last backfill call (chunked).
	backfillCalls int
	soak          *soak
}

func runSoak(t *testing.T, backend testlake.Backend, seed uint64, purgeAhead bool) {
	mode := soakNoLoss
	if purgeAhead {
		mode = soakPurgeAhead
	}
	runSoakMode(t, backend, seed, mode)
}

func runSoakMode(t *testing.T, backend testlake.Backend, seed uint64, mode soakMode) {
	s := &soak{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x50a4)), purgeAhead: mode != soakNoLoss,
		resnapshot: mode == soakResnapshot || mode == soakResnapshotChunked, chunked: mode == soakResnapshotChunked}
	s.db = cdcsim.New(cdcsim.Config{Seed: seed})
	s.gen = workload.New(s.db, workload.Config{Seed: seed, TxnSize: 1 + s.rng.IntN(6)})
	defs := []workload.TableDef{workload.Orders(), workload.OrderLines(), workload.Customers()}
	if err := s.gen.Create(defs...); err != nil {
		t.Fatal(err)
	}
	lake := testlake.New(t, backend)
	withSnapshot := seed%2 == 0
	for _, d := range defs {
		s.streams = append(s.streams, s.newStream(lake, d, withSnapshot))
	}
	s.step(20 + s.rng.IntN(60))
	if withSnapshot && !s.chunked { // a chunked bootstrap is the stream's first run
		for _, st := range s.streams {
			// A standalone snapshot of an empty table is not found by the stream
			// (TestSoakRegressionEmptyStandaloneSnapshot, soak_bugs_test.go): keep a row.
			if n, err := s.db.RowCount(st.table); err != nil || n == 0 {
				if err := s.gen.Load(st.table, 3, 3); err != nil {
					t.Fatal(err)
				}
			}
			st.snapshot()
		}
	}
	rounds := 25 + s.rng.IntN(20)
	for round := 0; round < rounds; round++ {
		s.round()
		if t.Failed() {
			t.Fatalf("seed %d failed at step %d", seed, s.steps)
		}
	}
	t.Logf("seed %d (snapshot %v): %+v, %d transactions", seed, withSnapshot, s.stats, s.gen.Stats.Transactions)
	// A purgeAhead seed may stop all its streams early (DataLossError), before any kill.
	if !s.purgeAhead && (s.stats.Kills == 0 || s.stats.Invocations < 5) || s.stats.Invocations == 0 {
		t.Errorf("seed %d exercised too little: %+v", seed, s.stats)
	}
	if s.resnapshot && !s.chunked && s.stats.Resnapshots == 0 {
		t.Errorf("seed %d recovered from no loss: %+v", seed, s.stats)
	}
	if s.open != nil {
		s.openFor = 1
		s.longTxn()
	}
	if s.chunked {
		// One more loss, found by the drain, so that every seed recovers at least once.
		st := s.streams[s.rng.IntN(len(s.streams))]
		m, err := s.db.MaxLSN(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s.step(5)
		st.cleanupAt(m)
		s.stats.PurgesAhead++
	}
	for _, st := range s.streams {
		st.lake.Faults, st.lake.WrapSource = nil, nil
		st.spec.Options.MaxCommitsPerBatch = nil // the default: few batches
		st.drain()
		st.harvest()
		if s.resnapshot {
			st.checkResnapshotted()
		} else {
			st.check()
		}
		if t.Failed() {
			t.Fatalf("seed %d: stream of %s did not converge (%d steps)", seed, st.table, s.steps)
		}
	}
	if s.chunked {
		// A loss an invocation's cleanup underneath left may be found by the drain.
		gens := 0
		for _, st := range s.streams {
			gens += st.liveCheckpointGeneration()
		}
		if gens == 0 {
			t.Errorf("seed %d recovered from no loss: %+v", seed, s.stats)
		}
		t.Logf("seed %d: %d generations opened in all, %d while the stream ran, %d chunked snapshots superseded before they completed",
			seed, gens, s.stats.Resnapshots, s.superseded)
	}
}

func (s *soak) newStream(lake *testlake.Lake, d workload.TableDef, withSnapshot bool) *soakStream {
	name := d.Spec.Name
	spec := &config.Spec{
		AppID:  "soak-" + name,
		Source: config.Source{DSN: "sqlserver://sim@localhost?database=sim", CaptureInstance: "dbo_" + name},
	}
	lake.Use(spec) // the facts table is shared by the three streams
	spec.Bronze, spec.Checkpoint = lake.URL(name+"/bronze"), lake.URL(name+"/checkpoint")
	if withSnapshot {
		spec.Bootstrap = true
	}
	if s.resnapshot {
		zero := 0.0
		spec.OnDataLoss, spec.ResnapshotIntervalDays = config.OnDataLossResnapshot, &zero
	}
	if s.chunked {
		// Small chunks, one round a wave, no throttle; SNAPSHOT isolation, since a chunked
		// open's key seeks and the waves would wait (READ COMMITTED) for the transaction
		// this goroutine holds open.
		cr, zero := int64(20+s.rng.IntN(60)), 0.0
		spec.Snapshot, spec.ChunkRows, spec.MinHeadroomHours, spec.TargetWaveSeconds = config.SnapshotChunked, &cr, &zero, &zero
		spec.Isolation = config.IsolationSnapshot
	}
	spec.Defaults()
	if err := spec.Validate(); err != nil {
		s.t.Fatal(err)
	}
	e := &env{t: s.t, db: s.db, spec: spec, lake: lake}
	return &soakStream{env: e, purgeAhead: s.purgeAhead && !s.resnapshot, resnapshot: s.resnapshot, soak: s,
		table: name, keys: d.Spec.Key, truth: map[string]changeRow{}, lastCalls: 40, recoverCalls: 80, backfillCalls: 60}
}

// snapshot takes a standalone snapshot of the stream's table into bronze.
func (st *soakStream) snapshot() {
	off, err := snapshot.Run(st.t.Context(), st.standaloneDeps())
	if err != nil {
		st.t.Fatalf("snapshot of %s: %v", st.table, err)
	}
	st.snap = off.LSN
}

// step runs n workload transactions.
func (s *soak) step(n int) {
	if err := s.gen.Step(n); err != nil {
		s.t.Fatalf("seed %d: workload: %v", s.seed, err)
	}
}

// round is some workload, then one event: mostly an invocation, sometimes cleanup, an
// idle entry, a burst or a capture-instance switch.
func (s *soak) round() {
	s.steps++
	s.step(s.rng.IntN(30))
	s.longTxn()
	st := s.streams[s.rng.IntN(len(s.streams))]
	if s.rng.IntN(3) == 0 && st.switchInstance(true) == "disable" {
		s.stats.Disables++
		return
	}
	if s.chunked && s.rng.IntN(4) == 0 {
		st.backfillKilled() // the backfill machine, beside the stream
		return
	}
	switch r := s.rng.IntN(100); {
	case r < 70:
		s.invoke(st)
	case r < 80:
		if s.resnapshot && s.rng.IntN(3) == 0 {
			// Cleanup ahead of the stream, between invocations: the next one finds its
			// start purged.
			m, err := s.db.MaxLSN(context.Background())
			if err != nil {
				s.t.Fatal(err)
			}
			st.cleanupAt(m)
			s.stats.PurgesAhead++
		} else if st.cleanupBehind() {
			s.stats.Cleanups++
		} else {
			s.invoke(st)
		}
	case r < 87:
		s.db.Idle()
		s.stats.Idles++
	case r < 90:
		n := 1000 + s.rng.IntN(2000)
		if err := s.gen.Load(st.table, n, n); err != nil {
			s.t.Fatalf("burst: %v", err)
		}
		s.stats.Bursts++
	default:
		if s.open != nil { // DDL waits for open transactions; one goroutine would hang
			s.invoke(st)
			return
		}
		switch st.switchInstance(false) {
		case "enable":
			s.stats.Switches++
		case "disable":
			s.stats.Disables++
		default:
			s.invoke(st)
		}
	}
}

// longTxn writes in the open transaction, commits it when its time is up, or sometimes
// opens one: inserts of keys the workload never makes, updated again in the same
// transaction.
func (s *soak) longTxn() {
	if s.open == nil {
		if s.rng.IntN(8) != 0 {
			return
		}
		s.open, s.openFor = s.db.Begin(), 1+s.rng.IntN(4)
		s.stats.LongTxns++
	}
	for i := 0; i < 1+s.rng.IntN(3); i++ {
		s.openKey++
		id := 50_000_000 + s.openKey
		if _, err := s.open.Insert("orders", cdcsim.Row{"id": id, "status": "open"}); err != nil {
			s.t.Fatalf("seed %d: long transaction: %v", s.seed, err)
		}
		if err := s.open.Update("orders", []any{id}, cdcsim.Row{"status": "longtxn"}); err != nil {
			s.t.Fatalf("seed %d: long transaction: %v", s.seed, err)
		}
	}
	if s.openFor--; s.openFor <= 0 {
		if _, err := s.open.Commit(); err != nil {
			s.t.Fatalf("seed %d: commit the long transaction: %v", s.seed, err)
		}
		s.open = nil
	}
}

// invoke runs one invocation of st with random batch shapes and, mostly, a kill at a
// random external call.
func (s *soak) invoke(st *soakStream) {
	if st.lost {
		return // stopped until a resnapshot
	}
	mc := []int{1, 2, 5, 20, 200}[s.rng.IntN(5)]
	st.spec.Options.MaxCommitsPerBatch = &mc
	st.spec.Options.NumPartitions = 1 + s.rng.IntN(4)
	opts := Options{MinRowsPerRange: []int64{0, 1, 7, 100}[s.rng.IntN(4)], MaxBatches: s.rng.IntN(4)}
	if mc < 20 && opts.MaxBatches == 0 {
		opts.MaxBatches = 6 // a batch per commit without a bound is slow, not more telling
	}
	f := &deltatest.Faults{}
	if s.rng.IntN(4) > 0 {
		f.KillAt = 1 + s.rng.IntN(st.lastCalls+st.lastCalls/2+1)
		f.After = s.rng.IntN(2) == 0
	}
	st.lake.Faults = f
	underneath := false
	if s.purgeAhead && s.rng.IntN(8) == 0 {
		// Cleanup up to max_lsn while the invocation reads: changes it has not read go.
		st.lake.WrapSource = func(x source.Source) source.Source {
			return &cleanupSource{Source: x, before: func() {
				if !underneath {
					underneath = true
					m, err := st.db.MaxLSN(context.Background())
					if err != nil {
						st.t.Fatal(err)
					}
					st.cleanupAt(m)
				}
			}}
		}
	} else if mark, ok := st.committed(); ok && !mark.IsZero() && s.rng.IntN(5) == 0 {
		// Retention cleanup runs while the invocation reads, behind the offset committed
		// before it started (its batches read after that).
		st.lake.WrapSource = func(x source.Source) source.Source {
			return &cleanupSource{Source: x, before: func() {
				if !underneath {
					underneath = true
					st.cleanupAt(mark)
				}
			}}
		}
	}
	genBefore := st.liveCheckpointGeneration()
	res, err := st.run(opts)
	s.stats.Invocations++
	if s.chunked {
		s.stats.Resnapshots += st.liveCheckpointGeneration() - genBefore
	}
	if f.Killed() {
		s.stats.Kills++
	}
	if underneath {
		s.stats.CleanupsUnderneath++
	}
	st.lake.Faults, st.lake.WrapSource = nil, nil
	what := fmt.Sprintf("seed %d step %d: %s invocation (kill at %d of %d calls, after=%v, maxCommits %d, partitions %d, %+v)",
		s.seed, s.steps, st.table, f.KillAt, f.Calls(), f.After, mc, st.spec.Options.NumPartitions, opts)
	var dl *DataLossError
	switch {
	case st.purgeAhead && errors.As(err, &dl):
		st.lost = true
		s.stats.DataLoss++
	case f.Killed() && err == nil:
		ops := f.Ops()
		s.t.Errorf("%s: the kill at %s went unnoticed", what, ops[f.KillAt-1])
	case f.Killed() && !errors.Is(err, deltatest.ErrKilled):
		s.t.Errorf("%s: killed, but the error does not say so: %v", what, err)
	case !f.Killed() && err != nil:
		s.t.Errorf("%s: %v", what, err)
	case err == nil && res.Outcome == OutcomeResnapshotRequired:
		if !s.resnapshot || s.chunked {
			s.t.Errorf("%s: outcome %s without on_data_loss resnapshot and full snapshots", what, res.Outcome)
		}
		st.recoverKilled()
	}
	if !f.Killed() && res.Outcome == "" {
		st.lastCalls = max(f.Calls(), 10)
	}
}

// recoverKilled runs the recover steps of an open re-snapshot, mostly killed at a random
// external call (before it lands or after), then again without faults until they commit.
func (st *soakStream) recoverKilled() {
	s := st.soak
	if s.open != nil {
		// The snapshot reads READ COMMITTED and would wait for the transaction this
		// goroutine holds open: commit it first (a real one commits by itself).
		s.openFor = 1
		s.longTxn()
	}
	f := &deltatest.Faults{}
	if s.rng.IntN(4) > 0 {
		f.KillAt = 1 + s.rng.IntN(st.recoverCalls+st.recoverCalls/2+1)
		f.After = s.rng.IntN(2) == 0
	}
	st.lake.Faults = f
	_, err := Recover(st.t.Context(), st.recoverDeps())
	st.lake.Faults = nil
	switch {
	case f.Killed() && err == nil:
		st.t.Errorf("seed %d step %d: %s recovery killed at %d (after=%v) went unnoticed", s.seed, s.steps, st.table, f.KillAt, f.After)
	case f.Killed():
		s.stats.RecoverKills++
		if _, err := Recover(st.t.Context(), st.recoverDeps()); err != nil {
			st.t.Fatalf("seed %d step %d: %s recovery after a kill at %d (after=%v): %v", s.seed, s.steps, st.table, f.KillAt, f.After, err)
		}
	case err != nil:
		st.t.Fatalf("seed %d step %d: %s recovery: %v", s.seed, s.steps, st.table, err)
	default:
		st.recoverCalls = max(f.Calls(), 10)
	}
	s.stats.Resnapshots++
}

// backfillKilled is one backfill call of a chunked stream (1 to 3 waves), mostly killed at
// a random external call (before it lands or after); the next call is its rerun.
func (st *soakStream) backfillKilled() {
	s := st.soak
	p := snapshot.ParamsOf(st.spec)
	p.MaxWaves = 1 + s.rng.IntN(3)
	f := &deltatest.Faults{}
	if s.rng.IntN(3) > 0 {
		f.KillAt = 1 + s.rng.IntN(st.backfillCalls+st.backfillCalls/2+1)
		f.After = s.rng.IntN(2) == 0
	}
	st.lake.Faults = f
	bs, err := snapshot.Backfill(st.t.Context(), st.backfillDeps(), p)
	st.lake.Faults = nil
	s.stats.Backfills++
	what := fmt.Sprintf("seed %d step %d: %s backfill (kill at %d of %d calls, after=%v)", s.seed, s.steps, st.table, f.KillAt, f.Calls(), f.After)
	switch {
	case f.Killed() && err == nil:
		st.t.Errorf("%s: the kill went unnoticed", what)
	case f.Killed() && !errors.Is(err, deltatest.ErrKilled):
		st.t.Errorf("%s: killed, but the error does not say so: %v", what, err)
	case f.Killed():
		s.stats.BackfillKills++
	case err != nil:
		st.t.Errorf("%s: %v", what, err)
	default:
		switch bs.State {
		case snapshot.StateDone, snapshot.StateRunning, snapshot.StateNoSnapshot:
		default:
			st.t.Errorf("%s: state %s (%s)", what, bs.State, bs.Reason)
		}
		st.backfillCalls = max(f.Calls(), 10)
	}
}

// backfillDone calls the backfill of a chunked stream until done (or no_snapshot: no
// chunked snapshot was ever opened).
func (st *soakStream) backfillDone() {
	for range 1000 {
		bs, err := snapshot.Backfill(st.t.Context(), st.backfillDeps(), snapshot.ParamsOf(st.spec))
		if err != nil {
			st.t.Fatalf("backfill of %s: %v", st.table, err)
		}
		switch bs.State {
		case snapshot.StateDone, snapshot.StateNoSnapshot:
			return
		case snapshot.StateRunning:
		default:
			st.t.Fatalf("backfill of %s: %s (%s)", st.table, bs.State, bs.Reason)
		}
	}
	st.t.Fatalf("the backfill of %s never completed", st.table)
}

// liveCheckpointGeneration is the stream's live generation.
func (st *soakStream) liveCheckpointGeneration() int {
	g, err := st.checkpointRaw().Generations(st.t.Context())
	if err != nil {
		st.t.Fatalf("generations of %s: %v", st.table, err)
	}
	return g.Live.Generation
}

// drain runs clean invocations until caught up; DataLossError stops a purgeAhead stream. A
// chunked stream's backfill is then called until done, and the stream drained again.
func (st *soakStream) drain() {
	if st.soak.chunked {
		st.drainStream()
		st.backfillDone()
	}
	st.drainStream()
}

func (st *soakStream) drainStream() {
	for i := 0; i < 1000 && !st.lost; i++ {
		res, err := st.run(Options{})
		var dl *DataLossError
		switch {
		case errors.As(err, &dl) && st.purgeAhead:
			st.lost = true
		case err != nil:
			st.t.Fatalf("drain %s: %v", st.table, err)
		case res.Outcome == OutcomeResnapshotRequired && st.resnapshot:
			if st.soak.open != nil {
				st.t.Fatalf("drain %s: a transaction is still open", st.table)
			}
			if _, err := Recover(st.t.Context(), st.recoverDeps()); err != nil {
				st.t.Fatalf("drain %s: recover: %v", st.table, err)
			}
		case res.CaughtUp:
			return
		}
	}
	if !st.lost {
		st.t.Fatalf("%s never caught up", st.table)
	}
}

// committed is the end of the stream's last committed batch in its live generation (false
// when none).
func (st *soakStream) committed() (lsn.LSN, bool) {
	cs, err := st.liveCheckpoint().Resume(st.t.Context())
	if err != nil {
		st.t.Fatalf("resume %s: %v", st.table, err)
	}
	if cs.Last == nil {
		return lsn.Zero, false
	}
	return cs.Last.End.LSN, true
}

// cleanupBehind purges every instance of st's table below the committed offset: never a
// change the stream has not read (the test causes no data loss on purpose).
func (st *soakStream) cleanupBehind() bool {
	mark, ok := st.committed()
	if !ok || mark.IsZero() {
		return false
	}
	st.cleanupAt(mark)
	return true
}

// cleanupAt harvests the source's change rows, then purges every instance of st's table
// below mark.
func (st *soakStream) cleanupAt(mark lsn.LSN) {
	st.harvest()
	// sp_cdc_cleanup_change_table takes only a mapping entry's LSN as the mark: the last
	// commit at or before mark.
	c, ok, err := st.db.CommitAtOrBefore(st.t.Context(), mark)
	if err != nil {
		st.t.Fatalf("commit at or before %s: %v", mark, err)
	}
	if !ok {
		return
	}
	mark = c.LSN
	for _, ci := range st.instances() {
		if err := st.db.Cleanup(ci.Name, mark); err != nil {
			st.t.Fatalf("cleanup %s at %s: %v", ci.Name, mark, err)
		}
	}
}

// cleanupSource calls before ahead of each ReadChanges.
type cleanupSource struct {
	source.Source
	before func()
}

func (c *cleanupSource) ReadChanges(ctx context.Context, r source.ChangeRead) (source.Rows, error) {
	c.before()
	return c.Source.ReadChanges(ctx, r)
}

// switchInstance enables a newer capture instance (sometimes after adding a column), or,
// with two instances and the stream past the newer one's start, disables the older. It
// says which it did ("enable", "disable" or ""); onlyDisable enables nothing.
func (st *soakStream) switchInstance(onlyDisable bool) string {
	insts := st.instances()
	if len(insts) >= 2 {
		mark, ok := st.committed()
		if !ok || mark.Less(insts[1].StartLSN) {
			return ""
		}
		st.harvest()
		if err := st.db.DisableCapture(insts[0].Name); err != nil {
			st.t.Fatalf("disable %s: %v", insts[0].Name, err)
		}
		return "disable"
	}
	if onlyDisable {
		return ""
	}
	if st.versions%2 == 0 {
		st.added++
		c := source.Column{Name: fmt.Sprintf("extra%d", st.added), DataType: "varchar", MaxLength: 10, Nullable: true}
		if _, err := st.db.AddColumn(st.table, c); err != nil {
			st.t.Fatalf("add column: %v", err)
		}
	}
	st.versions++
	if _, err := st.db.EnableCapture(st.table, cdcsim.CaptureOptions{Name: fmt.Sprintf("dbo_%s_v%d", st.table, st.versions)}); err != nil {
		st.t.Fatalf("enable capture: %v", err)
	}
	return "enable"
}
