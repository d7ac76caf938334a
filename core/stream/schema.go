package stream

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// columns decides what the batch reads and the bronze schema it writes
// (docs/reference/sqlserver-cdc.md §7.1, docs/reference/original-library.md §8): the union
// by name (ignoring case) of the columns the spans' instances capture, older instance
// first, computed columns left out with a warning; then bronze's schema with the captured
// columns it lacks appended as nullable columns. A column typed differently by two
// instances, or by the source and bronze, is a *SchemaChangedError.
func (r *run) columns(ctx context.Context, snap *deltalog.Snapshot, sp []span) ([]source.Column, *arrow.Schema, []string, error) {
	var cols []source.Column
	var warnings []string
	byName := map[string]int{}
	types := map[string]arrow.DataType{}
	owner := map[string]string{}
	seen := map[string]bool{}
	for _, s := range sp {
		if seen[s.CI.Name] {
			continue
		}
		seen[s.CI.Name] = true
		cc, err := r.src.CapturedColumns(ctx, s.CI.Name)
		if err != nil {
			return nil, nil, nil, r.sourceErr("captured columns", err)
		}
		stored, left := bronze.StoredColumns(cc)
		for _, c := range left {
			warnings = append(warnings, fmt.Sprintf("computed column %s of %s is not read (CDC stores NULL for it)", c.Name, s.CI.Name))
		}
		for _, c := range stored {
			t, err := bronze.ArrowType(c)
			if err != nil {
				return nil, nil, nil, err
			}
			key := strings.ToLower(c.Name)
			if i, ok := byName[key]; ok {
				if !arrow.TypeEqual(types[key], t) {
					return nil, nil, nil, &SchemaChangedError{CaptureInstance: s.CI.Name, Column: c.Name,
						Was: fmt.Sprintf("%s (in %s)", types[key], owner[key]), Now: t.String()}
				}
				cols[i] = c // the newer instance's definition
				continue
			}
			byName[key], types[key], owner[key] = len(cols), t, s.CI.Name
			cols = append(cols, c)
		}
	}
	if snap.Version() < 0 {
		if len(cols) == 0 {
			return cols, nil, warnings, nil
		}
		sc, err := bronze.Schema(cols)
		return cols, sc, warnings, err
	}
	cur, err := snap.ArrowSchema()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bronze schema: %w", err)
	}
	fields := append([]arrow.Field(nil), cur.Fields()...)
	have := map[string]arrow.Field{}
	for _, f := range fields {
		have[strings.ToLower(f.Name)] = f
	}
	for _, c := range cols {
		key := strings.ToLower(c.Name)
		if f, ok := have[key]; ok {
			if !arrow.TypeEqual(f.Type, types[key]) {
				return nil, nil, nil, &SchemaChangedError{CaptureInstance: owner[key], Column: c.Name, Was: f.Type.String(), Now: types[key].String()}
			}
			continue
		}
		if bronze.IsMetadataColumn(c.Name) {
			return nil, nil, nil, &bronze.ColumnCollisionError{Column: c.Name, With: c.Name}
		}
		fields = append(fields, arrow.Field{Name: c.Name, Type: types[key], Nullable: true})
	}
	md := cur.Metadata()
	return cols, arrow.NewSchema(fields, &md), warnings, nil
}

// ddlEvents lists the DDL of the spans' instances inside the batch as schema_change rows
// (docs/reference/original-library.md §8.1, classify policy). A type change bronze cannot
// take is caught by columns, which compares types before anything is read.
func (r *run) ddlEvents(ctx context.Context, b checkpoint.Batch, sp []span) ([]facts.Row, error) {
	var out []facts.Row
	seen := map[string]bool{}
	for _, s := range sp {
		evs, err := r.src.DDLHistory(ctx, s.CI.Name, s.From.Prev(), s.To)
		if err != nil {
			return nil, r.sourceErr("ddl history", err)
		}
		for _, e := range evs {
			k := e.LSN.String() + "\x00" + e.Command
			if seen[k] {
				continue
			}
			seen[k] = true
			var t = facts.Time(e.Time)
			if e.Time.IsZero() {
				t = nil
			}
			r.log.Warn("DDL inside the batch", "batch", b.ID, "capture_instance", s.CI.Name, "ddl_lsn", e.LSN.String(), "command", e.Command)
			out = append(out, facts.SchemaChangeRow(r.spec.AppID, b.ID, r.spec.Bronze, e.LSN, t, e.Command))
		}
	}
	return out, nil
}

// switchEvent is the capture_instance_switched row of the first batch that reads a newer
// instance after reading the older one (docs/reference/original-library.md §6.2, §3.2 step
// 9): the batch's range starts below the newer instance's S and reaches it. A stream that
// started at or after S writes none.
func (r *run) switchEvent(ctx context.Context, b checkpoint.Batch, insts []source.CaptureInstance) (*facts.Row, error) {
	if len(insts) < 2 {
		return nil, nil
	}
	older, newer := insts[0], insts[1]
	s := newer.StartLSN
	if !b.Start.LSN.Next().Less(s) || b.End.LSN.Less(s) {
		return nil, nil
	}
	newCols, err := r.src.CapturedColumns(ctx, newer.Name)
	if err != nil {
		return nil, r.sourceErr("captured columns", err)
	}
	captured := map[string]bool{}
	for _, c := range newCols {
		captured[strings.ToLower(c.Name)] = true
	}
	var missing []string
	if oldCols, err := r.src.CapturedColumns(ctx, older.Name); err == nil {
		for _, c := range oldCols {
			if !captured[strings.ToLower(c.Name)] {
				missing = append(missing, c.Name)
			}
		}
	}
	r.log.Warn("switching to a newer capture instance", "batch", b.ID, "old", older.Name, "new", newer.Name,
		"start_lsn", s.String(), "not_captured", joinNames(missing))
	row := facts.CaptureInstanceSwitchedRow(r.spec.AppID, b.ID, r.spec.Bronze, r.ciLabel(older), newer.Name, s, r.timeOf(ctx, s), missing)
	return &row, nil
}
