package deltalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// plainLogStore commits with the store's PutIfAbsent and finds the latest version by
// listing the log from a hint: enough for tests of the reader, which only read.
type plainLogStore struct{ s storage.Store }

var _ logstore.LogStore = plainLogStore{}

func (l plainLogStore) Write(ctx context.Context, v int64, data []byte) error {
	err := l.s.PutIfAbsent(ctx, CommitFileKey(v), data)
	if errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("write version %d: %w", v, logstore.ErrVersionExists)
	}
	return err
}

func (l plainLogStore) Latest(ctx context.Context) (int64, error) {
	from := int64(0)
	if lc, ok, err := ReadLastCheckpoint(ctx, l.s); err != nil {
		return 0, err
	} else if ok {
		from = lc.Version
	}
	ls, err := listLog(ctx, l.s, from)
	if err != nil {
		return 0, err
	}
	return ls.maxCommit, nil
}

func (l plainLogStore) Read(ctx context.Context, v int64) ([]byte, error) {
	rc, err := l.s.Get(ctx, CommitFileKey(v))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// openDir opens the table in dir on local disk.
func openDir(t testing.TB, dir string) *Table {
	t.Helper()
	st, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Open(st, plainLogStore{st}, Options{})
}

// reopen is a new Table on tbl's store and log store: a reader that knows nothing of the
// table yet (a Table keeps the newest snapshot it read or committed).
func reopen(tbl *Table) *Table { return Open(tbl.store, tbl.logs, tbl.opts) }

// tombstonesOf is s.Tombstones(), failing the test on an error.
func tombstonesOf(t testing.TB, s *Snapshot) []Remove {
	t.Helper()
	r, err := s.Tombstones()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
