package dynamo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// abortingRival deletes the item our claim collided with, as soon as the collision is
// seen: what delta-rs does with its own incomplete entry when its copy fails
// (abort_commit_entry, docs/reference/delta-protocol.md §13.7).
type abortingRival struct {
	dynamo.Client
	ddb *dynamodb.Client
}

func (a abortingRival) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := a.Client.PutItem(ctx, in, o...)
	if err != nil && in.ConditionExpression != nil {
		if _, derr := a.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: in.TableName, Key: keyOf(in)}); derr != nil {
			return nil, derr
		}
	}
	return out, err
}

func keyOf(in *dynamodb.PutItemInput) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"tablePath": in.Item["tablePath"], "fileName": in.Item["fileName"]}
}

// A claim that collided with an entry that is gone by the time it is read back (its
// delta-rs writer aborted) did not lose to anyone: the version is free. Write must not
// report ErrVersionExists (a reader of v would then find no commit), and a retry claims v.
func TestCollisionWithAnAbortedEntry(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	ctx := t.Context()
	base := e.logStore(t, dynamo.Options{})
	if err := base.Write(ctx, 0, []byte("v0\n")); err != nil {
		t.Fatal(err)
	}
	claim(t, e, base.TablePathKey(), 1, "_commit_rust.json.tmp", []byte("rust v1\n"))
	l, err := dynamo.New(abortingRival{Client: e.ddb, ddb: e.ddb}, e.store, dynamo.Options{Table: e.table, Scheme: "s3a", RetryDelay: 1, KnownFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Write(ctx, 1, []byte("ours v1\n"))
	if err == nil || errors.Is(err, logstore.ErrVersionExists) {
		t.Fatalf("Write(1) colliding with an aborted entry: %v, want an undecided error", err)
	}
	if err := e.logStore(t, dynamo.Options{}).Write(ctx, 1, []byte("ours v1\n")); err != nil {
		t.Fatalf("retry of Write(1): %v", err)
	}
	if b, err := e.logStore(t, dynamo.Options{}).Read(ctx, 1); err != nil || string(b) != "ours v1\n" {
		t.Fatalf("Read(1) = %q, %v", b, err)
	}
}
