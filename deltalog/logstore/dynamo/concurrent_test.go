package dynamo_test

import (
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// 8 writers × 50 commits each, every writer with its own LogStore on one table: versions
// 0..399 are contiguous and every commit is present exactly once (issue 3's acceptance,
// at the log store level).
func TestEightWritersFiftyCommits(t *testing.T) {
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	logstoretest.ConcurrentWriters(t, logstoretest.Table{
		Store: e.store,
		New:   func() logstore.LogStore { return e.logStore(t, dynamo.Options{}) },
	}, 8, 50)
}
