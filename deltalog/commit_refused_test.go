package deltalog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
)

// refusingLog refuses every Write with a decided error: nothing written, and writing
// again cannot help (DynamoDB's stale entries of a dropped and re-created table, a
// previous commit missing from the log).
type refusingLog struct {
	logstore.LogStore
	writes int
}

var errStaleEntries = fmt.Errorf("old entries of a re-created table: %w", logstore.ErrRefused)

func (r *refusingLog) Write(context.Context, int64, []byte) error {
	r.writes++
	return errStaleEntries
}

// A refusal is reported as itself, at once: not retried 15 times as an undecided write,
// not turned into *CommitUnknownError (whose advice, retry with the same txn, would meet
// the same refusal forever), and not hidden behind "write kept failing".
func TestRefusedWriteIsReportedAsItself(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	inner := &memLogStore{s: s}
	createTable(t, Open(s, inner, Options{}))
	rl := &refusingLog{LogStore: inner}
	tbl := Open(s, rl, Options{RetryBaseDelay: time.Microsecond})
	tx := tbl.Begin(snapshot(t, tbl))
	tx.Add(testAdd("x"))
	_, err := tx.Commit(ctx)
	var cue *CommitUnknownError
	if !errors.Is(err, errStaleEntries) || errors.As(err, &cue) {
		t.Fatalf("commit: %v; want the refusal itself", err)
	}
	if rl.writes != 1 {
		t.Fatalf("%d writes, want 1", rl.writes)
	}
}
