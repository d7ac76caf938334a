package deltalog

import (
	"context"
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
)

// UncoordinatedCommitError refuses a commit, through a log store that is not
// logstore.Coordinated (S3 conditional put, local disk), to a table whose log shows that
// its writers coordinate commits through DynamoDB: TempFile, a DynamoDB log store's
// temporary commit file (logstore.DynamoTempFile), is in its _delta_log. Such writers
// (Spark's S3DynamoDBLogStore, delta-rs before 1.0 with AWS_S3_LOCKING_PROVIDER=dynamodb,
// mssqlcdc with a DynamoDB table) exclude one another through the DynamoDB table only; a
// commit that bypasses it can take a version one of them has claimed, and one of the two
// commits is lost (docs/reference/delta-protocol.md §13.1, §13.10). Nothing was written.
// Commit through the same DynamoDB table (mssqlcdc: --dynamo-table, or the spec's
// storage.dynamo_table); when every writer of the table has moved off DynamoDB for good,
// delete _delta_log/.tmp/ and the check passes
// (docs/decisions/0029-mixed-log-stores.md).
type UncoordinatedCommitError struct {
	Table    string // the table's URL
	TempFile string // the temporary commit file found, relative to the table root
}

func (e *UncoordinatedCommitError) Error() string {
	return fmt.Sprintf("deltalog: refusing to commit to %s without its DynamoDB log table: %s shows that its writers "+
		"coordinate commits through DynamoDB, and a commit through another log store (S3 conditional put, local disk) "+
		"bypasses that (two commits can claim one version, and one is lost); commit through the DynamoDB table the other writers use (mssqlcdc: --dynamo-table, "+
		"or the spec's storage.dynamo_table, with their region and tablePath scheme), or, if every writer has left DynamoDB "+
		"for good, delete %s", e.Table, e.TempFile, logstore.DynamoTempDir)
}

// CheckCoordination returns *UncoordinatedCommitError when the table's log shows DynamoDB
// coordination (a logstore.DynamoTempFile) and its log store is not logstore.Coordinated;
// nil for a Coordinated log store, without a request. Transaction.Commit calls it before
// it writes; a command that commits later in its run (maintain) calls it first, so that it
// refuses before doing anything.
//
// Once a table is found clean the Table remembers it and makes no request again: its first
// open told when it listed the log from its start (the temporary files sort before the
// commits; a short or checkpoint-less log is listed so), else the first check lists
// _delta_log/.tmp/ (one request while the first page holds a DynamoDB temporary file or
// all of the prefix). A table found uncoordinated is listed again at the next check, so a
// fix takes effect without a new process. A writer that starts committing through
// DynamoDB after this Table was found clean is not told until the next process.
func (t *Table) CheckCoordination(ctx context.Context) error {
	if _, ok := logstore.Unwrap(t.logs).(logstore.Coordinated); ok {
		return nil
	}
	t.mu.Lock()
	clean := t.coordClean
	t.mu.Unlock()
	if clean {
		return nil
	}
	temp := ""
	for oi, err := range t.store.List(ctx, logstore.DynamoTempDir, "") {
		if err != nil {
			return fmt.Errorf("check log store: list %s: %w", logstore.DynamoTempDir, err)
		}
		if _, ok := logstore.DynamoTempFile(oi.Key); ok {
			temp = oi.Key
			break
		}
	}
	return t.coordinated(temp)
}

// coordinated records what a listing of _delta_log/.tmp/ found: temp, the first DynamoDB
// temporary commit file, or "" (clean, remembered); *UncoordinatedCommitError for a
// temp file.
func (t *Table) coordinated(temp string) error {
	if temp != "" {
		return &UncoordinatedCommitError{Table: t.store.URL(), TempFile: temp}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.coordClean = true
	return nil
}

// sawListing takes from a listing of the log what it tells of DynamoDB coordination: one
// from the log's start holds every temporary file (they sort first), so the table is
// clean when it found none. No request.
func (t *Table) sawListing(l logListing) {
	if l.fromStart && l.dynamoTemp == "" {
		_ = t.coordinated("")
	}
}
