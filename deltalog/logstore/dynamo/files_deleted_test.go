package dynamo_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/internal/commitlog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// A table's files deleted and its entries kept, against docs/operations.md § Starting a
// table over (which deletes both): what each LogStore does, pinned. A warm writer that
// read or wrote the table less than KnownFor ago checks only the Query, whose newest entry
// is still the one it knew, so its next commit lands alone in the empty log (4.json with
// no 0..3: a log no one can read until the table is started over properly); once KnownFor
// has passed, its listing finds the commit it knew gone (Replaced), it reads the table as
// empty, and its first commit is refused (*StaleEntryError, logstore.ErrRefused), as a
// new process's is.
func TestFilesDeletedEntriesKept(t *testing.T) {
	srv := emulators.StartS3(t)
	for _, late := range []bool{false, true} {
		name := "within-KnownFor"
		if late {
			name = "after-KnownFor"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, srv)
			ctx := t.Context()
			now := time.Unix(1_700_000_000, 0)
			l := e.logStore(t, dynamo.Options{Now: func() time.Time { return now }})
			for v := range int64(4) {
				if err := l.Write(ctx, v, logstoretest.Commit(0, int(v))); err != nil {
					t.Fatal(err)
				}
			}
			wipeStore(t, e)
			fresh := e.logStore(t, dynamo.Options{})
			if v, err := fresh.Latest(ctx); err != nil || v != -1 {
				t.Fatalf("a new process: Latest = %d, %v; want -1", v, err)
			}
			var stale *dynamo.StaleEntryError
			if err := fresh.Write(ctx, 0, logstoretest.Commit(1, 0)); !errors.As(err, &stale) || !errors.Is(err, logstore.ErrRefused) {
				t.Fatalf("a new process: Write(0) = %v; want *StaleEntryError", err)
			}
			if !late {
				if v, err := l.Latest(ctx); err != nil || v != 3 || l.Replaced() != 0 {
					t.Fatalf("warm, within KnownFor: Latest = %d, %v, Replaced %d; want 3, 0 (not told)", v, err, l.Replaced())
				}
				if err := l.Write(ctx, 4, logstoretest.Commit(0, 4)); err != nil {
					t.Fatalf("warm, within KnownFor: Write(4) = %v", err)
				}
				if got := commits(t, e); !slices.Equal(got, []int64{4}) {
					t.Fatalf("commit files %v, want [4]: the warm writer's commit alone in the empty log", got)
				}
				return
			}
			now = now.Add(dynamo.DefaultKnownFor)
			if v, err := l.Latest(ctx); err != nil || v != -1 || l.Replaced() != 1 {
				t.Fatalf("warm, after KnownFor: Latest = %d, %v, Replaced %d; want -1, 1", v, err, l.Replaced())
			}
			if err := l.Write(ctx, 0, logstoretest.Commit(0, 0)); !errors.As(err, &stale) {
				t.Fatalf("warm, after KnownFor: Write(0) = %v; want *StaleEntryError", err)
			}
			if got := commits(t, e); len(got) != 0 {
				t.Fatalf("commit files %v, want none", got)
			}
		})
	}
}

// commits lists the versions of the table's commit files.
func commits(t *testing.T, e env) []int64 {
	t.Helper()
	var out []int64
	for info, err := range e.store.List(t.Context(), commitlog.Dir, "") {
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := commitlog.ParseKey(info.Key); ok {
			out = append(out, v)
		}
	}
	return out
}
