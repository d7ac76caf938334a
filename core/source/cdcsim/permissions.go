package cdcsim

import (
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// ReaderUser is the database user the simulator's reading login maps to, named in the
// GRANT a *source.PermissionError carries.
const ReaderUser = "cdc_reader"

// DenySelect takes SELECT on the change table of a capture instance from the reading login
// (REVOKE SELECT ON cdc.[<ci>_CT]): ReadChanges and SplitChanges of the instance then fail
// as the mssql Source reports a refused change-table read whose instance still exists, a
// *source.PermissionError with the GRANT to run (docs/permissions.md). GrantSelect gives it
// back. Names match ignoring case.
func (db *DB) DenySelect(captureInstance string) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.denied == nil {
		db.denied = map[string]bool{}
	}
	db.denied[strings.ToLower(captureInstance)] = true
}

// GrantSelect undoes DenySelect.
func (db *DB) GrantSelect(captureInstance string) {
	db.mu.Lock()
	defer db.mu.Unlock()
	delete(db.denied, strings.ToLower(captureInstance))
}

// changeTableDeniedLocked is the *source.PermissionError of a change-table read of ci when
// the reading login lacks SELECT on it, else nil. db.mu is held.
func (db *DB) changeTableDeniedLocked(ci *instance) error {
	if !db.denied[strings.ToLower(ci.name)] {
		return nil
	}
	obj := "cdc.[" + ci.name + "_CT]"
	return &source.PermissionError{Object: obj, Grant: "GRANT SELECT ON " + obj + " TO [" + ReaderUser + "]"}
}
