package dynamo_test

import (
	"errors"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// The refusals that need an operator match logstore.ErrRefused, so a committer reports
// them instead of retrying them as undecided writes.
func TestRefusalsMatchErrRefused(t *testing.T) {
	for _, err := range []error{&dynamo.PreviousCommitMissingError{}, &dynamo.StaleEntryError{}, &dynamo.TempFileMissingError{}} {
		if !errors.Is(err, logstore.ErrRefused) {
			t.Errorf("%T does not match logstore.ErrRefused", err)
		}
	}
	srv := emulators.StartS3(t)
	e := newEnv(t, srv)
	l := e.logStore(t, dynamo.Options{})
	ctx := t.Context()
	if err := l.Write(ctx, 0, []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete(ctx, logKey(0)); err != nil { // the table is dropped
		t.Fatal(err)
	}
	err := e.logStore(t, dynamo.Options{}).Write(ctx, 0, []byte("new\n"))
	var se *dynamo.StaleEntryError
	if !errors.As(err, &se) || !errors.Is(err, logstore.ErrRefused) {
		t.Fatalf("Write(0) on a re-created table: %v, want *StaleEntryError matching ErrRefused", err)
	}
}
