package checkpoint

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
)

// The generation layout of docs/stream.md "Generations": no file is generation 0; an
// attempt is open until it fails or its generation is committed; the live generation is the
// highest committed; each generation's stream checkpoint lives under generations/<n>/ with
// app_id <app_id>.g<n>, apart from generation 0's.
func TestGenerationsLifecycle(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	root := New(st, "orders-v1")
	g, err := root.Generations(ctx)
	if err != nil || g.Live.Generation != 0 || g.Open() != nil || g.NextAttempt() != 1 {
		t.Fatalf("fresh: %+v, %v", g, err)
	}
	if _, _, _, _, ok := g.Last(); ok {
		t.Error("a fresh checkpoint has a last re-snapshot")
	}
	at := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC)
	a := Attempt{Generation: 1, Attempt: 1, Mode: ModeFull, From: off("0x0A", "2026-09-28T13:00:00.000"),
		MinLSN: lsn.MustParse("0x0F"), CaptureInstance: "dbo_orders", StartedAt: at}
	if err := root.OpenAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := root.OpenAttempt(ctx, a); err != nil {
		t.Errorf("the same attempt again (a lost answer): %v", err)
	}
	b := a
	b.MinLSN = lsn.MustParse("0x10")
	var cs *ConcurrentStreamError
	if err := root.OpenAttempt(ctx, b); !errors.As(err, &cs) {
		t.Errorf("another attempt under the same number: %v, want ConcurrentStreamError", err)
	}
	g, _ = root.Generations(ctx)
	if o := g.Open(); o == nil || o.Attempt != 1 || o.From != a.From || o.LostFromTS() == nil || !o.LostFromTS().Equal(a.From.CommitTS) {
		t.Fatalf("open attempt: %+v", g.Open())
	}
	// It fails: no longer open, counts as the last event; the next attempt is 2.
	if err := root.FailAttempt(ctx, 1, 1, Failure{FailedAt: at.Add(time.Hour), Reason: "outlived"}); err != nil {
		t.Fatal(err)
	}
	if err := root.FailAttempt(ctx, 1, 1, Failure{FailedAt: at.Add(2 * time.Hour), Reason: "again"}); err != nil {
		t.Errorf("a second failure of the same attempt: %v", err)
	}
	g, _ = root.Generations(ctx)
	kind, gen, att, last, ok := g.Last()
	if g.Open() != nil || g.NextAttempt() != 2 || !ok || kind != "failed" || gen != 1 || att != 1 || !last.Equal(at.Add(time.Hour)) {
		t.Fatalf("after the failure: %+v; last %s %d %d %s %v", g, kind, gen, att, last, ok)
	}
	a2 := a
	a2.Attempt, a2.Mode = 2, ModeChunked
	if err := root.OpenAttempt(ctx, a2); err != nil {
		t.Fatal(err)
	}
	gs := GenerationState{Generation: 1, Attempt: 2, AppID: GenerationAppID("orders-v1", 1), Mode: ModeChunked,
		Snapshot: off("0x20", "2026-09-28T15:00:00.000"), From: a.From, At: at.Add(3 * time.Hour)}
	if err := root.CommitGeneration(ctx, gs); err != nil {
		t.Fatal(err)
	}
	gs2 := gs
	gs2.At = gs.At.Add(time.Minute)
	if err := root.CommitGeneration(ctx, gs2); err != nil {
		t.Errorf("the same commit again, later: %v", err)
	}
	gs3 := gs
	gs3.Snapshot = off("0x21", "")
	if err := root.CommitGeneration(ctx, gs3); !errors.As(err, &cs) {
		t.Errorf("another snapshot for generation 1: %v, want ConcurrentStreamError", err)
	}
	g, err = root.Generations(ctx)
	if err != nil || g.Live.Generation != 1 || g.Live.Snapshot != gs.Snapshot || len(g.Attempts) != 0 || g.Open() != nil {
		t.Fatalf("after the commit: %+v, %v", g, err)
	}
	if kind, gen, _, last, _ := g.Last(); kind != "resnapshot" || gen != 1 || !last.Equal(gs.At) {
		t.Errorf("last: %s %d %s", kind, gen, last)
	}

	// Generation 1's stream checkpoint is apart from generation 0's.
	g0, g1 := root.Generation(0), root.Generation(1)
	if g0 != root || g1.AppID() != "orders-v1.g1" || g1.Store().URL() != st.URL()+"/generations/1" {
		t.Fatalf("generation checkpoints: %q %q", g1.AppID(), g1.Store().URL())
	}
	if err := g0.WriteOffsets(ctx, Batch{ID: 0, End: off("0x0A", "")}); err != nil {
		t.Fatal(err)
	}
	s1, err := g1.Resume(ctx)
	if err != nil || !s1.Fresh() {
		t.Fatalf("generation 1 sees generation 0's batch: %+v, %v", s1, err)
	}
	if err := g1.WriteOffsets(ctx, Batch{ID: 0, End: off("0x21", "")}); err != nil {
		t.Fatal(err)
	}
	if err := g1.WriteCommit(ctx, Commit{ID: 0}); err != nil {
		t.Fatal(err)
	}
	s1, _ = g1.Resume(ctx)
	if s1.Last == nil || s1.Last.AppID != "orders-v1.g1" || s1.Next != 1 {
		t.Errorf("generation 1 resume: %+v", s1)
	}
	if s0, _ := g0.Resume(ctx); s0.Pending == nil || s0.Pending.ID != 0 {
		t.Errorf("generation 0 resume: %+v", s0)
	}
	// Generation 2's attempts are listed once generation 1 is live.
	if err := root.OpenAttempt(ctx, Attempt{Generation: 2, Attempt: 1, Mode: ModeFull, StartedAt: at}); err != nil {
		t.Fatal(err)
	}
	if g, _ := root.Generations(ctx); g.Open() == nil || g.Open().Generation != 2 {
		t.Errorf("generation 2's attempt: %+v", g)
	}
}

// A generation's checkpoint is a store under the root's prefix: the storage contract holds
// through it.
func TestGenerationStoreContract(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return &prefixStore{Store: newStore(t), prefix: GenerationPrefix(3)}
	})
}

// A Checkpoint that read the generations once (a warm process) reads them again with one
// LIST of generations/<live+1>/ and nothing else while nothing changed, and still sees
// every change another process makes: an attempt opened, its failure, the next attempt,
// the generation's commit. Each answer equals a cold read's.
func TestGenerationsWarmReadIsOneList(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	f := &deltatest.Faults{}
	warm := New(f.Store(st), "orders-v1")
	other := New(st, "orders-v1") // the recover machine, another stream process
	read := func(step string) (Generations, []string) {
		t.Helper()
		n := len(f.Ops())
		g, err := warm.Generations(ctx)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		cold, err := New(st, "orders-v1").Generations(ctx)
		if err != nil || !reflect.DeepEqual(g, cold) {
			t.Fatalf("%s: warm %+v, cold %+v (%v)", step, g, cold, err)
		}
		return g, f.Ops()[n:]
	}
	onlyList := func(step string, ops []string, prefix string) {
		t.Helper()
		if len(ops) != 1 || ops[0] != "store.List "+prefix {
			t.Errorf("%s: requests %q, want one LIST of %s", step, ops, prefix)
		}
	}
	g, ops := read("fresh")
	onlyList("fresh", ops, "generations/1/")
	if g.Live.Generation != 0 || len(g.Attempts) != 0 {
		t.Fatalf("fresh: %+v", g)
	}
	_, ops = read("warm, nothing new")
	onlyList("warm, nothing new", ops, "generations/1/")

	at := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC)
	a := Attempt{Generation: 1, Attempt: 1, Mode: ModeFull, From: off("0x0A", ""), StartedAt: at}
	if err := other.OpenAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	if g, ops = read("attempt opened elsewhere"); g.Open() == nil || g.Open().Attempt != 1 || len(ops) != 2 {
		t.Fatalf("attempt opened elsewhere: %+v, requests %q (want the LIST and one GET)", g, ops)
	}
	if _, ops = read("warm, attempt open"); len(ops) != 1 {
		t.Errorf("warm, attempt open: requests %q", ops)
	}
	if _, _, err := other.ClaimAttempt(ctx, 1, 1, "exec-1", false, at); err != nil {
		t.Fatal(err)
	}
	_, ops = read("claimed elsewhere")
	onlyList("claimed elsewhere (a claim changes nothing Generations says)", ops, "generations/1/")
	if err := other.FailAttempt(ctx, 1, 1, Failure{FailedAt: at.Add(time.Hour), Reason: "outlived"}); err != nil {
		t.Fatal(err)
	}
	if g, ops = read("failed elsewhere"); g.Open() != nil || len(g.Attempts) != 1 || g.Attempts[0].Failed == nil || len(ops) != 2 {
		t.Fatalf("failed elsewhere: %+v, requests %q (want the LIST and the failure's GET)", g, ops)
	}
	a.Attempt = 2
	if err := other.OpenAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	if g, _ = read("second attempt"); g.Open() == nil || g.Open().Attempt != 2 || g.NextAttempt() != 3 {
		t.Fatalf("second attempt: %+v", g)
	}
	gs := GenerationState{Generation: 1, Attempt: 2, AppID: GenerationAppID("orders-v1", 1), Mode: ModeFull,
		Snapshot: off("0x20", ""), From: a.From, At: at.Add(3 * time.Hour)}
	if err := other.CommitGeneration(ctx, gs); err != nil {
		t.Fatal(err)
	}
	if err := other.Generation(1).WriteOffsets(ctx, Batch{ID: 0, End: off("0x21", "")}); err != nil {
		t.Fatal(err)
	}
	if g, _ = read("committed elsewhere"); g.Live.Generation != 1 || g.Live.Snapshot != gs.Snapshot || len(g.Attempts) != 0 {
		t.Fatalf("committed elsewhere: %+v", g)
	}
	_, ops = read("warm in generation 1")
	onlyList("warm in generation 1", ops, "generations/2/")

	// Our own attempt shows at once too.
	if err := warm.OpenAttempt(ctx, Attempt{Generation: 2, Attempt: 1, Mode: ModeChunked, StartedAt: at}); err != nil {
		t.Fatal(err)
	}
	if g, _ = read("own attempt"); g.Open() == nil || g.Open().Generation != 2 || g.Open().Mode != ModeChunked {
		t.Fatalf("own attempt: %+v", g)
	}
	// The caller's copy is its own.
	g.Attempts = append(g.Attempts[:0], AttemptState{})
	if g, _ = read("after the caller changed its copy"); g.Open() == nil || g.Open().Generation != 2 {
		t.Fatalf("the memory changed through a caller's copy: %+v", g)
	}
	if g1 := warm.Generation(1); warm.Generation(1) != g1 {
		t.Error("Generation(1) is a new Checkpoint on each call: its memory of its own writes is lost")
	}
}

// Attempt and claim files are numbered as the checkpoint writes them (strconv.Itoa): a
// stray name of another form beside them ("+9.json", "09.json", "+1.failed.json") is no
// attempt, failure or claim. strconv.Atoi read "+9" as 9, and the read of "9.json" that
// followed failed (not found), so one stray file stopped Generations and the claims.
func TestStrayNumberedNamesAreNoAttemptsOrClaims(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	root := New(st, "orders-v1")
	at := time.Date(2026, 9, 28, 14, 0, 0, 0, time.UTC)
	if err := root.OpenAttempt(ctx, Attempt{Generation: 1, Attempt: 1, Mode: ModeFull, From: off("0x0A", ""), StartedAt: at}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{attemptsDir(1) + "+9.json", attemptsDir(1) + "09.json", attemptsDir(1) + "+1.failed.json",
		attemptsDir(1) + "01.failed.json", claimsDir(1, 1) + "+9.json", claimsDir(1, 1) + "07.json"} {
		if err := st.PutIfAbsent(ctx, k, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	g, err := root.Generations(ctx)
	if err != nil || len(g.Attempts) != 1 || g.Open() == nil || g.Open().Attempt != 1 || g.NextAttempt() != 2 {
		t.Fatalf("generations beside stray names: %+v, %v; want attempt 1 open, next 2", g, err)
	}
	if _, ok, err := root.ClaimAttempt(ctx, 1, 1, "exec-1", false, at); err != nil || !ok {
		t.Fatalf("claim beside stray names: %v, %v", ok, err)
	}
	if cl, k, err := root.ClaimHolder(ctx, 1, 1); err != nil || cl.Execution != "exec-1" || k != 1 {
		t.Errorf("claim holder: %+v, claim %d, %v; want exec-1's claim 1", cl, k, err)
	}
}
