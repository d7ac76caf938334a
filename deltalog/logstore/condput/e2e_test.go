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
