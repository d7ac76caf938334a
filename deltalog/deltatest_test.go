package deltalog_test

import (
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/localfs"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// localTable opens the table in dir on local disk with the local-disk log store.
func localTable(t testing.TB, dir string) (*localstore.Store, *localfs.LogStore) {
	s, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := localfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}

func TestConcurrentAppendsLocal(t *testing.T) {
	dir := t.TempDir()
	deltatest.ConcurrentAppends(t, func() (storage.Store, logstore.LogStore) {
		return localTable(t, dir)
	}, 8, 50)
}

func TestFaultCommitsLocal(t *testing.T) {
	dir := t.TempDir()
	deltatest.FaultCommits(t, func(f *deltatest.Faults) (storage.Store, logstore.LogStore) {
		s, l := localTable(t, dir)
		return f.Store(s), f.LogStore(l)
	})
}

// The conditional-put log store over a wrapped store, so kills land inside Write too.
func TestFaultCommitsCondPut(t *testing.T) {
	dir := t.TempDir()
	deltatest.FaultCommits(t, func(f *deltatest.Faults) (storage.Store, logstore.LogStore) {
		s, _ := localTable(t, dir)
		fs := f.Store(s)
		return fs, f.LogStore(condput.New(fs))
	})
}

// Uncontended commits on local disk: requests per commit and commits/s.
//
//	go test ./deltalog/ -run '^$' -bench Commits -benchtime 300x
func BenchmarkCommitsLocal(b *testing.B) {
	for _, c := range []struct {
		name     string
		interval int
		chain    bool
	}{{"no-checkpoints", -1, false}, {"checkpoint-every-10", 10, false}, {"checkpoint-every-10/chained", 10, true}} {
		b.Run("localfs/"+c.name, func(b *testing.B) {
			dir := b.TempDir()
			deltatest.BenchmarkCommits(b, func(f *deltatest.Faults) (storage.Store, logstore.LogStore) {
				s, l := localTable(b, dir)
				return f.Store(s), f.LogStore(l)
			}, c.interval, c.chain)
		})
		b.Run("condput/"+c.name, func(b *testing.B) {
			dir := b.TempDir()
			deltatest.BenchmarkCommits(b, func(f *deltatest.Faults) (storage.Store, logstore.LogStore) {
				s, _ := localTable(b, dir)
				fs := f.Store(s)
				return fs, condput.New(fs)
			}, c.interval, c.chain)
		})
	}
}
