// Package dynamotest holds test helpers for the DynamoDB log store: a dynamo.Client that
// routes every request through a deltatest.Faults plan, so a kill can land between any two
// DynamoDB requests of a commit and every request is counted. Product code does not import
// it.
package dynamotest

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
)

// WithFaults returns c with GetItem, PutItem, UpdateItem, Query and BatchGetItem routed through f, each
// named "ddb.<Method>" in f.Ops.
func WithFaults(c dynamo.Client, f *deltatest.Faults) dynamo.Client { return faultClient{c, f} }

type faultClient struct {
	dynamo.Client
	f *deltatest.Faults
}

func (d faultClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.GetItemOutput, err error) {
	err = d.f.Hit("ddb.GetItem", func() (err error) { out, err = d.Client.GetItem(ctx, in, o...); return err })
	return out, err
}

func (d faultClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = d.f.Hit("ddb.PutItem", func() (err error) { out, err = d.Client.PutItem(ctx, in, o...); return err })
	return out, err
}

func (d faultClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	err = d.f.Hit("ddb.UpdateItem", func() (err error) { out, err = d.Client.UpdateItem(ctx, in, o...); return err })
	return out, err
}

func (d faultClient) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (out *dynamodb.QueryOutput, err error) {
	err = d.f.Hit("ddb.Query", func() (err error) { out, err = d.Client.Query(ctx, in, o...); return err })
	return out, err
}

func (d faultClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.BatchGetItemOutput, err error) {
	err = d.f.Hit("ddb.BatchGetItem", func() (err error) { out, err = d.Client.BatchGetItem(ctx, in, o...); return err })
	return out, err
}
