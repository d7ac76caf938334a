package dynamo_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/ddbcount"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/dynamotest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
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
		l, err := dynamo.New(dynamotest.WithFaults(e.ddb, f), s, dynamo.Options{Table: e.table, Scheme: "s3a", RetryDelay: 1, Attempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		return s, f.LogStore(l)
	})
}

// A Table's first open through DynamoDB makes one Query, lists the log once (whole when
// the newest entry shows it short, else from _last_checkpoint) (logstore.Lister), then
// reads the commits; the next open is one Query.
// An empty table, once seen, is one Query too, and its first commit makes no pre-check.
func TestDeltaFirstOpenListsOnce(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	ctx := t.Context()
	c := &storagetest.Counter{}
	open := func() *deltalog.Table {
		return deltalog.Open(storagetest.NewCounting(e.store, c), counted(t, e, c), deltalog.Options{})
	}
	commit := func(tbl *deltalog.Table, n int64) {
		t.Helper()
		snap, err := tbl.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.Begin(snap)
		if err := tx.SetSchema(deltatest.Schema); err != nil {
			t.Fatal(err)
		}
		tx.Add(deltalog.Add{Path: fmt.Sprintf("f%d.parquet", n), Size: 1, ModificationTime: 1700000000000, DataChange: true})
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, tbl *deltalog.Table, version int64, want map[string]int) {
		t.Helper()
		c.Reset()
		snap, err := tbl.Snapshot(ctx)
		if err != nil || snap.Version() != version {
			t.Fatalf("%s: %v, %v; want version %d", step, snap, err, version)
		}
		if !maps.Equal(c.Counts(), want) {
			t.Errorf("%s: %s, want %v", step, summary(c), want)
		}
	}
	first := open()
	// No entry and an empty listing: no _last_checkpoint read (logstore.ListWholeIfShort).
	check("first open, empty", first, -1, map[string]int{"List": 1, "ddb.Query": 1})
	check("second open, empty", first, -1, map[string]int{"ddb.Query": 1})
	c.Reset()
	commit(first, 0)
	if want := map[string]int{"ddb.Query": 1, "Put": 1, "ddb.PutItem": 1, "CopyIfAbsent": 1, "ddb.UpdateItem": 1}; !maps.Equal(c.Counts(), want) {
		t.Errorf("first commit: %s, want %v", summary(c), want)
	}
	commit(first, 1)
	// A short log (its newest entry below 100) is listed whole, without _last_checkpoint.
	check("a new process's first open", open(), 1, map[string]int{"Get": 2, "List": 1, "ddb.Query": 1}) // 0.json, 1.json
	// With no entry (as when they expired: here the log store keys another tablePath), a
	// short log is listed whole too, and the listing finds the latest commit.
	expired, err := dynamo.New(ddbcount.Counting(e.ddb, c), storagetest.NewCounting(e.store, c), dynamo.Options{Table: e.table, TablePath: "s3://elsewhere/expired"})
	if err != nil {
		t.Fatal(err)
	}
	check("first open, entries expired", deltalog.Open(storagetest.NewCounting(e.store, c), expired, deltalog.Options{}), 1,
		map[string]int{"Get": 2, "List": 1, "ddb.Query": 1})
}

// A kept Table tells the table deleted and written again under its path, its DynamoDB
// entries deleted with it (a Write of version 0 refuses while the old ones are there:
// StaleEntryError) (docs/operations.md § Starting a table over).
func TestDeltaRecreated(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	deltatest.Recreated(t, func() (storage.Store, logstore.LogStore) {
		return e.store, e.logStore(t, dynamo.Options{})
	}, func(t *testing.T) {
		wipeStore(t, e)
		deleteEntries(t, e, e.logStore(t, dynamo.Options{}).TablePathKey())
	})
}

// deleteEntries deletes the entries of tablePath, as a person starting the table over
// does, or as the TTL does.
func deleteEntries(t *testing.T, e env, tablePath string) {
	t.Helper()
	ctx := t.Context()
	out, err := e.ddb.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &e.table,
		KeyConditionExpression:    aws.String("tablePath = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: tablePath}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range out.Items {
		if _, err := e.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &e.table, Key: map[string]types.AttributeValue{
			"tablePath": item["tablePath"], "fileName": item["fileName"],
		}}); err != nil {
			t.Fatal(err)
		}
	}
}
