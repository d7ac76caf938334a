// Package localfs is a logstore.LogStore for a table on local disk. Version v is created
// exclusively: the commit is written to a synced temporary file in _delta_log/ and then
// hard-linked to <v:020>.json, which fails when that name exists (link(2) never replaces),
// so exactly one writer wins and readers never see a partial file. This holds across
// processes sharing the directory on one machine.
package localfs

import (
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// LogStore commits a table in a local directory. Safe for concurrent use.
type LogStore struct {
	// The exclusive create is localstore's PutIfAbsent (temporary file + link), so the
	// conditional-put log store does the rest.
	*condput.LogStore
	store *localstore.Store
}

var _ logstore.LogStore = (*LogStore)(nil)

// New returns a LogStore for the table in dir. It does no I/O.
func New(dir string) (*LogStore, error) {
	s, err := localstore.New(dir)
	if err != nil {
		return nil, fmt.Errorf("localfs: %w", err)
	}
	return &LogStore{LogStore: condput.New(s), store: s}, nil
}

// Store is the local Store of the table's directory.
func (l *LogStore) Store() *localstore.Store { return l.store }
