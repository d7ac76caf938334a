package dynamo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// retriedClaimDDB sends the first conditional PutItem twice and answers with the second
// response: what the SDK's retryer does when the answer to the first request is lost on
// the network (a timeout, a reset connection) although DynamoDB applied it. The second
// request then fails its attribute_not_exists condition on the writer's own item.
type retriedClaimDDB struct {
	dynamo.Client
	retried bool
}

func (d *retriedClaimDDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if in.ConditionExpression != nil && !d.retried {
		d.retried = true
		if _, err := d.Client.PutItem(ctx, in, o...); err != nil {
			return nil, err
		}
	}
	return d.Client.PutItem(ctx, in, o...)
}

// A claim retried by the SDK fails its condition on the writer's own item. The version is
// still the writer's: Write must publish it and succeed, not report a lost race and delete
// the temp file the item points to (which left an entry nobody could complete, so every
// later Latest, Read and Write of the table failed).
func TestRetriedClaimIsStillOurs(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	ctx := t.Context()
	l, err := dynamo.New(&retriedClaimDDB{Client: e.ddb}, e.store, dynamo.Options{Table: e.table, Scheme: "s3a", RetryDelay: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(ctx, 0, []byte("v0\n")); err != nil {
		t.Fatalf("Write(0) after a retried claim: %v, want nil (the version is ours)", err)
	}
	r := e.logStore(t, dynamo.Options{})
	if v, err := r.Latest(ctx); err != nil || v != 0 {
		t.Fatalf("Latest = %d, %v; want 0", v, err)
	}
	if b, err := r.Read(ctx, 0); err != nil || string(b) != "v0\n" {
		t.Fatalf("Read(0) = %q, %v", b, err)
	}
	if got := str(getItem(t, e, r.TablePathKey(), "00000000000000000000.json"), "complete"); got != "true" {
		t.Fatalf("entry 0 complete = %q", got)
	}
	if err := r.Write(ctx, 1, []byte("v1\n")); err != nil {
		t.Fatalf("next writer: %v", err)
	}
}
