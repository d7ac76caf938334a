package localfs_test

import (
	"testing"

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
