package emulators

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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

// DynamoDB returns a client for the emulator (see DynamoDBEndpoint).
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	ep := DynamoDBEndpoint(t)
	return dynamodb.New(dynamodb.Options{
		Region:       Region,
		Credentials:  Credentials,
		BaseEndpoint: aws.String(ep),
	})
}

// UniqueName returns prefix followed by 12 random hex digits, for tables and buckets that
// tests running in parallel (also in other packages against the same emulator) must not
// share.
func UniqueName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
