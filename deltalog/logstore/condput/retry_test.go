package condput_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// retriedPut applies the first PutIfAbsent and then answers as its retry would: the SDK
// resends a PutObject whose answer was lost, and If-None-Match: * fails on the object the
// first request created (412).
type retriedPut struct {
	storage.Store
	retried bool
}

func (s *retriedPut) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if !s.retried {
		s.retried = true
		if err := s.Store.PutIfAbsent(ctx, key, data); err != nil {
			return err
		}
	}
	return s.Store.PutIfAbsent(ctx, key, data)
}

// A write whose retry finds its own bytes succeeded: the log store contract says
// ErrVersionExists means the version is someone else's.
func TestRetriedPutIsStillOurs(t *testing.T) {
	base, err := localstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := condput.New(&retriedPut{Store: base})
	if err := l.Write(t.Context(), 0, []byte("v0\n")); err != nil {
		t.Fatalf("Write(0) whose retry found its own bytes: %v, want nil", err)
	}
	// Other bytes at an existing version are still a lost race.
	if err := l.Write(t.Context(), 0, []byte("other\n")); !errors.Is(err, logstore.ErrVersionExists) {
		t.Fatalf("Write(0) of other bytes: %v, want ErrVersionExists", err)
	}
}
