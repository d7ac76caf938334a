package dynamo_test

import (
	"maps"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/ddbcount"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// Latest tells the log replaced from the Query it makes anyway: the entry of the version
// it knew, among the newest 32, with another tempPath. Its steady state stays one Query;
// its entry older than the page (more than 32 commits by others) costs one GetItem; and
// its entry gone after KnownFor (expired, as the TTL does) is not taken for a start over
// (docs/decisions/0016-own-write-identity.md § Tables started over).
func TestReplacedTold(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	ctx := t.Context()
	c := &storagetest.Counter{}
	now := time.Unix(1_700_000_000, 0)
	l, err := dynamo.New(ddbcount.Counting(e.ddb, c), storagetest.NewCounting(e.store, c),
		dynamo.Options{Table: e.table, Scheme: "s3a", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	latest := func(step string, want int64, wantReplaced uint64, wantReqs map[string]int) {
		t.Helper()
		c.Reset()
		if v, err := l.Latest(ctx); err != nil || v != want {
			t.Fatalf("%s: Latest = %d, %v; want %d", step, v, err, want)
		}
		if got := l.Replaced(); got != wantReplaced {
			t.Errorf("%s: Replaced = %d, want %d", step, got, wantReplaced)
		}
		if !maps.Equal(c.Counts(), wantReqs) {
			t.Errorf("%s: %s, want %v", step, summary(c), wantReqs)
		}
	}
	write := func(l *dynamo.LogStore, from, to int64, seed int) {
		t.Helper()
		for v := from; v <= to; v++ {
			if err := l.Write(ctx, v, logstoretest.Commit(seed, int(v))); err != nil {
				t.Fatalf("write %d: %v", v, err)
			}
		}
	}
	oneQuery := map[string]int{"ddb.Query": 1}
	latest("empty", -1, 0, map[string]int{"ddb.Query": 1, "GetRange": 1, "List": 1})
	write(l, 0, 2, 0)
	latest("after our commits", 2, 0, oneQuery)

	other := e.logStore(t, dynamo.Options{})
	if _, err := other.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	write(other, 3, 4, 0)
	latest("after 2 commits of another", 4, 0, oneQuery)
	write(other, 5, 40, 0)
	latest("after 36 commits of another", 40, 0, map[string]int{"ddb.Query": 1, "ddb.GetItem": 1})

	// Started over with as many versions: files and entries deleted, written again.
	wipeStore(t, e)
	deleteEntries(t, e, l.TablePathKey())
	again := e.logStore(t, dynamo.Options{})
	write(again, 0, 40, 1)
	latest("started over, as many versions", 40, 1, map[string]int{"ddb.Query": 1, "List": 1})
	latest("then", 40, 1, oneQuery)

	// Its entries expired (deleted after KnownFor): not a start over.
	now = now.Add(dynamo.DefaultKnownFor)
	deleteEntries(t, e, l.TablePathKey())
	latest("entries expired", 40, 1, map[string]int{"ddb.Query": 1, "List": 1})
	latest("then", 40, 1, oneQuery)
}

// wipeStore deletes every object under the table.
func wipeStore(t *testing.T, e env) {
	t.Helper()
	var keys []string
	for info, err := range e.store.List(t.Context(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	for _, k := range keys {
		if err := e.store.Delete(t.Context(), k); err != nil {
			t.Fatal(err)
		}
	}
}
