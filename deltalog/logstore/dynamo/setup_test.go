package dynamo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
)

// awsLikeSetup answers as DynamoDB does for a table that already exists with TTL on
// (dynalite has no UpdateTimeToLive): CreateTable ResourceInUseException, UpdateTimeToLive
// ValidationException "TimeToLive is already enabled".
type awsLikeSetup struct{ ttlCalls int }

func (*awsLikeSetup) CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	msg := "Table already exists: delta_log"
	return nil, &types.ResourceInUseException{Message: &msg}
}

func (*awsLikeSetup) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{TableStatus: types.TableStatusActive}}, nil
}

func (s *awsLikeSetup) UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	s.ttlCalls++
	return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "TimeToLive is already enabled"}
}

// CreateTable on a table it created before (a re-run of a setup step) succeeds: the
// existing table and its TTL are what it would make.
func TestCreateTableTwice(t *testing.T) {
	c := &awsLikeSetup{}
	if err := dynamo.CreateTable(t.Context(), c, "delta_log", dynamo.SetupOptions{}); err != nil {
		t.Fatalf("CreateTable on an existing table with TTL on: %v", err)
	}
	if c.ttlCalls != 1 {
		t.Fatalf("UpdateTimeToLive called %d times", c.ttlCalls)
	}
}
