package cdcsim

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// Replicas and restores (docs/reference/sqlserver-cdc.md §13): a
// database can be restored to an earlier point (LSNs rewound: the commits after the backup
// are gone and new commits get the LSNs they had), and a DSN with read-only routing can
// land a session on a secondary whose redo is behind the primary.

// replicaLag is an armed LagReplica.
type replicaLag struct {
	at    lsn.LSN
	reads int
}

// LagReplica routes the next reads change reads (ReadChanges sessions) and table reads
// that check a stamp (TableRead.AtLeast) to a secondary whose redo has reached only LSN
// at: on that session sys.fn_cdc_get_max_lsn() is at and no change row past at exists.
// The primary, and every other call, is unaffected.
func (db *DB) LagReplica(at lsn.LSN, reads int) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.lag = &replicaLag{at: at, reads: reads}
}

// sessionMaxLocked is max_lsn as the session of a change read sees it: the lagging
// secondary's when LagReplica is armed (and counts the read), else the primary's.
func (db *DB) sessionMaxLocked() lsn.LSN {
	m := db.maxLSNLocked()
	if db.lag != nil && db.lag.reads > 0 {
		db.lag.reads--
		if db.lag.at.Less(m) {
			m = db.lag.at
		}
		if db.lag.reads == 0 {
			db.lag = nil
		}
	}
	return m
}

// Backup is a copy of a database's state (BACKUP DATABASE), for Restore.
type Backup struct {
	st *dbState
}

// dbState is everything a restore puts back. The clock is not part of it: time goes on.
type dbState struct {
	next      lsn.LSN
	pcg       []byte
	timeline  []commitEntry
	purged    int
	pending   []*committed
	lastEntry time.Time
	tables    map[string]*table
	instances []*instance
	created   int
}

// ErrOpenTransactions: Backup or Restore while a transaction is open.
var ErrOpenTransactions = errors.New("cdcsim: a transaction is open; commit or roll it back first")

// Backup copies the database as it is now (tables, change tables, the mapping, the log
// position). Transactions must not be open.
func (db *DB) Backup() (*Backup, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.open) > 0 {
		return nil, ErrOpenTransactions
	}
	return &Backup{st: db.saveLocked()}, nil
}

// Restore puts the database back to b (RESTORE DATABASE ... WITH KEEP_CDC): every commit
// after the backup is gone, max_lsn goes back, and the commits that follow get the LSNs
// the lost commits had, with new commit times. The clock keeps its reading. Transactions
// must not be open. b can be restored more than once.
func (db *DB) Restore(b *Backup) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.open) > 0 {
		return ErrOpenTransactions
	}
	st := cloneState(b.st)
	db.next = st.next
	if err := db.pcg.UnmarshalBinary(st.pcg); err != nil {
		return err
	}
	db.timeline, db.purged, db.pending, db.lastEntry = st.timeline, st.purged, st.pending, st.lastEntry
	db.tables, db.instances, db.created = st.tables, st.instances, st.created
	db.queued = nil
	return nil
}

func (db *DB) saveLocked() *dbState {
	pcg, _ := db.pcg.MarshalBinary()
	return cloneState(&dbState{
		next: db.next, pcg: pcg, timeline: db.timeline, purged: db.purged, pending: db.pending,
		lastEntry: db.lastEntry, tables: db.tables, instances: db.instances, created: db.created,
	})
}

// cloneState deep-copies st: tables and their rows, instances and their change rows, the
// pending commits, with every pointer between them remapped. Stored values are immutable
// and shared.
func cloneState(st *dbState) *dbState {
	out := &dbState{next: st.next, pcg: slices.Clone(st.pcg), timeline: slices.Clone(st.timeline), purged: st.purged,
		lastEntry: st.lastEntry, created: st.created, tables: make(map[string]*table, len(st.tables))}
	tmap := map[*table]*table{}
	for k, t := range st.tables {
		nt := t.clone()
		out.tables[k] = nt
		tmap[t] = nt
	}
	imap := map[*instance]*instance{}
	for _, ci := range st.instances {
		n := *ci
		n.tbl = tmap[ci.tbl]
		n.cols = slices.Clone(ci.cols)
		n.index = slices.Clone(ci.index)
		n.present = slices.Clone(ci.present)
		n.ddl = slices.Clone(ci.ddl)
		n.changes = slices.Clone(ci.changes)
		out.instances = append(out.instances, &n)
		imap[ci] = &n
	}
	for _, c := range st.pending {
		n := &committed{entry: c.entry, changes: map[*instance][]change{}}
		for ci, rows := range c.changes {
			if m, ok := imap[ci]; ok {
				n.changes[m] = slices.Clone(rows)
			}
		}
		out.pending = append(out.pending, n)
	}
	return out
}

// clone copies a table with new row versions (a row's pos is its index in list, which
// writes update).
func (t *table) clone() *table {
	n := &table{schema: t.schema, name: t.name, cols: slices.Clone(t.cols), nextColumnID: t.nextColumnID,
		key: slices.Clone(t.key), keyIDs: slices.Clone(t.keyIDs), rows: make(map[string]*row, len(t.rows)),
		list: make([]*row, len(t.list)), nextRID: t.nextRID, computed: maps.Clone(t.computed)}
	for ident, r := range t.rows {
		c := *r
		n.rows[ident] = &c
		n.list[c.pos] = &c
	}
	return n
}
