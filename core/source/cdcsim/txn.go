package cdcsim

import (
	"fmt"
	"slices"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Row is a row to write: column name → value (Go values as the package doc lists; names
// compare ignoring case).
type Row map[string]any

// Txn is an open transaction. Each Insert, Update and Delete is one statement (one
// __$command_id) and gets its __$seqval when it runs; the commit LSN is handed out at Commit,
// so LSN order is commit order, not begin order. Until Commit, the rows it wrote are locked
// and invisible to readers. A Txn is used by one goroutine.
type Txn struct {
	db      *DB
	stmts   []stmt
	overlay map[*table]map[string]*row // ident → new version, nil for deleted
	done    bool
	// statements counts the transaction's statements; inStatement is true inside
	// Statement, whose row changes share one statement number.
	statements  int
	inStatement bool
	release     chan struct{} // closed when the transaction ends
}

type stmt struct {
	tbl           *table
	op            stmtOp
	before, after *row
	set           []int // column_ids an update sets
	keyChange     bool
	split         bool // logged as 1+2 (a split update)
	seq           lsn.LSN
	// statement numbers the statement within the transaction (from 1): its __$command_id.
	statement int
}

// nextStatementLocked is the statement number of a row change: the open Statement's, or
// a new one for a single-row call. db.mu is held.
func (tx *Txn) nextStatementLocked() int {
	if !tx.inStatement {
		tx.statements++
	}
	return tx.statements
}

// Statement runs fn as one multi-row statement (an UPDATE, DELETE or INSERT that touches
// several rows): every row change fn makes through tx shares one __$command_id, and each
// row keeps its own __$seqval, as SQL Server logs one record per row
// (docs/reference/sqlserver-cdc.md §3.3). An update's 3 and 4 (or a split update's 1 and 2)
// share their row's seqval. Statements do not nest (a *TxnError). When fn fails the
// transaction holds the changes made so far: roll it back.
func (tx *Txn) Statement(fn func(tx *Txn) error) error {
	db := tx.db
	db.mu.Lock()
	if tx.done || tx.inStatement {
		db.mu.Unlock()
		return &TxnError{Reason: "Statement inside a Statement, or on an ended transaction"}
	}
	tx.statements++
	tx.inStatement = true
	db.mu.Unlock()
	defer func() {
		db.mu.Lock()
		tx.inStatement = false
		db.mu.Unlock()
	}()
	return fn(tx)
}

type stmtOp int

const (
	opInsert stmtOp = iota
	opUpdate
	opDelete
)

// TxnError is a statement SQL Server would refuse: a duplicate key, a missing row, a write
// on a finished transaction.
type TxnError struct {
	Table  string
	Reason string
}

func (e *TxnError) Error() string { return e.Table + ": " + e.Reason }

// Begin opens a transaction.
func (db *DB) Begin() *Txn {
	db.mu.Lock()
	defer db.mu.Unlock()
	tx := &Txn{db: db, overlay: map[*table]map[string]*row{}, release: make(chan struct{})}
	db.open[tx] = struct{}{}
	return tx
}

// Exec runs fn in a transaction and commits it, or rolls it back when fn fails. A nil fn
// is a *source.InvalidArgumentError.
func (db *DB) Exec(fn func(tx *Txn) error) (lsn.LSN, error) {
	if fn == nil {
		return lsn.Zero, &source.InvalidArgumentError{Arg: "fn", Reason: "nil"}
	}
	tx := db.Begin()
	if err := fn(tx); err != nil {
		tx.Rollback()
		return lsn.Zero, err
	}
	return tx.Commit()
}

// lookup finds the current version of ident as this transaction sees it.
func (tx *Txn) lookup(t *table, ident string) (*row, bool) {
	if ov, ok := tx.overlay[t]; ok {
		if r, ok := ov[ident]; ok {
			return r, r != nil
		}
	}
	r, ok := t.rows[ident]
	return r, ok
}

func (tx *Txn) write(t *table, ident string, r *row) {
	ov := tx.overlay[t]
	if ov == nil {
		ov = map[string]*row{}
		tx.overlay[t] = ov
	}
	ov[ident] = r
}

// Insert adds a row. Columns left out are NULL; a key that exists is a *TxnError. For a
// heap it returns the new row id in key; otherwise the row's key in index order.
func (tx *Txn) Insert(table string, values Row) (key []any, err error) {
	db := tx.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if tx.done {
		return nil, &TxnError{Table: table, Reason: "transaction already ended"}
	}
	t, err := db.tableLocked(table)
	if err != nil {
		return nil, err
	}
	r := &row{vals: make([]any, len(t.cols)), ids: t.ids()}
	for name, v := range values {
		i, ok := t.colByName(name)
		if !ok {
			return nil, &TxnError{Table: table, Reason: fmt.Sprintf("Invalid column name '%s'", name)}
		}
		if t.cols[i].Computed {
			return nil, &TxnError{Table: table, Reason: fmt.Sprintf("The column '%s' cannot be modified because it is either a computed column or is the result of a UNION operator", name)}
		}
		nv, err := normalize(t.cols[i], v)
		if err != nil {
			return nil, err
		}
		r.vals[i] = nv
	}
	for i, c := range t.cols {
		if r.vals[i] == nil && !c.Nullable && !c.Computed {
			return nil, &TxnError{Table: table, Reason: fmt.Sprintf("Cannot insert the value NULL into column '%s'", c.Name)}
		}
	}
	if t.key == nil {
		t.nextRID++
		r.rid = t.nextRID
	}
	ident := t.keyIdent(r)
	if _, exists := tx.lookup(t, ident); exists {
		return nil, &TxnError{Table: table, Reason: "Violation of the unique index: duplicate key " + fmt.Sprint(t.keyOf(r))}
	}
	tx.write(t, ident, r)
	tx.stmts = append(tx.stmts, stmt{tbl: t, op: opInsert, after: r, seq: db.allocLSN(), statement: tx.nextStatementLocked()})
	return t.keyOf(r), nil
}

// Update sets columns of the row with key (index order; the row id for a heap). Setting a
// key column moves the row to a new key, recorded as 3+4 or, with
// Config.KeyUpdateAsDeleteInsert, as 1+2. A missing row is a *TxnError (SQL Server would
// update nothing; the simulator's callers always mean a row).
func (tx *Txn) Update(table string, key []any, set Row) error {
	return tx.update(table, key, set, false)
}

// UpdateAsDeleteInsert is Update logged as a split update: a delete (1) and an insert (2)
// sharing seqval and command_id, as SQL Server logs some updates of unique-indexed columns
// (docs/reference/known-failures.md §A2).
func (tx *Txn) UpdateAsDeleteInsert(table string, key []any, set Row) error {
	return tx.update(table, key, set, true)
}

func (tx *Txn) update(table string, key []any, set Row, split bool) error {
	db := tx.db
	db.mu.Lock()
	defer db.mu.Unlock()
	t, ident, old, err := tx.existingLocked(table, key)
	if err != nil {
		return err
	}
	nr := &row{vals: make([]any, len(t.cols)), ids: t.ids(), rid: old.rid}
	for i, c := range t.cols {
		nr.vals[i] = old.value(c.ColumnID)
	}
	var setIDs []int
	for name, v := range set {
		i, ok := t.colByName(name)
		if !ok {
			return &TxnError{Table: table, Reason: fmt.Sprintf("Invalid column name '%s'", name)}
		}
		if t.cols[i].Computed {
			return &TxnError{Table: table, Reason: fmt.Sprintf("The column '%s' cannot be modified because it is a computed column", name)}
		}
		nv, err := normalize(t.cols[i], v)
		if err != nil {
			return err
		}
		if nv == nil && !t.cols[i].Nullable {
			return &TxnError{Table: table, Reason: fmt.Sprintf("Cannot insert the value NULL into column '%s'", name)}
		}
		nr.vals[i] = nv
		setIDs = append(setIDs, t.cols[i].ColumnID)
	}
	slices.Sort(setIDs)
	nident := t.keyIdent(nr)
	keyChange := nident != ident
	if keyChange {
		if _, exists := tx.lookup(t, nident); exists {
			return &TxnError{Table: table, Reason: "Violation of the unique index: duplicate key " + fmt.Sprint(t.keyOf(nr))}
		}
		tx.write(t, ident, nil)
	}
	tx.write(t, nident, nr)
	tx.stmts = append(tx.stmts, stmt{tbl: t, op: opUpdate, before: old, after: nr, set: setIDs, keyChange: keyChange, split: split, seq: db.allocLSN(), statement: tx.nextStatementLocked()})
	return nil
}

// Delete removes the row with key (index order; the row id for a heap). A missing row is a
// *TxnError.
func (tx *Txn) Delete(table string, key []any) error {
	db := tx.db
	db.mu.Lock()
	defer db.mu.Unlock()
	t, ident, old, err := tx.existingLocked(table, key)
	if err != nil {
		return err
	}
	tx.write(t, ident, nil)
	tx.stmts = append(tx.stmts, stmt{tbl: t, op: opDelete, before: old, seq: db.allocLSN(), statement: tx.nextStatementLocked()})
	return nil
}

// existingLocked finds the row an Update or Delete names: its table, its identity and its
// current image as this transaction sees it. An ended transaction, an unknown table, a bad
// key and a missing row are typed errors. db.mu is held.
func (tx *Txn) existingLocked(name string, key []any) (*table, string, *row, error) {
	if tx.done {
		return nil, "", nil, &TxnError{Table: name, Reason: "transaction already ended"}
	}
	t, err := tx.db.tableLocked(name)
	if err != nil {
		return nil, "", nil, err
	}
	k, err := t.normKey(key)
	if err != nil {
		return nil, "", nil, err
	}
	ident := t.identOfKey(k)
	old, ok := tx.lookup(t, ident)
	if !ok {
		return nil, "", nil, &TxnError{Table: name, Reason: fmt.Sprintf("no row with key %v", key)}
	}
	return t, ident, old, nil
}

// Rollback ends the transaction without a trace in the table or the change tables.
func (tx *Txn) Rollback() {
	db := tx.db
	db.mu.Lock()
	defer db.mu.Unlock()
	tx.endLocked()
}

func (tx *Txn) endLocked() {
	if tx.done {
		return
	}
	tx.done = true
	delete(tx.db.open, tx)
	close(tx.release)
}

// Commit makes the transaction durable at a new LSN, which it returns. A transaction that
// touched a table with a capture instance gets a cdc.lsn_time_mapping row at the current
// simulated time and change rows in every instance of those tables (at once, or at the next
// RunCapture with Config.ManualCapture). A transaction that wrote nothing commits without
// an LSN of its own and returns the zero LSN.
func (tx *Txn) Commit() (lsn.LSN, error) {
	db := tx.db
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.commitLocked(tx)
}

// committed is a transaction capture has not processed yet.
type committed struct {
	entry   commitEntry
	changes map[*instance][]change
}

func (db *DB) commitLocked(tx *Txn) (lsn.LSN, error) {
	if tx.done {
		return lsn.Zero, &TxnError{Reason: "transaction already ended"}
	}
	defer tx.endLocked()
	if len(tx.stmts) == 0 {
		return lsn.Zero, nil
	}
	at := db.allocLSN()
	c := &committed{changes: map[*instance][]change{}}
	for _, s := range tx.stmts {
		t := s.tbl
		// Apply to the table.
		switch s.op {
		case opInsert:
			t.put(t.keyIdent(s.after), s.after)
		case opUpdate:
			if s.keyChange {
				t.remove(t.keyIdent(s.before))
			}
			t.put(t.keyIdent(s.after), s.after)
		case opDelete:
			t.remove(t.keyIdent(s.before))
		}
		for _, ci := range db.instances {
			if ci.tbl != t {
				continue
			}
			cmd := int32(s.statement) + ci.cmdOffset
			add := func(op int8, r *row) {
				c.changes[ci] = append(c.changes[ci], change{start: at, seq: s.seq, op: op, cmd: cmd, vals: ci.image(r, op, s.set)})
			}
			switch s.op {
			case opInsert:
				add(2, s.after)
			case opDelete:
				add(1, s.before)
			case opUpdate:
				switch {
				case s.split || s.keyChange && db.cfg.KeyUpdateAsDeleteInsert:
					add(1, s.before)
					add(2, s.after)
				case s.keyChange || ci.capturesAny(s.set):
					add(3, s.before)
					add(4, s.after)
				}
			}
		}
	}
	if len(c.changes) == 0 && !db.touchesCaptured(tx) {
		return at, nil
	}
	c.entry = db.newEntry(at, false)
	db.pending = append(db.pending, c)
	if !db.cfg.ManualCapture {
		db.captureLocked()
	}
	return at, nil
}

func (db *DB) touchesCaptured(tx *Txn) bool {
	for _, s := range tx.stmts {
		for _, ci := range db.instances {
			if ci.tbl == s.tbl {
				return true
			}
		}
	}
	return false
}

// RunCapture processes every committed transaction into the change tables and the mapping,
// as one run of the capture job does. It returns the new max LSN.
func (db *DB) RunCapture() lsn.LSN {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.captureLocked()
	return db.maxLSNLocked()
}

func (db *DB) captureLocked() {
	for _, c := range db.pending {
		for ci, rows := range c.changes {
			if ci.dropped {
				continue
			}
			ci.changes = append(ci.changes, rows...)
		}
		db.appendEntry(c.entry)
	}
	db.pending = nil
}

// CommitBeforeRead queues tx to be committed by the next ReadTable after the caller took
// its stamp and before the read's SELECT: a writer between a chunk's stamp and its read.
// A nil transaction, one of another DB or one already ended is a
// *source.InvalidArgumentError and nothing is queued.
func (db *DB) CommitBeforeRead(tx *Txn) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	switch {
	case tx == nil:
		return &source.InvalidArgumentError{Arg: "transaction", Reason: "nil"}
	case tx.db != db:
		return &source.InvalidArgumentError{Arg: "transaction", Reason: "begun on another DB"}
	case tx.done:
		return &source.InvalidArgumentError{Arg: "transaction", Reason: "already ended"}
	}
	db.queued = append(db.queued, tx)
	return nil
}

func (db *DB) commitQueuedLocked() error {
	q := db.queued
	db.queued = nil
	for _, tx := range q {
		if _, err := db.commitLocked(tx); err != nil {
			return err
		}
	}
	return nil
}

// ids returns the column_id list of the current columns (shared by the rows written under it).
func (t *table) ids() []int {
	if t.idsCache == nil {
		t.idsCache = make([]int, len(t.cols))
		for i, c := range t.cols {
			t.idsCache[i] = c.ColumnID
		}
	}
	return t.idsCache
}
