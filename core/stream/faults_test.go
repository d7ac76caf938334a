package stream

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/core/source/sourcefault"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
)

// faultDDB routes every DynamoDB call of the log store through the fault plan (op
// "source.ddb.<Method>", the name these tests have always given it).
type faultDDB struct {
	dynamo.Client
	f *deltatest.Faults
}

func (c *faultDDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return sourcefault.Call(c.f, "source.ddb.GetItem", func() (*dynamodb.GetItemOutput, error) { return c.Client.GetItem(ctx, in, o...) })
}

func (c *faultDDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return sourcefault.Call(c.f, "source.ddb.PutItem", func() (*dynamodb.PutItemOutput, error) { return c.Client.PutItem(ctx, in, o...) })
}

func (c *faultDDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return sourcefault.Call(c.f, "source.ddb.UpdateItem", func() (*dynamodb.UpdateItemOutput, error) { return c.Client.UpdateItem(ctx, in, o...) })
}

func (c *faultDDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return sourcefault.Call(c.f, "source.ddb.Query", func() (*dynamodb.QueryOutput, error) { return c.Client.Query(ctx, in, o...) })
}
