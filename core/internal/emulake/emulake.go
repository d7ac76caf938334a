// Package emulake is the AWS backend the end-to-end tests of core/snapshot and core/stream
// run on: an S3 bucket on the in-process S3 emulator (gofakes3) and a DynamoDB log table on
// dynalite (internal/emulators; MSSQLCDC_DYNAMODB_ENDPOINT, which scripts/test.sh starts).
// For tests only.
package emulake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// Lake is an S3 bucket on gofakes3 and a DynamoDB log table on dynalite.
type Lake struct {
	S3     *emulators.S3Server
	Bucket string
	DDB    *dynamodb.Client
	Table  string
}

// New starts an S3 emulator with a fresh bucket and creates a uniquely named log table on
// dynalite (without TTL); emulators.DynamoDB decides what happens when dynalite is
// missing. Both go away with t.
func New(t testing.TB) *Lake {
	t.Helper()
	ddb := emulators.DynamoDB(t)
	srv := emulators.StartS3(t)
	l := &Lake{S3: srv, Bucket: srv.Bucket(t), DDB: ddb, Table: emulators.UniqueName("delta_log_")}
	if err := dynamo.CreateTable(context.Background(), ddb, l.Table, dynamo.SetupOptions{SkipTTL: true, PollInterval: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	return l
}

// Use points spec's bronze, checkpoint and facts locations at s3://<bucket>/bronze,
// /checkpoint and /facts and its storage at the log table.
func (l *Lake) Use(spec *config.Spec) {
	root := "s3://" + l.Bucket + "/"
	spec.Bronze, spec.Checkpoint, spec.FactsTable = root+"bronze", root+"checkpoint", root+"facts"
	spec.Storage = config.Storage{DynamoTable: l.Table}
}

// Store is the store at url, an s3://<bucket>/ URL.
func (l *Lake) Store(url string) storage.Store {
	return s3store.New(l.S3.Client(), l.Bucket, strings.TrimPrefix(url, "s3://"+l.Bucket+"/"))
}

// LogStore is the DynamoDB log store over st, its requests sent through c (l.DDB or a
// wrapper of it).
func (l *Lake) LogStore(t testing.TB, c dynamo.Client, st storage.Store) logstore.LogStore {
	t.Helper()
	ls, err := dynamo.New(c, st, dynamo.Options{Table: l.Table})
	if err != nil {
		t.Fatal(err)
	}
	return ls
}
