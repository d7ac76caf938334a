// Package ddbcount counts the requests of a dynamo.Client in a storagetest.Counter, for
// tests and benchmarks that report S3 and DynamoDB requests side by side. It is apart from
// dynamotest because that one imports deltatest, which imports deltalog: deltalog's own
// tests import this one. Product code does not import it.
package ddbcount

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
)

// Counting returns c with each GetItem, PutItem, UpdateItem, Query and BatchGetItem counted in counter
// as "ddb.<Method>" (the names dynamotest.WithFaults gives), so one Counter can hold a test's S3 and
// DynamoDB requests side by side.
func Counting(c dynamo.Client, counter *storagetest.Counter) dynamo.Client {
	return countingClient{c, counter}
}

type countingClient struct {
	dynamo.Client
	c *storagetest.Counter
}

func (d countingClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.c.Add("ddb.GetItem")
	return d.Client.GetItem(ctx, in, o...)
}

func (d countingClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.c.Add("ddb.PutItem")
	return d.Client.PutItem(ctx, in, o...)
}

func (d countingClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	d.c.Add("ddb.UpdateItem")
	return d.Client.UpdateItem(ctx, in, o...)
}

func (d countingClient) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	d.c.Add("ddb.Query")
	return d.Client.Query(ctx, in, o...)
}

func (d countingClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	d.c.Add("ddb.BatchGetItem")
	return d.Client.BatchGetItem(ctx, in, o...)
}
