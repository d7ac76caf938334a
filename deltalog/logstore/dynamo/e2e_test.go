package dynamo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// Delta tables (deltalog transactions) committed through DynamoDB on the S3 emulator.

func TestDeltaConcurrentAppends(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	deltatest.ConcurrentAppends(t, func() (storage.Store, logstore.LogStore) {
		return e.store, e.logStore(t, dynamo.Options{})
	}, 8, 50)
}

func TestDeltaFaultCommits(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	deltatest.FaultCommits(t, func(f *deltatest.Faults) (storage.Store, logstore.LogStore) {
		s := f.Store(e.store)
		l, err := dynamo.New(hitDDB{e.ddb, f}, s, dynamo.Options{Table: e.table, Scheme: "s3a", RetryDelay: 1, Attempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		return s, f.LogStore(l)
	})
}

// hitDDB routes every DynamoDB request through deltatest's fault plan.
type hitDDB struct {
	dynamo.Client
	f *deltatest.Faults
}

func (d hitDDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.GetItemOutput, err error) {
	err = d.f.Hit("ddb.GetItem", func() (err error) { out, err = d.Client.GetItem(ctx, in, o...); return err })
	return out, err
}

func (d hitDDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = d.f.Hit("ddb.PutItem", func() (err error) { out, err = d.Client.PutItem(ctx, in, o...); return err })
	return out, err
}

func (d hitDDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	err = d.f.Hit("ddb.UpdateItem", func() (err error) { out, err = d.Client.UpdateItem(ctx, in, o...); return err })
	return out, err
}

func (d hitDDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (out *dynamodb.QueryOutput, err error) {
	err = d.f.Hit("ddb.Query", func() (err error) { out, err = d.Client.Query(ctx, in, o...); return err })
	return out, err
}
