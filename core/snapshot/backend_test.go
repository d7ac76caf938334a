package snapshot_test

import (
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/internal/emulake"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

const (
	backendLocal = "local"
	// backendAWS is S3 on gofakes3 and the DynamoDB log store on dynalite
	// (MSSQLCDC_DYNAMODB_ENDPOINT, which scripts/test.sh starts).
	backendAWS = "aws"
)

// useBackend points spec's locations at the backend (local paths are already set).
func useBackend(t *testing.T, backend string, spec *config.Spec) *emulake.Lake {
	if backend != backendAWS {
		return nil
	}
	l := emulake.New(t)
	l.Use(spec)
	return l
}

// stores are the raw store and log store at url.
func (e *env) stores(url string) (storage.Store, logstore.LogStore) {
	if e.aws != nil {
		st := e.aws.Store(url)
		return st, e.aws.LogStore(e.t, e.aws.DDB, st)
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
