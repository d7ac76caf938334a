package deltalog

import (
	"errors"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
)

// Was a hole (main 6dbf964, review5): the clean-up and the stale writer are two Tables
// (two processes: the maintenance job beside a stream writer; core/maintain.Run takes
// whatever Table its caller opened). The writer's Table read version 5 and nothing since, so it does not know version 6 is
// taken (knownTaken is false); another process commits up to 24 and cleans commits 0..9.
// With a log store whose Write is a conditional put of the commit file (condput, the S3
// default; localfs; the test's memLogStore), the put of 6.json succeeds in the cleaned
// range: Commit reports version 6, a commit no reader sees (they start at checkpoint
// 10), its rows lost. 1b696c4 only covered the Table that itself knows a newer version.
// Now Commit asks the log store for the latest version when its Table has not seen the
// snapshot's version as the newest within half the log retention (freshFor): version 24,
// so the commits since are read, 6 is missing, and the answer is
// *ConcurrentModificationError with nothing written (DynamoDB:
// TestReview5StaleSnapshotOtherTableCleanupDynamo).
func TestReview5StaleSnapshotOtherTableCleanup(t *testing.T) {
	for name, newLogs := range map[string]func(s *memStore, now func() time.Time) logstore.LogStore{
		"memLogStore": func(s *memStore, _ func() time.Time) logstore.LogStore { return &memLogStore{s: s} },
		"condput":     func(s *memStore, _ func() time.Time) logstore.LogStore { return condput.New(s) },
	} {
		t.Run(name, func(t *testing.T) {
			res, err, written := staleOtherTable(t, newLogs)
			var cme *ConcurrentModificationError
			if !errors.As(err, &cme) {
				t.Errorf("Commit on a snapshot older than another process's clean-up: %+v %v; want *ConcurrentModificationError", res, err)
			}
			if written {
				t.Errorf("6.json written into the cleaned range")
			}
		})
	}
}
