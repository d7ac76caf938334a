package dynamo_test

import (
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo/dynamotest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
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
