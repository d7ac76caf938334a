package dynamo_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/ddbcount"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// jointFixture is two tables (bronze and its facts table) on one DynamoDB table, each
// with a log store through one counted client that knows its newest entry: the state of
// a warm stream process before its check (docs/decisions/0019-dynamo-warm-check-one-request.md).
type jointFixture struct {
	t          *testing.T
	e          env
	c          *storagetest.Counter
	now        time.Time
	factsStore storage.Store
	// ddb is the client both counted log stores use, under the counter: a test may
	// replace what it calls (mid) before the first LatestWith.
	mid           *midClient
	bronze, facts *dynamo.LogStore
}

// midClient passes every request to the client it holds, which a test may swap.
type midClient struct {
	dynamo.Client
	mu  sync.Mutex
	bgi func(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

func (m *midClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	m.mu.Lock()
	f := m.bgi
	m.mu.Unlock()
	if f != nil {
		return f(ctx, in, o...)
	}
	return m.Client.BatchGetItem(ctx, in, o...)
}

func (m *midClient) setBatchGetItem(f func(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bgi = f
}

const notAnswered = -9

func newJointFixture(t *testing.T, commits int64) *jointFixture {
	t.Helper()
	srv := emulators.StartS3(t)
	f := &jointFixture{t: t, e: newEnv(t, srv), c: &storagetest.Counter{}, now: time.Unix(1_700_000_000, 0)}
	f.factsStore = s3store.New(srv.Client(), srv.Bucket(t), "warehouse/facts/")
	f.mid = &midClient{Client: f.e.ddb}
	f.bronze, f.facts = f.open(f.e.store, true), f.open(f.factsStore, true)
	f.write(f.bronze, 0, commits-1, 0)
	f.write(f.facts, 0, commits-1, 0)
	return f
}

// open is a log store on the fixture's DynamoDB table and clock: counted through mid, or
// another writer's (not counted).
func (f *jointFixture) open(st storage.Store, counted bool) *dynamo.LogStore {
	f.t.Helper()
	var ddb dynamo.Client = f.e.ddb
	if counted {
		ddb, st = ddbcount.Counting(f.mid, f.c), storagetest.NewCounting(st, f.c)
	}
	l, err := dynamo.New(ddb, st, dynamo.Options{Table: f.e.table, Scheme: "s3a", RetryDelay: time.Millisecond,
		Now: func() time.Time { return f.now }})
	if err != nil {
		f.t.Fatal(err)
	}
	return l
}

func (f *jointFixture) write(l *dynamo.LogStore, from, to int64, seed int) {
	f.t.Helper()
	for v := from; v <= to; v++ {
		if err := l.Write(f.t.Context(), v, logstoretest.Commit(seed, int(v))); err != nil {
			f.t.Fatalf("write %d: %v", v, err)
		}
	}
}

// latestWith runs first.LatestWith(second) and checks the versions (notAnswered: ok false)
// and the requests it made.
func (f *jointFixture) latestWith(step string, first, second logstore.LogStore, wantFirst, wantSecond int64, wantReqs map[string]int) {
	f.t.Helper()
	f.c.Reset()
	v, ov, ok, err := first.(logstore.Joint).LatestWith(f.t.Context(), second)
	if !ok {
		ov = notAnswered
	}
	if err != nil || v != wantFirst || ov != wantSecond {
		f.t.Errorf("%s: LatestWith = %d, %d (%d: not answered), %v; want %d, %d", step, v, ov, notAnswered, err, wantFirst, wantSecond)
	}
	if !maps.Equal(f.c.Counts(), wantReqs) {
		f.t.Errorf("%s: requests %s, want %v", step, summary(f.c), wantReqs)
	}
}

// latest is Latest of l with its requests (counted only for the fixture's own stores).
func (f *jointFixture) latest(step string, l *dynamo.LogStore, want int64, wantReqs map[string]int) {
	f.t.Helper()
	f.c.Reset()
	if v, err := l.Latest(f.t.Context()); err != nil || v != want {
		f.t.Errorf("%s: Latest = %d, %v; want %d", step, v, err, want)
	}
	if wantReqs != nil && !maps.Equal(f.c.Counts(), wantReqs) {
		f.t.Errorf("%s: Latest requests %s, want %v", step, summary(f.c), wantReqs)
	}
}

var (
	oneBatch   = map[string]int{"ddb.BatchGetItem": 1}
	batchQuery = map[string]int{"ddb.BatchGetItem": 1, "ddb.Query": 1}
	oneQuery   = map[string]int{"ddb.Query": 1}
)

// Another writer commits N+1 and N+2 between two checks: the first log store's Latest
// answers N+2 (its batch found N+1), the second is not answered and its own Latest finds
// N+2; the next check is one request again. As the first or the second of the pair.
func TestReview6OtherCommitsTwo(t *testing.T) {
	f := newJointFixture(t, 3)
	f.latestWith("warm", f.bronze, f.facts, 2, 2, oneBatch)

	f.write(f.open(f.e.store, false), 3, 4, 1)
	f.latestWith("bronze N+1, N+2 by another", f.bronze, f.facts, 4, 2, batchQuery)
	f.latestWith("then", f.bronze, f.facts, 4, 2, oneBatch)

	f.write(f.open(f.factsStore, false), 3, 4, 1)
	f.latestWith("facts N+1, N+2 by another", f.bronze, f.facts, 4, notAnswered, oneBatch)
	f.latest("facts Latest", f.facts, 4, oneQuery)
	f.latestWith("then", f.bronze, f.facts, 4, 4, oneBatch)

	// The facts table first, as core/stream's checkNotRewound asks.
	f.write(f.open(f.factsStore, false), 5, 6, 1)
	f.write(f.open(f.e.store, false), 5, 6, 1)
	f.latestWith("facts first, both moved", f.facts, f.bronze, 6, notAnswered, batchQuery)
	f.latest("bronze Latest", f.bronze, 6, oneQuery)
	f.latestWith("then", f.facts, f.bronze, 6, 6, oneBatch)
	if f.bronze.Replaced() != 0 || f.facts.Replaced() != 0 {
		t.Errorf("Replaced = %d, %d; want 0, 0", f.bronze.Replaced(), f.facts.Replaced())
	}
}

// A table started over (its files and entries deleted, written again) with fewer, as many
// or more versions: the entry at the version known is another's or gone. As the first of
// the pair its Latest tells it (Replaced 1) and answers the new log's newest version; as
// the second it is not answered, and its own Latest tells it.
func TestReview6StartedOver(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions int64 // of the new log
	}{{"fewer", 2}, {"as many", 4}, {"more", 6}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, firstStartedOver := range []bool{true, false} {
				f := newJointFixture(t, 4)
				f.latestWith("warm", f.bronze, f.facts, 3, 3, oneBatch)
				startOver := func(l *dynamo.LogStore, st storage.Store) {
					wipeStore(t, env{ddb: f.e.ddb, table: f.e.table, store: st})
					deleteEntries(t, f.e, l.TablePathKey())
					f.write(f.open(st, false), 0, tc.versions-1, 2)
				}
				newest := tc.versions - 1
				if firstStartedOver {
					startOver(f.bronze, f.e.store)
					// Latest's own requests after the batch: the Query, and the listing
					// of a log it reads as a new one (fewer versions: the known version's
					// entry is gone, so it is told by the Query too).
					f.c.Reset()
					v, ov, ok, err := f.bronze.LatestWith(t.Context(), f.facts)
					if err != nil || v != newest || !ok || ov != 3 {
						t.Errorf("bronze started over: LatestWith = %d, %d, %v, %v; want %d, 3", v, ov, ok, err, newest)
					}
					if n := f.c.Counts()["ddb.BatchGetItem"]; n != 1 {
						t.Errorf("bronze started over: %d BatchGetItem, want 1 (%s)", n, summary(f.c))
					}
					if n := f.c.Counts()["ddb.Query"]; n != 1 {
						t.Errorf("bronze started over: %d Query, want 1 (%s)", n, summary(f.c))
					}
					if f.bronze.Replaced() != 1 {
						t.Errorf("bronze Replaced = %d, want 1", f.bronze.Replaced())
					}
					// facts was answered by the batch; the next check is one request.
					f.latestWith("then", f.bronze, f.facts, newest, 3, oneBatch)
				} else {
					startOver(f.facts, f.factsStore)
					f.latestWith("facts started over", f.bronze, f.facts, 3, notAnswered, oneBatch)
					if f.facts.Replaced() != 0 {
						t.Errorf("facts Replaced = %d before its own Latest, want 0", f.facts.Replaced())
					}
					if v, err := f.facts.Latest(t.Context()); err != nil || v != newest || f.facts.Replaced() != 1 {
						t.Errorf("facts Latest = %d, %v, Replaced %d; want %d, 1", v, err, f.facts.Replaced(), newest)
					}
					f.latestWith("then", f.bronze, f.facts, 3, newest, oneBatch)
				}
			}
		})
	}
}

// The entry at the version known deleted (by a person, or the TTL under an observation
// renewed since, within KnownFor) with nothing written again: as the first, its Latest
// lists from the version known and the commit file's ETag (unchanged) decides: the same
// log, not replaced; as the second, not answered.
func TestReview6KnownEntryDeleted(t *testing.T) {
	f := newJointFixture(t, 3)
	f.latestWith("warm", f.bronze, f.facts, 2, 2, oneBatch)
	deleteItem(t, f.e, f.facts.TablePathKey(), 2)
	f.latestWith("facts entry 2 deleted", f.bronze, f.facts, 2, notAnswered, oneBatch)
	deleteItem(t, f.e, f.bronze.TablePathKey(), 2)
	f.c.Reset()
	v, _, ok, err := f.bronze.LatestWith(t.Context(), f.facts)
	if err != nil || v != 2 || ok {
		t.Errorf("bronze entry 2 deleted: LatestWith = %d, ok %v, %v; want 2, not answered", v, ok, err)
	}
	if n := f.c.Counts()["ddb.BatchGetItem"]; n != 1 {
		t.Errorf("%d BatchGetItem, want 1 (%s)", n, summary(f.c))
	}
	// What Latest alone makes of it, on a log store that knew the same.
	twin := f.open(f.e.store, false)
	if v, err := twin.Latest(t.Context()); err != nil || v != 2 {
		t.Fatalf("twin Latest = %d, %v", v, err)
	}
	if f.bronze.Replaced() != 0 || twin.Replaced() != 0 {
		t.Errorf("Replaced = %d (LatestWith), %d (Latest), want 0, 0: the commit files are the ones known", f.bronze.Replaced(), twin.Replaced())
	}
}

func deleteItem(t *testing.T, e env, tablePath string, v int64) {
	t.Helper()
	if _, err := e.ddb.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: &e.table, Key: map[string]types.AttributeValue{
		"tablePath": &types.AttributeValueMemberS{Value: tablePath},
		"fileName":  &types.AttributeValueMemberS{Value: strings.TrimPrefix(logKey(v), "_delta_log/")},
	}}); err != nil {
		t.Fatal(err)
	}
}

// Entry N+1 claimed by another writer that died before publishing it: as the first, its
// Latest recovers it (copy, complete) and answers N+1; as the second, it is not answered
// and stays incomplete until its own Latest recovers it.
func TestReview6IncompleteNext(t *testing.T) {
	f := newJointFixture(t, 3)
	f.latestWith("warm", f.bronze, f.facts, 2, 2, oneBatch)
	claim(t, f.e, f.bronze.TablePathKey(), 3, ".tmp/00000000000000000003.json.dead", []byte("bronze v3 of a dead writer\n"))
	f.latestWith("bronze N+1 incomplete", f.bronze, f.facts, 3, 2, map[string]int{
		"ddb.BatchGetItem": 1, "ddb.Query": 1, "CopyIfAbsent": 1, "ddb.UpdateItem": 1, "List": 1})
	if got := str(getItem(t, f.e, f.bronze.TablePathKey(), "00000000000000000003.json"), "complete"); got != "true" {
		t.Errorf("bronze entry 3 complete = %q after LatestWith, want true", got)
	}

	facts := env{ddb: f.e.ddb, table: f.e.table, store: f.factsStore}
	claim(t, facts, f.facts.TablePathKey(), 3, ".tmp/00000000000000000003.json.dead", []byte("facts v3 of a dead writer\n"))
	f.latestWith("facts N+1 incomplete", f.bronze, f.facts, 3, notAnswered, oneBatch)
	if got := str(getItem(t, f.e, f.facts.TablePathKey(), "00000000000000000003.json"), "complete"); got != "false" {
		t.Errorf("facts entry 3 complete = %q after LatestWith, want false (not the joint request's to recover)", got)
	}
	f.latest("facts Latest", f.facts, 3, map[string]int{"ddb.Query": 1, "CopyIfAbsent": 1, "ddb.UpdateItem": 1, "List": 1})
	f.latestWith("then", f.bronze, f.facts, 3, 3, oneBatch)
	if b, err := f.facts.Read(t.Context(), 3); err != nil || string(b) != "facts v3 of a dead writer\n" {
		t.Errorf("facts Read(3) = %q, %v", b, err)
	}
}

// unprocessed answers a BatchGetItem with the keys that match leave put in
// UnprocessedKeys, as DynamoDB does under throttling (the rest answered).
func unprocessed(next dynamo.Client, leave func(tablePath, fileName string) bool) func(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return func(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
		asked := map[string]types.KeysAndAttributes{}
		left := map[string]types.KeysAndAttributes{}
		for table, ka := range in.RequestItems {
			var keep, drop []map[string]types.AttributeValue
			for _, k := range ka.Keys {
				if leave(k["tablePath"].(*types.AttributeValueMemberS).Value, k["fileName"].(*types.AttributeValueMemberS).Value) {
					drop = append(drop, k)
				} else {
					keep = append(keep, k)
				}
			}
			if len(keep) > 0 {
				ka2 := ka
				ka2.Keys = keep
				asked[table] = ka2
			}
			if len(drop) > 0 {
				ka2 := ka
				ka2.Keys = drop
				left[table] = ka2
			}
		}
		out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
		if len(asked) > 0 {
			var err error
			if out, err = next.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: asked}, o...); err != nil {
				return nil, err
			}
		}
		out.UnprocessedKeys = left
		return out, nil
	}
}

// Keys left unprocessed (throttling) decide nothing: a log store with any of its two keys
// unprocessed is not answered by the batch (the first asks its Latest, the second is left
// to the caller), even when only its next entry, the one that shows another's commit,
// was left.
func TestReview6UnprocessedKeys(t *testing.T) {
	f := newJointFixture(t, 3)
	f.latestWith("warm", f.bronze, f.facts, 2, 2, oneBatch)
	bronzeKey, factsKey := f.bronze.TablePathKey(), f.facts.TablePathKey()
	next := f.e.ddb
	for _, tc := range []struct {
		name          string
		leave         func(tablePath, fileName string) bool
		bronze, facts int64
		reqs          map[string]int
	}{
		{"all", func(string, string) bool { return true }, 2, notAnswered, batchQuery},
		{"bronze's", func(p, _ string) bool { return p == bronzeKey }, 2, 2, batchQuery},
		{"facts'", func(p, _ string) bool { return p == factsKey }, 2, notAnswered, oneBatch},
		{"bronze's known entry", func(p, n string) bool { return p == bronzeKey && n == "00000000000000000002.json" }, 2, 2, batchQuery},
	} {
		f.mid.setBatchGetItem(unprocessed(next, tc.leave))
		f.latestWith("unprocessed "+tc.name, f.bronze, f.facts, tc.bronze, tc.facts, tc.reqs)
		f.mid.setBatchGetItem(nil)
		f.latest("facts after unprocessed "+tc.name, f.facts, 2, nil)
	}

	// Another's commit N+1 on each table, its key (and only it) left unprocessed: never
	// taken for "nothing newer".
	f.write(f.open(f.e.store, false), 3, 3, 1)
	f.write(f.open(f.factsStore, false), 3, 3, 1)
	f.mid.setBatchGetItem(unprocessed(next, func(_, n string) bool { return n == "00000000000000000003.json" }))
	f.latestWith("N+1 unprocessed", f.bronze, f.facts, 3, notAnswered, batchQuery)
	f.mid.setBatchGetItem(nil)
	f.latest("facts Latest", f.facts, 3, oneQuery)
	f.latestWith("then", f.bronze, f.facts, 3, 3, oneBatch)
}

// The joint request is made only to a log store it can reach through the same DynamoDB
// service and table; otherwise the first log store's request is made for it alone and the
// other is not answered (ok false), never an error.
func TestReview6NotJoint(t *testing.T) {
	f := newJointFixture(t, 3)
	ctx := t.Context()

	// Another client type around the same client: not known to be the same service.
	type otherClient struct{ dynamo.Client }
	apart, err := dynamo.New(otherClient{f.e.ddb}, f.factsStore, dynamo.Options{Table: f.e.table, Scheme: "s3a", Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apart.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	if f.bronze.JointWith(apart) {
		t.Error("JointWith: true through another client type")
	}
	f.latestWith("another client type", f.bronze, apart, 2, notAnswered, oneBatch)

	// A client type whose values cannot be compared: sameService must not panic.
	type uncomparable struct {
		dynamo.Client
		tags []string
	}
	uc := uncomparable{Client: f.e.ddb, tags: []string{"x"}}
	un, err := dynamo.New(uc, f.factsStore, dynamo.Options{Table: f.e.table, Scheme: "s3a"})
	if err != nil {
		t.Fatal(err)
	}
	un2, err := dynamo.New(uc, f.e.store, dynamo.Options{Table: f.e.table, Scheme: "s3a"})
	if err != nil {
		t.Fatal(err)
	}
	if un2.JointWith(un) || f.bronze.JointWith(un) {
		t.Error("JointWith: true for an uncomparable client")
	}

	// Two SDK clients of different regions, one endpoint: not the same service.
	west := emulators.DynamoDB(t)
	westOpts := west.Options()
	westOpts.Region = "us-west-2"
	west = dynamodb.New(westOpts)
	far, err := dynamo.New(west, f.factsStore, dynamo.Options{Table: f.e.table, Scheme: "s3a"})
	if err != nil {
		t.Fatal(err)
	}
	near, err := dynamo.New(f.e.ddb, f.e.store, dynamo.Options{Table: f.e.table, Scheme: "s3a"})
	if err != nil {
		t.Fatal(err)
	}
	if f.e.ddb.Options().Region == "us-west-2" {
		t.Skip("the emulator client's region is us-west-2")
	}
	if near.JointWith(far) || far.JointWith(near) {
		t.Error("JointWith: true across regions")
	}

	// A wrapper that does not unwrap hides the log store under it: not joint.
	hidden := struct{ logstore.LogStore }{f.facts}
	if f.bronze.JointWith(hidden) {
		t.Error("JointWith: true through a wrapper without Unwrap")
	}
	f.latestWith("facts behind a wrapper without Unwrap", f.bronze, hidden, 2, notAnswered, oneBatch)
	// One that unwraps is joint.
	f.latestWith("facts behind an unwrapping wrapper", f.bronze, unwrapping{f.facts}, 2, 2, oneBatch)

	// Itself: not joint (one table's keys twice in one request).
	if f.bronze.JointWith(f.bronze) || f.bronze.JointWith(unwrapping{f.bronze}) {
		t.Error("JointWith: true with itself")
	}
}

type unwrapping struct{ logstore.LogStore }

func (u unwrapping) Unwrap() logstore.LogStore { return u.LogStore }

// KnownFor: a log store whose observation is older than KnownFor is not asked in the
// batch; the first then makes its Latest alone (one Query, no batch), the second is not
// answered. The batch renews only what it answered.
func TestReview6KnownForExpiry(t *testing.T) {
	f := newJointFixture(t, 3)
	f.latestWith("warm", f.bronze, f.facts, 2, 2, oneBatch)

	// facts' observation ages past KnownFor while bronze's is renewed.
	f.now = f.now.Add(dynamo.DefaultKnownFor / 2)
	f.latest("bronze alone", f.bronze, 2, oneQuery)
	f.now = f.now.Add(dynamo.DefaultKnownFor / 2)
	f.latestWith("facts stale", f.bronze, f.facts, 2, notAnswered, oneBatch)
	// Another's commit to facts meanwhile is read by facts' Latest (a listing: stale).
	f.write(f.open(f.factsStore, false), 3, 3, 1)
	f.latest("facts Latest after KnownFor", f.facts, 3, nil)
	f.latestWith("then", f.bronze, f.facts, 2, 3, oneBatch)

	// Both stale: bronze's Latest alone, no batch.
	f.now = f.now.Add(dynamo.DefaultKnownFor)
	f.c.Reset()
	v, _, ok, err := f.bronze.LatestWith(t.Context(), f.facts)
	if err != nil || v != 2 || ok {
		t.Errorf("both stale: LatestWith = %d, ok %v, %v; want 2, not answered", v, ok, err)
	}
	if n := f.c.Counts()["ddb.BatchGetItem"]; n != 0 {
		t.Errorf("both stale: %d BatchGetItem, want 0 (%s)", n, summary(f.c))
	}

	// Exactly KnownFor old is stale (fresh is strictly less).
	f.latestWith("renewed", f.bronze, f.facts, 2, notAnswered, oneBatch)
	f.latest("facts", f.facts, 3, nil)
	f.latestWith("both fresh", f.bronze, f.facts, 2, 3, oneBatch)
	f.now = f.now.Add(dynamo.DefaultKnownFor)
	f.c.Reset()
	if _, _, ok, err := f.bronze.LatestWith(t.Context(), f.facts); err != nil || ok || f.c.Counts()["ddb.BatchGetItem"] != 0 {
		t.Errorf("at exactly KnownFor: ok %v, %v, %s; want not answered, no batch", ok, err, summary(f.c))
	}
}

// The facts table shared by two stream processes (allowed, decision 0013): each process's
// facts log store sees the other's commits. A's check after B's facts commit costs the
// batch and A's Query (the documented fallback); B's is one batch; each then commits
// without pre-checks, and neither is told a started over log.
func TestReview6SharedFactsTable(t *testing.T) {
	f := newJointFixture(t, 3)
	srv2 := emulators.StartS3(t)
	bronzeB := s3store.New(srv2.Client(), srv2.Bucket(t), "warehouse/other/")
	bB, fB := f.open(bronzeB, true), f.open(f.factsStore, true)
	f.write(bB, 0, 0, 3)
	f.latest("B facts", fB, 2, nil)
	f.latestWith("A warm", f.facts, f.bronze, 2, 2, oneBatch)
	f.latestWith("B warm", fB, bB, 2, 0, oneBatch)

	f.write(fB, 3, 3, 3)
	f.latestWith("A after B's facts commit", f.facts, f.bronze, 3, 2, batchQuery)
	f.latestWith("B after its own", fB, bB, 3, 0, oneBatch)
	f.c.Reset()
	f.write(f.facts, 4, 4, 4)
	if want := map[string]int{"Put": 1, "ddb.PutItem": 1, "CopyIfAbsent": 1, "ddb.UpdateItem": 1}; !maps.Equal(f.c.Counts(), want) {
		t.Errorf("A's facts commit 4: %s, want %v", summary(f.c), want)
	}
	f.latestWith("B after A's", fB, bB, 4, 0, batchQuery)
	f.latestWith("A after its own", f.facts, f.bronze, 4, 2, oneBatch)
	if f.facts.Replaced()+fB.Replaced() != 0 {
		t.Errorf("Replaced = %d, %d; want 0", f.facts.Replaced(), fB.Replaced())
	}
}

// flakyOnce fails the n-th DynamoDB request (1-based) once: before it reaches DynamoDB,
// or after (its answer lost); every other request passes.
type flakyOnce struct {
	dynamo.Client
	mu    sync.Mutex
	n     int
	after bool
	calls int
	ops   []string
}

var errFlaky = errors.New("flaky: request failed")

func (c *flakyOnce) hit(op string, call func() error) error {
	c.mu.Lock()
	c.calls++
	c.ops = append(c.ops, op)
	fail := c.calls == c.n
	c.mu.Unlock()
	if !fail {
		return call()
	}
	if c.after {
		_ = call()
	}
	return errFlaky
}

func (c *flakyOnce) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.GetItemOutput, err error) {
	err = c.hit("GetItem", func() (err error) { out, err = c.Client.GetItem(ctx, in, o...); return err })
	return out, err
}

func (c *flakyOnce) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = c.hit("PutItem", func() (err error) { out, err = c.Client.PutItem(ctx, in, o...); return err })
	return out, err
}

func (c *flakyOnce) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	err = c.hit("UpdateItem", func() (err error) { out, err = c.Client.UpdateItem(ctx, in, o...); return err })
	return out, err
}

func (c *flakyOnce) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (out *dynamodb.QueryOutput, err error) {
	err = c.hit("Query", func() (err error) { out, err = c.Client.Query(ctx, in, o...); return err })
	return out, err
}

func (c *flakyOnce) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.BatchGetItemOutput, err error) {
	err = c.hit("BatchGetItem", func() (err error) { out, err = c.Client.BatchGetItem(ctx, in, o...); return err })
	return out, err
}

// A DynamoDB request of LatestWith failing at every point (before it reached DynamoDB, or
// its answer lost), on a warm check, after another's commit to each table, and with the
// first one's N+1 left incomplete by a dead writer: LatestWith returns the error, and run
// again (the step re-run) answers what it answers without the fault, and what the
// tables' Latest answers after.
func TestReview6FaultEveryRequestRerun(t *testing.T) {
	for _, scenario := range []string{"warm", "others' commits", "incomplete N+1"} {
		for _, after := range []bool{false, true} {
			for n := 1; ; n++ {
				f := newJointFixture(t, 3)
				flaky := &flakyOnce{Client: f.e.ddb, after: after}
				f.mid.Client = flaky
				f.latestWith("warm", f.bronze, f.facts, 2, 2, oneBatch)
				wantB, wantF, factsLatest := int64(2), int64(2), int64(2)
				switch scenario {
				case "others' commits":
					f.write(f.open(f.e.store, false), 3, 4, 1)
					f.write(f.open(f.factsStore, false), 3, 3, 1)
					wantB, wantF, factsLatest = 4, notAnswered, 3
				case "incomplete N+1":
					claim(t, f.e, f.bronze.TablePathKey(), 3, ".tmp/00000000000000000003.json.dead", []byte("v3 dead\n"))
					wantB = 3
				}
				flaky.mu.Lock()
				flaky.calls, flaky.ops, flaky.n = 0, nil, n
				flaky.mu.Unlock()
				_, _, _, err := f.bronze.LatestWith(t.Context(), f.facts)
				flaky.mu.Lock()
				calls, ops := flaky.calls, flaky.ops
				flaky.mu.Unlock()
				if calls < n {
					if err != nil {
						t.Errorf("%s: %d requests, no fault, err %v", scenario, calls, err)
					}
					break
				}
				name := scenario + ": fault at " + ops[n-1]
				t.Logf("%s after=%v: request %d of %v", scenario, after, n, ops)
				if after {
					name += " (answer lost)"
				}
				if err == nil && ops[n-1] != "UpdateItem" {
					// Only recovery's completion is retried in place (its attempts).
					t.Errorf("%s: LatestWith succeeded through the fault", name)
				}
				f.c.Reset()
				v, ov, ok, err := f.bronze.LatestWith(t.Context(), f.facts)
				if !ok {
					ov = notAnswered
				}
				if err != nil || v != wantB || ov != wantF {
					t.Errorf("%s: re-run LatestWith = %d, %d, %v; want %d, %d", name, v, ov, err, wantB, wantF)
				}
				if v, err := f.facts.Latest(t.Context()); err != nil || v != factsLatest {
					t.Errorf("%s: facts Latest = %d, %v", name, v, err)
				}
				if f.bronze.Replaced()+f.facts.Replaced() != 0 {
					t.Errorf("%s: Replaced %d, %d; want 0", name, f.bronze.Replaced(), f.facts.Replaced())
				}
			}
		}
	}
}

// storeOf is the store of the fixture's table l is the log store of.
func (f *jointFixture) storeOf(l *dynamo.LogStore) storage.Store {
	if l == f.facts {
		return f.factsStore
	}
	return f.e.store
}

// A table whose entries expired (a quiet one) is known by an observation made with no
// entry, which the batch cannot check: as the first, its Latest alone (one Query, no
// batch); as the second, not asked (the batch is the first's alone, ok false), each time,
// so its caller's Latest is the Query it always was.
func TestReview6EntriesExpiredNotAsked(t *testing.T) {
	f := newJointFixture(t, 3)
	f.latestWith("warm", f.bronze, f.facts, 2, 2, oneBatch)
	f.now = f.now.Add(dynamo.DefaultKnownFor) // as the TTL would: long after
	deleteEntries(t, f.e, f.facts.TablePathKey())
	f.latest("facts, entries expired", f.facts, 2, map[string]int{"ddb.Query": 1, "List": 1})
	f.latest("bronze", f.bronze, 2, nil)
	for _, step := range []string{"facts second", "again"} {
		f.latestWith(step, f.bronze, f.facts, 2, notAnswered, oneBatch)
		f.latest(step+": facts Latest", f.facts, 2, oneQuery)
	}
	f.latestWith("facts first", f.facts, f.bronze, 2, notAnswered, oneQuery)
	// Another's commit to facts is found by its Query (a newer entry than the one
	// known, with no entry: one Query), and the batch asks it again.
	f.write(f.open(f.factsStore, false), 3, 3, 1)
	f.latestWith("facts first, another's commit", f.facts, f.bronze, 3, notAnswered, oneQuery)
	f.latestWith("then", f.facts, f.bronze, 3, 2, oneBatch)
	if f.facts.Replaced() != 0 {
		t.Errorf("facts Replaced = %d, want 0", f.facts.Replaced())
	}
}

// LatestWith concurrent with the log stores' own commits (one process's goroutines): every
// answer is a version committed by then, never below one the caller saw answered before
// (for bronze, whose writer is this goroutine's sibling), and no error.
func TestReview6ConcurrentWithCommits(t *testing.T) {
	f := newJointFixture(t, 3)
	ctx := t.Context()
	const last = 12
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := int64(3); v <= last; v++ {
			if err := f.bronze.Write(ctx, v, logstoretest.Commit(0, int(v))); err != nil {
				t.Errorf("bronze write %d: %v", v, err)
				return
			}
			if err := f.facts.Write(ctx, v, logstoretest.Commit(0, int(v))); err != nil {
				t.Errorf("facts write %d: %v", v, err)
				return
			}
		}
	}()
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seenB, seenF := int64(2), int64(2)
			for range 30 {
				first, second := logstore.LogStore(f.bronze), logstore.LogStore(f.facts)
				if g == 1 {
					first, second = second, first
				}
				v, ov, ok, err := first.(logstore.Joint).LatestWith(ctx, second)
				if err != nil {
					t.Errorf("LatestWith: %v", err)
					return
				}
				if g == 1 {
					v, ov = ov, v
					if !ok {
						v = seenB
					}
				} else if !ok {
					ov = seenF
				}
				if v < seenB || ov < seenF || v > last || ov > last {
					t.Errorf("goroutine %d: bronze %d facts %d after %d, %d", g, v, ov, seenB, seenF)
				}
				seenB, seenF = v, ov
			}
		}()
	}
	wg.Wait()
	f.latestWith("after", f.bronze, f.facts, last, last, oneBatch)
}
