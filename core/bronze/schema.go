package bronze

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// TableSchema is the schema of Source.ReadTable records: the columns in order, with their
// bronze types, all nullable. Every column is checked: the error is a *ColumnsError holding
// an *UnsupportedTypeError per unmappable column and a *ColumnCollisionError per name that
// repeats (ignoring case), so a user sees every problem at once. Match them with errors.As.
func TableSchema(cols []source.Column) (*arrow.Schema, error) {
	fields, err := capturedFields(cols)
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

// ChangeSchema is the schema of Source.ReadChanges records: _start_lsn, _seqval,
// _operation, _command_id, _commit_ts, then the captured columns as in TableSchema. A
// captured column named like a metadata column (ignoring case) is a *ColumnCollisionError
// in the *ColumnsError.
func ChangeSchema(cols []source.Column) (*arrow.Schema, error) {
	fields, err := capturedFields(cols)
	if err != nil {
		return nil, err
	}
	out := make([]arrow.Field, 0, len(leadingFields)-1+len(fields))
	out = append(out, leadingFields[1:]...) // all but _capture_instance
	out = append(out, fields...)
	return arrow.NewSchema(out, nil), nil
}

// Schema is the whole bronze table (docs/design.md §4.2): the six leading metadata columns,
// the captured columns, then _batch_id, _snapshot and _chunk. Errors as in TableSchema and
// ChangeSchema.
func Schema(cols []source.Column) (*arrow.Schema, error) {
	fields, err := capturedFields(cols)
	if err != nil {
		return nil, err
	}
	out := make([]arrow.Field, 0, len(leadingFields)+len(fields)+len(trailingFields))
	out = append(out, leadingFields...)
	out = append(out, fields...)
	out = append(out, trailingFields...)
	return arrow.NewSchema(out, nil), nil
}

// capturedFields maps every column and checks names, collecting every problem.
func capturedFields(cols []source.Column) ([]arrow.Field, error) {
	var errs []error
	fields := make([]arrow.Field, 0, len(cols))
	seen := make(map[string]string, len(cols))
	for _, c := range cols {
		if with, ok := metadataName(c.Name); ok {
			errs = append(errs, &ColumnCollisionError{Column: c.Name, With: with})
		} else if prev, ok := seen[strings.ToLower(c.Name)]; ok {
			errs = append(errs, &ColumnCollisionError{Column: c.Name, With: prev})
		} else {
			seen[strings.ToLower(c.Name)] = c.Name
		}
		t, err := ArrowType(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fields = append(fields, arrow.Field{Name: c.Name, Type: t, Nullable: true})
	}
	if len(errs) > 0 {
		return nil, &ColumnsError{Problems: errs}
	}
	return fields, nil
}

// metadataName returns the metadata column name equal to name ignoring case.
func metadataName(name string) (string, bool) {
	for _, f := range MetadataFields() {
		if strings.EqualFold(f.Name, name) {
			return f.Name, true
		}
	}
	return "", false
}

// CapturedFields returns the fields of a bronze (or change) schema that are not metadata
// columns, in order: the captured columns. A nil schema has none.
func CapturedFields(s *arrow.Schema) []arrow.Field {
	if s == nil {
		return nil
	}
	var out []arrow.Field
	for _, f := range s.Fields() {
		if !IsMetadataColumn(f.Name) {
			out = append(out, f)
		}
	}
	return out
}

// StoredColumns is the one rule for which captured columns bronze stores, on every path
// that reads the source (the stream, a snapshot's ranges, an export): every column but the
// computed ones, in order. SQL Server stores NULL for a computed column in every change row
// (docs/reference/sqlserver-cdc.md §3.6), so a snapshot that read its value would flip on
// the row's first update; bronze leaves it out instead (docs/types.md "Computed columns";
// docs/decisions/0011-source-continuity-and-computed-columns.md). left are the computed
// columns left out, for a warning. A computed column already in an existing bronze schema
// stays there and reads NULL in new rows.
func StoredColumns(cols []source.Column) (stored, left []source.Column) {
	stored = make([]source.Column, 0, len(cols))
	for _, c := range cols {
		if c.Computed {
			left = append(left, c)
			continue
		}
		stored = append(stored, c)
	}
	return stored, left
}

// ReadColumns is the columns a read of the source takes (the stream, a snapshot's ranges,
// an export), one rule on every path: StoredColumns (computed columns left out), then,
// when declared (the columns option) is not nil, only the columns it names, matched
// ignoring case (docs/stream.md "Schema changes", choosing columns). left are the computed columns left
// out, declared or not, for a warning: SQL Server stores NULL for them in every change row,
// so declaring one does not make it readable. A declared column cols lacks is not in read;
// the caller decides what that means (the stream reads it as NULL with a warning).
func ReadColumns(cols []source.Column, declared []string) (read, left []source.Column) {
	read, left = StoredColumns(cols)
	if declared == nil {
		return read, left
	}
	keep := make(map[string]bool, len(declared))
	for _, n := range declared {
		keep[strings.ToLower(n)] = true
	}
	out := read[:0]
	for _, c := range read {
		if keep[strings.ToLower(c.Name)] {
			out = append(out, c)
		}
	}
	return out, left
}
