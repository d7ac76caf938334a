package localfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/logstoretest"
)

func TestConformance(t *testing.T) {
	logstoretest.Run(t, func(t *testing.T) logstoretest.Table {
		dir := t.TempDir()
		first, err := localfs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		return logstoretest.Table{Store: first.Store(), New: func() logstore.LogStore {
			l, err := localfs.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}}
	})
}

// A kept Table tells the table deleted and written again in its directory
// (docs/operations.md § Starting a table over).
func TestDeltaRecreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "orders")
	deltatest.Recreated(t, func() (storage.Store, logstore.LogStore) {
		l, err := localfs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		return l.Store(), l
	}, func(t *testing.T) {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	})
}
