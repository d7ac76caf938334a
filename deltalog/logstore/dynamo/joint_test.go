package dynamo_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/ddbcount"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/benchmetrics"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// LatestWith answers two tables' Latest in one BatchGetItem while each knows its newest
// entry and nothing was committed since. The first log store's other cases (a commit by
// another, its log started over, nothing known) are asked by its own Latest, with
// Latest's answers and requests on top; the second one's are left to the caller (ok
// false), so LatestWith never costs more than the first one's Latest but for its
// fallback (docs/decisions/0019-dynamo-warm-check-one-request.md).
func TestLatestWithOneRequest(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	ctx := t.Context()
	c := &storagetest.Counter{}
	now := time.Unix(1_700_000_000, 0)
	factsStore := s3store.New(srv.Client(), srv.Bucket(t), "warehouse/facts/")
	open := func(st storage.Store, counted bool) *dynamo.LogStore {
		t.Helper()
		var ddb dynamo.Client = e.ddb
		if counted {
			ddb, st = ddbcount.Counting(e.ddb, c), storagetest.NewCounting(st, c)
		}
		l, err := dynamo.New(ddb, st, dynamo.Options{Table: e.table, Scheme: "s3a", RetryDelay: time.Millisecond,
			Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	bronze, facts := open(e.store, true), open(factsStore, true)
	write := func(l *dynamo.LogStore, from, to int64, seed int) {
		t.Helper()
		for v := from; v <= to; v++ {
			if err := l.Write(ctx, v, logstoretest.Commit(seed, int(v))); err != nil {
				t.Fatalf("write %d: %v", v, err)
			}
		}
	}
	const notAsked = -9
	latestWith := func(step string, wantB, wantF int64, wantReplaced uint64, wantReqs map[string]int) {
		t.Helper()
		c.Reset()
		b, f, ok, err := bronze.LatestWith(ctx, facts)
		if !ok {
			f = notAsked
		}
		if err != nil || b != wantB || f != wantF {
			t.Fatalf("%s: LatestWith = %d, %d (-9: not asked), %v; want %d, %d", step, b, f, err, wantB, wantF)
		}
		if got := bronze.Replaced(); got != wantReplaced {
			t.Errorf("%s: bronze Replaced = %d, want %d", step, got, wantReplaced)
		}
		if !maps.Equal(c.Counts(), wantReqs) {
			t.Errorf("%s: %s, want %v", step, summary(c), wantReqs)
		}
	}
	factsLatest := func(want int64) {
		t.Helper()
		if v, err := facts.Latest(ctx); err != nil || v != want {
			t.Fatalf("facts Latest = %d, %v; want %d", v, err, want)
		}
	}
	if !bronze.JointWith(facts) {
		t.Fatal("JointWith: false for two log stores on one client and DynamoDB table")
	}

	// Nothing known: bronze's Latest alone (a Query and a listing of an empty log).
	latestWith("empty", -1, notAsked, 0, map[string]int{"ddb.Query": 1, "GetRange": 1, "List": 1})
	write(bronze, 0, 2, 0)
	write(facts, 0, 2, 0)
	one := map[string]int{"ddb.BatchGetItem": 1}
	latestWith("after our commits", 2, 2, 0, one)
	latestWith("again", 2, 2, 0, one)

	// Another writer's facts commit: facts is left to its own Latest.
	other := open(factsStore, false)
	write(other, 3, 3, 1)
	latestWith("after another's facts commit", 2, notAsked, 0, one)
	factsLatest(3)
	latestWith("then", 2, 3, 0, one)

	// Another writer's bronze commit: bronze's Latest (its Query) finds it.
	write(open(e.store, false), 3, 3, 1)
	latestWith("after another's bronze commit", 3, 3, 0, map[string]int{"ddb.BatchGetItem": 1, "ddb.Query": 1})
	latestWith("then", 3, 3, 0, one)

	// Bronze started over with as many versions: told by bronze's Latest (its entry 3
	// has another tempPath), as TestReplacedTold.
	wipeStore(t, e)
	deleteEntries(t, e, bronze.TablePathKey())
	write(open(e.store, false), 0, 3, 2)
	latestWith("bronze started over", 3, 3, 1, map[string]int{"ddb.BatchGetItem": 1, "ddb.Query": 1, "List": 1})
	latestWith("then", 3, 3, 1, one)

	// Past KnownFor nothing is known fresh: bronze's Latest alone, then the BatchGetItem
	// for bronze alone until facts is read again.
	now = now.Add(dynamo.DefaultKnownFor)
	latestWith("after KnownFor", 3, notAsked, 1, map[string]int{"ddb.Query": 1, "List": 1})
	latestWith("then", 3, notAsked, 1, one)
	factsLatest(3)
	latestWith("facts read again", 3, 3, 1, one)

	// Not joint: another DynamoDB table; joint: two SDK clients of one endpoint.
	e2 := newEnv(t, srv)
	if bronze.JointWith(e2.logStore(t, dynamo.Options{})) {
		t.Error("JointWith: true for a log store on another DynamoDB table")
	}
	apart, err := dynamo.New(emulators.DynamoDB(t), factsStore, dynamo.Options{Table: e.table})
	if err != nil {
		t.Fatal(err)
	}
	if !e.logStore(t, dynamo.Options{}).JointWith(apart) {
		t.Error("JointWith: false for two SDK clients of one region and endpoint")
	}
}

// BenchmarkWarmCheck measures a warm stream invocation's check of its two tables through
// production's DynamoDB client against the emulator: two Latest calls (a Query each, as
// before decision 0019) against one LatestWith (one BatchGetItem), both tables knowing
// their newest entry. cpu-µs/op is the process's CPU (getrusage: the SDK, net/http's
// goroutines, the collector), requests/op the DynamoDB requests.
//
//	scripts/with-dynalite.sh go test ./deltalog/logstore/dynamo -run '^$' -bench WarmCheck -benchtime 2000x
func BenchmarkWarmCheck(b *testing.B) {
	srv := emulators.StartS3(b)
	for _, mode := range []string{"two-latest", "latest-with"} {
		b.Run(mode, func(b *testing.B) {
			e := newEnvTB(b, srv)
			c := &storagetest.Counter{}
			ctx := context.Background()
			factsStore := s3store.New(srv.Client(), srv.Bucket(b), "warehouse/facts/")
			var stores []*dynamo.LogStore
			for _, st := range []storage.Store{e.store, factsStore} {
				l, err := dynamo.New(ddbcount.Counting(e.ddb, c), st, dynamo.Options{Table: e.table, Scheme: "s3a"})
				if err != nil {
					b.Fatal(err)
				}
				for v := range int64(3) {
					if err := l.Write(ctx, v, logstoretest.Commit(0, int(v))); err != nil {
						b.Fatal(err)
					}
				}
				stores = append(stores, l)
			}
			bronze, facts := stores[0], stores[1]
			c.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := benchmetrics.CPUTime()
			for range b.N {
				var vb, vf int64
				var err error
				if mode == "two-latest" {
					if vf, err = facts.Latest(ctx); err == nil {
						vb, err = bronze.Latest(ctx)
					}
				} else {
					var ok bool
					if vb, vf, ok, err = bronze.LatestWith(ctx, facts); !ok {
						vf = -1
					}
				}
				if err != nil || vb != 2 || vf != 2 {
					b.Fatalf("%d, %d, %v", vb, vf, err)
				}
			}
			cpu := benchmetrics.CPUTime() - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(c.Total())/float64(b.N), "requests/op")
		})
	}
}
