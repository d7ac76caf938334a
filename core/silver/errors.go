package silver

import "fmt"

// KeyError refuses the key columns silver is asked to use: none given and none recorded,
// a column bronze does not have, a type that cannot be ordered, or keys that differ from
// the ones silver was built with (Reason says which). Silver is keyed once: to change its
// key, delete the silver table and apply again.
type KeyError struct {
	Column string
	Reason string
}

func (e *KeyError) Error() string {
	if e.Column == "" {
		return "silver keys: " + e.Reason
	}
	return fmt.Sprintf("silver key column %q: %s", e.Column, e.Reason)
}

// BronzeChangedError refuses to apply a bronze table other than the one silver was built
// from: its Delta table id differs (bronze was deleted and created again), its commit at
// the version silver applied is not the one silver recorded (another table with as many
// versions, Position.BronzeCommit), or its log is behind silver's position. Silver would mix two histories: delete the silver table
// (or point the spec at a new one) and apply again.
type BronzeChangedError struct {
	Reason string
}

func (e *BronzeChangedError) Error() string {
	return "silver was built from another bronze table: " + e.Reason + "; delete the silver table and apply again"
}

// PositionError: silver's recorded position (the mssqlcdc.silver domain metadata) cannot
// be read. Silver was written by something else, or by a newer mssqlcdc.
type PositionError struct {
	Reason string
	Err    error
}

func (e *PositionError) Error() string {
	msg := "silver position: " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *PositionError) Unwrap() error { return e.Err }
