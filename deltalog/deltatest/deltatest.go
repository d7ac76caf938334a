// Package deltatest holds end-to-end checks of the deltalog commit protocol that every
// backend (local disk, S3 conditional put, DynamoDB) must pass: ConcurrentAppends (many
// writers, versions contiguous, every append exactly once, replays skipped) and
// FaultCommits (a writer killed at every step of a commit leaves a readable table and
// loses nothing committed). Backends call them from their own tests with a function that
// opens one shared table; Faults wraps a backend's calls to kill a writer.
package deltatest

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Schema is the one-column schema the checks write ("id" long, nullable).
var Schema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

// fakeAdd is an add action for a data file that need not exist: the checks exercise the
// log only. The path names the batch so a test can count a batch's files.
func fakeAdd(path string) deltalog.Add {
	return deltalog.Add{Path: path, Size: 1, ModificationTime: 1700000000000, DataChange: true, Stats: `{"numRecords":1}`}
}

// appendOnce reads the latest snapshot through reader and commits one file with
// txn(appID, version) through tbl, creating the table when it does not exist.
func appendOnce(ctx context.Context, reader, tbl *deltalog.Table, appID string, version int64, path string) (deltalog.CommitResult, error) {
	snap, err := reader.Snapshot(ctx)
	if err != nil {
		return deltalog.CommitResult{}, err
	}
	tx := tbl.Begin(snap)
	if err := tx.SetSchema(Schema); err != nil {
		return deltalog.CommitResult{}, err
	}
	tx.Add(fakeAdd(path))
	tx.SetAppTxn(appID, version)
	tx.SetUserMetadata(fmt.Sprintf(`{"app":%q,"batch":%d}`, appID, version))
	return tx.Commit(ctx)
}

// countPrefix counts the live files whose path starts with prefix.
func countPrefix(files []deltalog.Add, prefix string) int {
	n := 0
	for _, f := range files {
		if strings.HasPrefix(f.Path, prefix) {
			n++
		}
	}
	return n
}
