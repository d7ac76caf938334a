package bronze

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// UnsupportedTypeError: a captured column has a SQL Server type with no bronze type
// (sql_variant, geography, geometry, hierarchyid, or any type not in the mapping), or a
// type whose arguments are out of range (a decimal precision outside 1..38). The column
// must be left out of the table spec's "columns" list.
type UnsupportedTypeError struct {
	Column string
	Type   string
	// Reason is set when the type is known but its arguments are not valid.
	Reason string
}

func (e *UnsupportedTypeError) Error() string {
	what := "has no bronze type"
	if e.Reason != "" {
		what = "cannot be mapped: " + e.Reason
	}
	return fmt.Sprintf("column %q: SQL Server type %s %s; leave the column out by listing the columns to capture without it in the table spec's \"columns\" option", e.Column, e.Type, what)
}

// ColumnCollisionError: a captured column's name equals a metadata column's name ignoring
// case (docs/reference/original-library.md §5.3), or two captured columns' names are
// equal ignoring case (Delta column names are unique ignoring case).
type ColumnCollisionError struct {
	Column string
	// With is the metadata column or the other captured column it collides with.
	With string
}

func (e *ColumnCollisionError) Error() string {
	return fmt.Sprintf("column %q collides with column %q (names are compared ignoring case); leave it out of the table spec's \"columns\" option", e.Column, e.With)
}

// ColumnsError: captured columns bronze cannot hold, every one at once: each problem is an
// *UnsupportedTypeError or a *ColumnCollisionError (match them with errors.As). The spec's
// "columns" option must leave them out, or the source table must change. Step Functions
// sees the name ColumnsError (docs/handlers.md).
type ColumnsError struct {
	Problems []error
}

// Error lists the problems one per line, as errors.Join does.
func (e *ColumnsError) Error() string { return errors.Join(e.Problems...).Error() }

// Unwrap returns the problems.
func (e *ColumnsError) Unwrap() []error { return e.Problems }

// RecordMismatchError: a record handed to ChangeRecord or SnapshotRecord does not fit the
// bronze schema. Either the record has a column the schema lacks (Want is nil), a change
// record lacks a change metadata column (Got is nil), or the column's type differs from the
// schema's (a type change needs a new schema first).
type RecordMismatchError struct {
	Column string
	Want   arrow.DataType
	Got    arrow.DataType
}

func (e *RecordMismatchError) Error() string {
	if e.Want == nil {
		return fmt.Sprintf("record column %q is not in the bronze schema", e.Column)
	}
	if e.Got == nil {
		return fmt.Sprintf("record lacks column %q", e.Column)
	}
	return fmt.Sprintf("record column %q has type %s, the bronze schema has %s", e.Column, e.Got, e.Want)
}
