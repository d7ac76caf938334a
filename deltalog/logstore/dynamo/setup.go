package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// SetupClient is the part of *dynamodb.Client that CreateTable uses. The log store itself
// never creates or alters tables; that is for infrastructure code (Terraform) and tests.
type SetupClient interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ SetupClient = (*dynamodb.Client)(nil)

// SetupOptions configures CreateTable.
type SetupOptions struct {
	// SkipTTL leaves TTL off. The emulator dynalite has no UpdateTimeToLive; on AWS, keep
	// it on so complete entries expire.
	SkipTTL bool
	// PollInterval is how often the table's status is read while it is created (100 ms).
	PollInterval time.Duration
}

// CreateTable creates the log table with the S3DynamoDBLogStore key schema (tablePath S
// HASH, fileName S RANGE), on-demand billing, waits until it is ACTIVE, and enables TTL on
// expireTime. An existing table, and TTL already on expireTime, are not errors (the
// schema is not checked), so a setup step can be run again.
func CreateTable(ctx context.Context, c SetupClient, name string, opts SetupOptions) error {
	if opts.PollInterval <= 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: &name,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrTablePath), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrFileName), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrTablePath), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrFileName), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: create table %s: %w", name, err)
	}
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name})
		if err != nil {
			return fmt.Errorf("dynamo: describe table %s: %w", name, err)
		}
		if out.Table != nil && out.Table.TableStatus == types.TableStatusActive {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dynamo: wait for table %s: %w", name, ctx.Err())
		case <-time.After(opts.PollInterval):
		}
	}
	if opts.SkipTTL {
		return nil
	}
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: &name,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrExpireTime),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil && !ttlAlreadyOn(err) {
		return fmt.Errorf("dynamo: enable TTL on %s: %w", name, err)
	}
	return nil
}

// ttlAlreadyOn reports DynamoDB's answer to enabling TTL that is already enabled on that
// attribute (ValidationException "TimeToLive is already enabled"); TTL on another
// attribute is a different message and stays an error.
func ttlAlreadyOn(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(apiErr.ErrorMessage()), "already enabled")
}
