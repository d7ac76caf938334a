package snapshot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

const (
	backendLocal = "local"
	// backendAWS is S3 on gofakes3 and the DynamoDB log store on dynalite
	// (MSSQLCDC_DYNAMODB_ENDPOINT, which scripts/test.sh starts).
	backendAWS = "aws"
)

// awsBackend is an S3 bucket on gofakes3 and a DynamoDB log table on dynalite.
type awsBackend struct {
	s3     *emulators.S3Server
	bucket string
	ddb    *dynamodb.Client
	table  string
}

// useBackend points spec's locations at the backend (local paths are already set).
func useBackend(t *testing.T, backend string, spec *config.Spec) *awsBackend {
	if backend != backendAWS {
		return nil
	}
	ddb := emulators.DynamoDB(t)
	srv := emulators.StartS3(t)
	ab := &awsBackend{s3: srv, bucket: srv.Bucket(t), ddb: ddb, table: emulators.UniqueName("delta_log_")}
	if err := dynamo.CreateTable(context.Background(), ddb, ab.table, dynamo.SetupOptions{SkipTTL: true, PollInterval: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	root := "s3://" + ab.bucket + "/"
	spec.Bronze, spec.Checkpoint, spec.FactsTable = root+"bronze", root+"checkpoint", root+"facts"
	spec.Storage = config.Storage{DynamoTable: ab.table}
	return ab
}

// stores are the raw store and log store at url.
func (e *env) stores(url string) (storage.Store, logstore.LogStore) {
	if e.aws != nil {
		prefix := strings.TrimPrefix(url, "s3://"+e.aws.bucket+"/")
		st := s3store.New(e.aws.s3.Client(), e.aws.bucket, prefix)
		ls, err := dynamo.New(e.aws.ddb, st, dynamo.Options{Table: e.aws.table})
		if err != nil {
			e.t.Fatal(err)
		}
		return st, ls
	}
	st, err := localstore.New(url)
	if err != nil {
		e.t.Fatal(err)
	}
	ls, err := localfs.New(url)
	if err != nil {
		e.t.Fatal(err)
	}
	return st, ls
}
