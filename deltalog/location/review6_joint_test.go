package location_test

import (
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// Two tables of one spec opened as production opens them (a DynamoDB client each, of
// one region and endpoint) are joint, so a warm stream's check of its facts table and
// bronze is one request (docs/decisions/0019-dynamo-warm-check-one-request.md); a table
// with itself, opened twice, is not (its keys would be asked twice).
func TestReview6OpenedTablesJoint(t *testing.T) {
	srv := emulators.StartS3(t)
	ddbEndpoint := emulators.DynamoDBEndpoint(t)
	table := emulators.UniqueName("delta_log_")
	ctx := t.Context()
	if err := dynamo.CreateTable(ctx, emulators.DynamoDB(t), table, dynamo.SetupOptions{SkipTTL: true, PollInterval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	bucket := srv.Bucket(t)
	cfg := location.Config{
		Endpoint: srv.URL, PathStyle: true, Credentials: emulators.Credentials,
		DynamoTable: table, DynamoEndpoint: ddbEndpoint, DynamoRegion: emulators.Region,
	}
	open := func(u string) logstore.LogStore {
		t.Helper()
		_, l, err := location.Open(ctx, u, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	bronze, facts, again := open("s3://"+bucket+"/lake/orders"), open("s3://"+bucket+"/lake/orders_facts"), open("s3://"+bucket+"/lake//orders/")
	j, ok := facts.(logstore.Joint)
	if !ok {
		t.Fatalf("log store %T is not a logstore.Joint", facts)
	}
	if !j.JointWith(bronze) {
		t.Error("JointWith: false for bronze and its facts table opened by location.Open")
	}
	if bronze.(logstore.Joint).JointWith(again) {
		t.Error("JointWith: true for one table opened twice")
	}
}
