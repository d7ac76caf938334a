package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/ddbcount"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// counted is a log store whose S3 and DynamoDB requests all land in one Counter.
func counted(t testing.TB, e env, c *storagetest.Counter) *dynamo.LogStore {
	l, err := dynamo.New(ddbcount.Counting(e.ddb, c), storagetest.NewCounting(e.store, c), dynamo.Options{Table: e.table})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func summary(c *storagetest.Counter) string {
	m := c.Counts()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return fmt.Sprint(parts)
}

// An uncontended commit by a writer that knows the previous version costs 4 requests:
// S3 Put (temp), DynamoDB PutItem (claim), S3 CopyObject If-None-Match (publish), DynamoDB
// UpdateItem (complete).
func TestUncontendedCommitRequests(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	c := &storagetest.Counter{}
	l := counted(t, e, c)
	ctx := t.Context()

	// Cold: nothing known, so the pre-checks run (HEAD 0.json, GetItem 0).
	if err := l.Write(ctx, 0, logstoretest.Commit(0, 0)); err != nil {
		t.Fatal(err)
	}
	t.Logf("cold Write(0): %d requests %s", c.Total(), summary(c))
	if c.Total() != 6 {
		t.Errorf("cold Write(0): %d requests %s, want 6", c.Total(), summary(c))
	}

	c.Reset()
	if err := l.Write(ctx, 1, logstoretest.Commit(0, 1)); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"Put": 1, "ddb.PutItem": 1, "CopyIfAbsent": 1, "ddb.UpdateItem": 1}
	if !maps.Equal(c.Counts(), want) {
		t.Errorf("Write(1) after Write(0): %s, want 4 requests %v", summary(c), want)
	}

	// A new process: Latest (Query + List) teaches it, then the commit is 4 requests.
	l2 := counted(t, e, c)
	c.Reset()
	if v, err := l2.Latest(ctx); err != nil || v != 1 {
		t.Fatalf("Latest = %d, %v", v, err)
	}
	t.Logf("Latest: %d requests %s", c.Total(), summary(c))
	c.Reset()
	if err := l2.Write(ctx, 2, logstoretest.Commit(1, 0)); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(c.Counts(), want) {
		t.Errorf("Write(2) after Latest: %s, want %v", summary(c), want)
	}
}

// BenchmarkCommitRequests reports the S3 + DynamoDB requests of an uncontended commit
// (requests/op); ns/op is against the emulators, not AWS.
func BenchmarkCommitRequests(b *testing.B) {
	srv := emulators.StartS3(b)
	for _, mode := range []string{"write", "latest+write", "cold-write"} {
		b.Run(mode, func(b *testing.B) {
			e := newEnvTB(b, srv)
			c := &storagetest.Counter{}
			l := counted(b, e, c)
			ctx := context.Background()
			if err := l.Write(ctx, 0, logstoretest.Commit(0, 0)); err != nil {
				b.Fatal(err)
			}
			c.Reset()
			b.ResetTimer()
			for i := range b.N {
				v := int64(i + 1)
				switch mode {
				case "latest+write":
					if _, err := l.Latest(ctx); err != nil {
						b.Fatal(err)
					}
				case "cold-write":
					l = counted(b, e, c)
				}
				if err := l.Write(ctx, v, logstoretest.Commit(0, i+1)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.Total())/float64(b.N), "requests/op")
		})
	}
}

// A LogStore that observed a recent commit learns the latest version from one Query: the
// newest entry, when complete, is the newest commit (any later one was completed after
// the observation, so its entry has not expired). Others' commits, complete or half done,
// are still found; an observation older than KnownFor lists the log again.
func TestLatestIsOneQueryWhenKnown(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	c := &storagetest.Counter{}
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	l, err := dynamo.New(ddbcount.Counting(e.ddb, c), storagetest.NewCounting(e.store, c), dynamo.Options{Table: e.table, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	other := counted(t, e, &storagetest.Counter{})
	ctx := t.Context()
	for v := range int64(2) {
		if err := l.Write(ctx, v, logstoretest.Commit(0, int(v))); err != nil {
			t.Fatal(err)
		}
	}
	latest := func(want int64, wantReqs map[string]int) {
		t.Helper()
		c.Reset()
		if v, err := l.Latest(ctx); err != nil || v != want {
			t.Fatalf("Latest = %d, %v; want %d", v, err, want)
		}
		if !maps.Equal(c.Counts(), wantReqs) {
			t.Errorf("Latest: %s, want %v", summary(c), wantReqs)
		}
	}
	oneQuery := map[string]int{"ddb.Query": 1}
	latest(1, oneQuery)
	latest(1, oneQuery)

	// Another writer commits 2: its entry is the newest, complete.
	if _, err := other.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Write(ctx, 2, logstoretest.Commit(1, 2)); err != nil {
		t.Fatal(err)
	}
	latest(2, oneQuery)

	// A writer claimed 3 and died before publishing: the entry is recovered, then listed.
	claim(t, e, l.TablePathKey(), 3, ".tmp/00000000000000000003.json.dead", logstoretest.Commit(2, 3))
	latest(3, map[string]int{"ddb.Query": 1, "CopyIfAbsent": 1, "ddb.UpdateItem": 1, "List": 1})
	latest(3, oneQuery)

	// An hour later the observation is stale: Query and List.
	now = now.Add(dynamo.DefaultKnownFor)
	latest(3, map[string]int{"ddb.Query": 1, "List": 1})
	latest(3, oneQuery)
}
