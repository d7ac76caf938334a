// Package awsclient builds mssqlcdc's AWS SDK clients for S3 and DynamoDB. It is the one
// place that holds their client options: production (deltalog/location.Open) and the
// emulator clients of the tests and benchmarks (internal/emulators) build their clients
// here, so a benchmark on the emulators measures the client production runs. Only the
// endpoint, path-style addressing, region and credentials differ between them.
//
// The options, each kept or changed for a reason given where it is set (the measurements
// are in docs/performance.md § The AWS clients' cost per request):
//
//   - Endpoint resolution is the SDK's, its rules evaluated on every request: a cache was
//     measured and declined (docs/decisions/0015: ~4 µs and ~1.3 KB a request, against a
//     copy of every answer the SDK's resolvers would otherwise change in place).
//   - Checksums stay at the SDK's defaults, "when supported" both ways: S3 PutObject over
//     HTTPS sends a CRC32 in a trailer with an unsigned payload, which "when required"
//     would replace by a SHA-256 of the body for the signature (more CPU, not less); full
//     GETs are checked against S3's stored checksum (docs/decisions/0015).
//   - Retries stay the SDK's standard retryer (3 attempts, throttling and 5xx retried with
//     backoff, its retry quota); signing stays on.
//   - Each client keeps its own HTTP client from the SDK's defaults (keep-alive, 100 idle
//     connections, 10 per host, 90 s idle timeout), which a warm Lambda keeps between
//     invocations with the tables it opened; a body up to 2 KiB is read ahead so that it
//     leaves with its headers in one write (onewrite.go).
package awsclient

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// DefaultRegion is used when neither the caller nor the environment names a region.
const DefaultRegion = "us-east-1"

// LoadConfig loads the AWS configuration from the default chain (environment, shared
// config and credentials files, instance or task role), in region when it is not empty,
// with creds instead of the default credential chain when it is not nil. A region named
// nowhere is DefaultRegion. It does no network I/O (credentials are fetched at the first
// request). Errors are the SDK's, wrapped.
func LoadConfig(ctx context.Context, region string, creds aws.CredentialsProvider) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if creds != nil {
		opts = append(opts, config.WithCredentialsProvider(creds))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	return cfg, nil
}

// NewS3 returns an S3 client for cfg with S3Options. endpoint, when not empty, replaces
// AWS's endpoint ("http://127.0.0.1:9000" for an emulator); pathStyle addresses buckets
// as <endpoint>/<bucket> (emulators need it) instead of <bucket>.<endpoint>.
func NewS3(cfg aws.Config, endpoint string, pathStyle bool) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
	}, S3Options)
}

// S3Options are the options NewS3 sets on every S3 client, after the endpoint.
func S3Options(o *s3.Options) {
	// S3 sends no whole-object checksum for a ranged GET (Parquet footers and column
	// chunks are read by range), and the SDK would log a line for each such read.
	o.DisableLogOutputChecksumValidationSkipped = true
	// A small body leaves with its headers in one write (onewrite.go).
	o.HTTPClient = withOneWrite(o.HTTPClient)
}

// NewDynamoDB returns a DynamoDB client for cfg with DynamoDBOptions. endpoint, when not
// empty, replaces AWS's endpoint (an emulator).
func NewDynamoDB(cfg aws.Config, endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}, DynamoDBOptions)
}

// DynamoDBOptions are the options NewDynamoDB sets on every DynamoDB client, after the
// endpoint: the SDK's, but that a request's JSON leaves with its headers in one write
// (onewrite.go).
func DynamoDBOptions(o *dynamodb.Options) {
	o.HTTPClient = withOneWrite(o.HTTPClient)
}
