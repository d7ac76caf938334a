package seed

import (
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// CastError: a value of the copy cannot be cast to its captured column's type (out of the
// type's range, more digits than its scale, text that is no GUID or date, longer than the
// column; docs/seed.md § Columns and types). Nothing is seeded: fix the value in the copy
// (or the copy's type) and run the seed again. The error carries the value itself, shortened
// to 80 characters, so that it can be found: it is the one place a seed puts a source value
// in an error (docs/seed.md § Errors).
type CastError struct {
	// Copy is the copy's URL, File the file's path in it.
	Copy, File string
	// RowGroup is the file's row group holding the row (0-based), Row its position in that
	// row group and FileRow its position in the file (a Delta file's deletion vector
	// counted: the deleted rows are not read, but they hold their positions). RowGroup is
	// -1 when the footer or the deletion vector cannot be read: Row and FileRow are then
	// the position among the rows read.
	RowGroup     int
	Row, FileRow int64
	// Column is the captured column and SQLType its SQL Server type; CopyColumn the copy's
	// column it was read from.
	Column, SQLType, CopyColumn string
	// Value is the refused value as text; Reason why it does not fit.
	Value, Reason string
}

func (e *CastError) Error() string {
	where := fmt.Sprintf("row group %d, row %d (row %d of the file)", e.RowGroup, e.Row, e.FileRow)
	if e.RowGroup < 0 {
		where = fmt.Sprintf("row %d of the rows read (its row group is unknown)", e.FileRow)
	}
	return fmt.Sprintf("copy %s: file %s, %s: copy column %s into %s %s: value %q %s; fix the value in the copy (or its type) and seed again",
		e.Copy, e.File, where, e.CopyColumn, e.Column, e.SQLType, e.Value, e.Reason)
}

// DataLossError: CDC no longer holds the changes right after the seed's LSN L: cleanup
// passed it, or no commit as old as as_of is left in cdc.lsn_time_mapping
// (docs/reference/sqlserver-cdc.md §5.1, §2.6). The stream could not carry the changes
// between the copy and now, so nothing is seeded: the copy is older than the CDC retention.
// Seed a newer copy (docs/seed.md § Errors).
type DataLossError struct {
	// AsOf is the as_of given; L the LSN it maps to (zero when no commit is that old).
	AsOf string
	L    lsn.LSN
	// MinLSN is the capture instance's low watermark, above L's next LSN (zero when no
	// commit is that old).
	CaptureInstance string
	MinLSN          lsn.LSN
	// DuringConvert is true when cleanup passed L while the copy was being converted
	// (found by the commit step).
	DuringConvert bool
}

func (e *DataLossError) Error() string {
	if e.L.IsZero() {
		return fmt.Sprintf("as_of %s: cdc.lsn_time_mapping holds no commit at or before it: CDC cleanup has passed it, so the copy is older than the CDC retention; seed a newer copy",
			e.AsOf)
	}
	when := ""
	if e.DuringConvert {
		when = " while the copy was converted"
	}
	return fmt.Sprintf("as_of %s maps to %s, but CDC cleanup of %s has passed it%s (min_lsn %s): the changes right after the copy are gone, so the copy is older than the CDC retention; seed a newer copy",
		e.AsOf, e.L, e.CaptureInstance, when, e.MinLSN)
}

// SnapshotExistsError: bronze already holds a snapshot of the table at another LSN (a
// whole snapshot, a seed or a chunked snapshot's rows), and this is not a reseed over an
// older one. Seeding beside it would leave two starting points in bronze. Give the same
// as_of as that seed (a rerun returns it), seed a newer copy with reseed (new checkpoint
// and app_id), or seed into a new bronze table.
type SnapshotExistsError struct {
	Bronze string
	// Existing is the snapshot bronze holds (the newest), Chunked true for a chunked one.
	Existing lsn.LSN
	Chunked  bool
	// Seed is the LSN this seed maps to; Reseed whether reseed was asked.
	Seed   lsn.LSN
	Reseed bool
}

func (e *SnapshotExistsError) Error() string {
	kind := "a snapshot"
	if e.Chunked {
		kind = "a chunked snapshot"
	}
	if e.Reseed {
		return fmt.Sprintf("bronze %s holds %s at %s, not older than this seed's %s: reseed only seeds a newer copy over an older snapshot",
			e.Bronze, kind, e.Existing, e.Seed)
	}
	return fmt.Sprintf("bronze %s already holds %s at %s, not at this seed's %s: give the as_of of that seed (a rerun returns it), "+
		"seed a newer copy with reseed (then start a new checkpoint and app_id), or seed into a new bronze table",
		e.Bronze, kind, e.Existing, e.Seed)
}

// ReseedError: a reseed's spec still names the app_id (or checkpoint) of the stream it
// replaces: its bootstrap facts row or checkpoint offsets would keep the stream where it
// stopped. A reseed starts a new stream: change app_id and checkpoint in the spec first.
type ReseedError struct {
	AppID  string
	Reason string
}

func (e *ReseedError) Error() string {
	return fmt.Sprintf("reseed with app_id %s: %s; a reseed starts a new stream: set a new app_id and checkpoint in the spec, then seed again", e.AppID, e.Reason)
}

// PlanNotFoundError: a step after plan ran for a seed whose plan is not in the staging
// area (the plan step did not run for this LSN and plan id, or the checkpoint prefix
// changed). Run the seed machine again from the start.
type PlanNotFoundError struct {
	Seed lsn.LSN
	Plan string
}

func (e *PlanNotFoundError) Error() string {
	return fmt.Sprintf("seed %s: no plan %s in the checkpoint's staging area; run the seed from its plan step again", e.Seed, e.Plan)
}

// MissingGroupError: the commit found no manifest for a file group: its convert step did
// not finish. Run the convert of that group again (or the seed machine).
type MissingGroupError struct {
	Seed  lsn.LSN
	Group int
}

func (e *MissingGroupError) Error() string {
	return fmt.Sprintf("seed %s: file group %d has no manifest; its convert step has not finished: run it again (or rerun the seed machine)", e.Seed, e.Group)
}

// asOfText is how an as_of time is written in errors and facts: RFC 3339, UTC.
func asOfText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
