package deltalog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
)

// rivalThenFailLog lets a rival commit at v before our first write, then fails that write
// without a verdict (a timeout): the read-back finds the rival's bytes, so the outcome is
// decided — our commit is not at v and can never land there.
type rivalThenFailLog struct {
	logstore.LogStore
	rival func(v int64)
	done  bool
}

func (r *rivalThenFailLog) Write(ctx context.Context, v int64, data []byte) error {
	if !r.done {
		r.done = true
		r.rival(v)
		return errFlaky
	}
	return r.LogStore.Write(ctx, v, data)
}

// An undecided write that reads back as another writer's commit is decided: a conflict
// found afterwards is reported as itself, not as *CommitUnknownError (whose advice, retry
// with the same txn, cannot succeed against a changed schema).
func TestDecidedWriteReportsTheConflict(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	inner := &memLogStore{s: s}
	tbl := Open(s, inner, Options{RetryBaseDelay: time.Microsecond})
	createTable(t, tbl)
	base := snapshot(t, tbl)
	evolved := arrow.NewSchema(append(testSchema.Fields(), arrow.Field{Name: "z", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), nil)
	ours := Open(s, &rivalThenFailLog{LogStore: inner, rival: func(int64) {
		tx := tbl.Begin(base)
		if err := tx.SetSchema(evolved); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}}, Options{RetryBaseDelay: time.Microsecond})
	tx := ours.Begin(base)
	tx.Add(testAdd("ours"))
	_, err := tx.Commit(ctx)
	var cme *ConcurrentModificationError
	var cue *CommitUnknownError
	if !errors.As(err, &cme) || cme.Version != 1 || errors.As(err, &cue) {
		t.Fatalf("commit: %v; want *ConcurrentModificationError at 1, not *CommitUnknownError", err)
	}
}
