package condput_test

import (
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

func TestConformanceOnS3(t *testing.T) {
	srv := emulators.StartS3(t)
	logstoretest.Run(t, func(t *testing.T) logstoretest.Table {
		store := s3store.New(srv.Client(), srv.Bucket(t), "warehouse/orders")
		return logstoretest.Table{Store: store, New: func() logstore.LogStore { return condput.New(store) }}
	})
}
