package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// countingDDB counts DynamoDB requests as "ddb.<Op>" in a Counter shared with the store's.
type countingDDB struct {
	dynamo.Client
	c *storagetest.Counter
}

func (d countingDDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.c.Add("ddb.GetItem")
	return d.Client.GetItem(ctx, in, o...)
}

func (d countingDDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.c.Add("ddb.PutItem")
	return d.Client.PutItem(ctx, in, o...)
}

func (d countingDDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	d.c.Add("ddb.UpdateItem")
	return d.Client.UpdateItem(ctx, in, o...)
}

func (d countingDDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	d.c.Add("ddb.Query")
	return d.Client.Query(ctx, in, o...)
}

// counted is a log store whose S3 and DynamoDB requests all land in one Counter.
func counted(t testing.TB, e env, c *storagetest.Counter) *dynamo.LogStore {
	l, err := dynamo.New(countingDDB{e.ddb, c}, storagetest.NewCounting(e.store, c), dynamo.Options{Table: e.table})
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
