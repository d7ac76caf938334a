package emulators

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location/awsclient"
)

// DynamoDBEndpointEnv names the environment variable that holds the DynamoDB emulator's
// endpoint ("http://127.0.0.1:<port>"); scripts/test.sh starts dynalite and sets it.
const DynamoDBEndpointEnv = "MSSQLCDC_DYNAMODB_ENDPOINT"

// DynamoDBEndpoint returns the emulator's endpoint. When it is not set, the test fails if
// the CI environment variable is set (CI must run every test) and is skipped otherwise,
// with a message saying how to run it.
func DynamoDBEndpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv(DynamoDBEndpointEnv)
	if ep != "" {
		return ep
	}
	msg := DynamoDBEndpointEnv + " is not set: run the tests with scripts/with-dynalite.sh (or make test), which starts dynalite"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// DynamoDB returns a client for the emulator (see DynamoDBEndpoint): production's client
// (awsclient.NewDynamoDB) with the emulator's endpoint, Region and Credentials.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	c, err := DynamoDBClient(DynamoDBEndpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// DynamoDBClient is DynamoDB for an emulator at endpoint, for programs (s3server).
func DynamoDBClient(endpoint string) (*dynamodb.Client, error) {
	cfg, err := awsConfig()
	if err != nil {
		return nil, err
	}
	return awsclient.NewDynamoDB(cfg, endpoint), nil
}

// UniqueName returns prefix followed by 12 random hex digits, for tables and buckets that
// tests running in parallel (also in other packages against the same emulator) must not
// share.
func UniqueName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
