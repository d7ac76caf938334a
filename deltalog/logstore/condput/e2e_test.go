package condput_test

import (
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// Delta tables (deltalog transactions) committed by conditional put on the S3 emulator.

func TestDeltaConcurrentAppends(t *testing.T) {
	srv := emulators.StartS3(t)
	store := s3store.New(srv.Client(), srv.Bucket(t), "lake/orders")
	deltatest.ConcurrentAppends(t, func() (storage.Store, logstore.LogStore) {
		return store, condput.New(store)
	}, 8, 50)
}

func TestDeltaFaultCommits(t *testing.T) {
	srv := emulators.StartS3(t)
	store := s3store.New(srv.Client(), srv.Bucket(t), "lake/orders")
	deltatest.FaultCommits(t, func(f *deltatest.Faults) (storage.Store, logstore.LogStore) {
		s := f.Store(store)
		return s, f.LogStore(condput.New(s))
	})
}

// A kept Table tells the table deleted and written again under its path
// (docs/operations.md § Starting a table over).
func TestDeltaRecreated(t *testing.T) {
	srv := emulators.StartS3(t)
	store := s3store.New(srv.Client(), srv.Bucket(t), "lake/orders")
	deltatest.Recreated(t, func() (storage.Store, logstore.LogStore) {
		return store, condput.New(store)
	}, func(t *testing.T) { wipe(t, store) })
}

// wipe deletes every object under store.
func wipe(t *testing.T, store storage.Store) {
	t.Helper()
	var keys []string
	for info, err := range store.List(t.Context(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	for _, k := range keys {
		if err := store.Delete(t.Context(), k); err != nil {
			t.Fatal(err)
		}
	}
}
