package stream

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// captured is the union of the captured columns of some capture instances, by name
// (ignoring case), older instance first (docs/reference/original-library.md §8.3).
type captured struct {
	cols  []source.Column
	types []arrow.DataType
	owner []string // the instance whose definition a column has
	index map[string]int
	// computed lists the computed columns met (CDC stores NULL for them), as "<column> of
	// <instance>"; isComputed holds their lower-cased names.
	computed   []string
	isComputed map[string]bool
}

func (c *captured) find(name string) (int, bool) {
	i, ok := c.index[strings.ToLower(name)]
	return i, ok
}

// union reads the captured columns of instances (older first) into one list: a column two
// instances capture takes the newer instance's definition when its type holds the older's
// values (a widening), else it is a *SchemaChangedError (SchemaInstancesConflict). Which
// columns are read is bronze.ReadColumns, the one rule every path follows: computed
// columns left out (listed in computed, for a warning), and with declared (the columns
// option; nil when unset) only the declared ones, so a type bronze cannot map is an error
// only when read.
func (r *run) union(ctx context.Context, instances []source.CaptureInstance, declared []string) (*captured, error) {
	u := &captured{index: map[string]int{}, isComputed: map[string]bool{}}
	seen := map[string]bool{}
	for _, ci := range instances {
		if seen[ci.Name] {
			continue
		}
		seen[ci.Name] = true
		cc, err := r.src.CapturedColumns(ctx, ci.Name)
		if err != nil {
			return nil, r.sourceErr("captured columns", err)
		}
		read, left := bronze.ReadColumns(cc, declared)
		for _, c := range left {
			u.computed = append(u.computed, c.Name+" of "+ci.Name)
			u.isComputed[strings.ToLower(c.Name)] = true
		}
		for _, c := range read {
			key := strings.ToLower(c.Name)
			t, err := bronze.ArrowType(c)
			if err != nil {
				return nil, err
			}
			if i, ok := u.index[key]; ok {
				if !bronze.Holds(t, u.types[i]) {
					return nil, &SchemaChangedError{Kind: SchemaInstancesConflict, CaptureInstance: u.owner[i] + " and " + ci.Name,
						Column: c.Name, Was: u.types[i].String(), Now: t.String()}
				}
				u.cols[i], u.types[i], u.owner[i] = c, t, ci.Name // the newer instance's definition
				continue
			}
			u.index[key] = len(u.cols)
			u.cols, u.types, u.owner = append(u.cols, c), append(u.types, t), append(u.owner, ci.Name)
		}
	}
	return u, nil
}

// declared is the columns option as a set of lower-cased names, nil when unset.
func (r *run) declared() map[string]bool {
	if r.spec.Options.Columns == nil {
		return nil
	}
	m := map[string]bool{}
	for _, c := range r.spec.Options.Columns {
		m[strings.ToLower(c)] = true
	}
	return m
}

// columns decides what the batch reads and the bronze schema it writes (docs/stream.md
// "Schema changes"; docs/reference/sqlserver-cdc.md §7.1; docs/reference/original-library.md
// §8): the union of the columns the spans' instances capture (union), computed columns
// left out with a warning; with the columns option, only the declared columns, each
// checked against every instance of the table at the start of the batch (a key column left
// out, or a declared column no instance captures and bronze lacks, is a *config.ConfigError;
// one the spans' instances lack is read as NULL, with a warning). Then bronze's schema: a
// captured column bronze lacks is appended as a nullable column (older rows read NULL); one
// whose type bronze's holds is read as bronze's type (bronze.Holds: a narrowing ALTER
// COLUMN goes on); one whose new type Delta's typeWidening allows, on a bronze table with
// delta.enableTypeWidening "true", is read as the new type and widened in bronze by the
// batch's commit (with a warning); any other is a *SchemaChangedError before anything is
// read (docs/stream.md "Schema changes").
func (r *run) columns(ctx context.Context, snap *deltalog.Snapshot, sp []span, insts []source.CaptureInstance) ([]source.Column, *arrow.Schema, []string, error) {
	keep := r.declared()
	var spanInsts []source.CaptureInstance
	for _, s := range sp {
		spanInsts = append(spanInsts, s.CI)
	}
	u, err := r.union(ctx, spanInsts, r.spec.Options.Columns)
	if err != nil {
		return nil, nil, nil, err
	}
	var warnings []string
	for _, c := range u.computed {
		warnings = append(warnings, fmt.Sprintf("computed column %s is not read (CDC stores NULL for it)", c))
	}
	var cur *arrow.Schema
	if snap.Version() >= 0 {
		if cur, err = snap.ArrowSchema(); err != nil {
			return nil, nil, nil, fmt.Errorf("bronze schema: %w", err)
		}
	}
	if keep != nil {
		w, err := r.checkDeclared(ctx, u, cur, sp, insts)
		if err != nil {
			return nil, nil, nil, err
		}
		warnings = append(warnings, w...)
	}
	if cur == nil {
		if len(u.cols) == 0 {
			return u.cols, nil, warnings, nil
		}
		sc, err := bronze.Schema(u.cols)
		return u.cols, sc, warnings, err
	}
	fields := append([]arrow.Field(nil), cur.Fields()...)
	widens := snap.Metadata().Configuration[deltalog.PropEnableTypeWidening] == "true"
	cols := make([]source.Column, len(u.cols))
	for i, c := range u.cols {
		cols[i] = c
		j := fieldIndexFold(fields, c.Name)
		if j < 0 {
			if bronze.IsMetadataColumn(c.Name) {
				return nil, nil, nil, &bronze.ColumnCollisionError{Column: c.Name, With: c.Name}
			}
			fields = append(fields, arrow.Field{Name: c.Name, Type: u.types[i], Nullable: true})
			continue
		}
		have := fields[j].Type
		widenable := deltaWidens(have, u.types[i])
		switch {
		case bronze.Holds(have, u.types[i]):
			cols[i] = bronze.AsType(c, have) // read as bronze's type
		case widenable && widens:
			// Read as the new type; the batch's bronze commit widens the column
			// (deltalog.Transaction.SetSchema: metaData, typeChanges, typeWidening).
			fields[j].Type = u.types[i]
			warnings = append(warnings, fmt.Sprintf("bronze column %s widened from %s to %s (delta.enableTypeWidening)", fields[j].Name, have, u.types[i]))
			r.log.Warn("widening a bronze column (delta.enableTypeWidening)", "column", fields[j].Name, "was", have.String(), "now", u.types[i].String())
		default:
			return nil, nil, nil, &SchemaChangedError{Kind: SchemaTypeChanged, CaptureInstance: u.owner[i], Column: c.Name,
				Was: have.String(), Now: u.types[i].String(), Widenable: widenable, WideningEnabled: widens}
		}
	}
	if len(fields) == len(cur.Fields()) && !changedType(fields, cur) {
		return cols, cur, warnings, nil // bronze's own schema: sameSchema knows it by pointer
	}
	md := cur.Metadata()
	return cols, arrow.NewSchema(fields, &md), warnings, nil
}

// changedType reports whether fields (cur's fields, maybe retyped) differ from cur's in a
// type.
func changedType(fields []arrow.Field, cur *arrow.Schema) bool {
	for i := range fields {
		if !arrow.TypeEqual(fields[i].Type, cur.Field(i).Type) {
			return true
		}
	}
	return false
}

// sameSchema reports whether schema is bronze's own at snap (columns returned it
// unchanged): the bronze commit then needs no schema change and is given none
// (ingest.Commit.Schema nil), sparing the schema's parse and comparison.
func sameSchema(snap *deltalog.Snapshot, schema *arrow.Schema) bool {
	if snap.Version() < 0 || schema == nil {
		return false
	}
	cur, err := snap.ArrowSchema() // the same pointer for the same schema string
	return err == nil && cur == schema
}

// checkDeclared checks the columns option against the table's capture instances
// (docs/stream.md "Schema changes"): every key column must be declared; a declared column
// no instance of the table captures and bronze lacks is an error (its type is unknown); one
// the spans' instances do not capture is added to u with its type (bronze's, else another
// instance's) and read as NULL, with a warning. u holds the declared columns the spans'
// instances capture.
func (r *run) checkDeclared(ctx context.Context, u *captured, cur *arrow.Schema, sp []span, insts []source.CaptureInstance) ([]string, error) {
	var warnings []string
	keys := map[string]bool{}
	for _, ci := range insts {
		for _, k := range ci.IndexColumns {
			keys[strings.ToLower(k)] = true
		}
	}
	declared := r.declared()
	for k := range keys {
		if !declared[k] {
			return nil, &config.ConfigError{Problems: []config.Problem{{Field: "options.columns",
				Reason: fmt.Sprintf("leaves out key column %s of capture instance %s: list every key column (downstream rebuilds by them)", k, insts[len(insts)-1].Name)}}}
		}
	}
	var all *captured
	names := make([]string, 0, len(sp))
	for _, s := range sp {
		names = append(names, s.CI.Name)
	}
	for _, name := range r.spec.Options.Columns {
		if _, ok := u.find(name); ok {
			continue
		}
		var t arrow.DataType
		col := source.Column{Name: name}
		if cur != nil {
			if j := fieldIndexFold(cur.Fields(), name); j >= 0 {
				t = cur.Field(j).Type
				col.Name = cur.Field(j).Name
			}
		}
		if t == nil {
			if all == nil {
				var err error
				if all, err = r.union(ctx, insts, r.spec.Options.Columns); err != nil {
					return nil, err
				}
			}
			if i, ok := all.find(name); ok {
				t, col = all.types[i], all.cols[i]
			}
		}
		if t == nil && all.isComputed[strings.ToLower(name)] {
			return nil, &config.ConfigError{Problems: []config.Problem{{Field: "options.columns",
				Reason: fmt.Sprintf("%s is a computed column: CDC stores NULL for it in every change row, so bronze never stores it (docs/types.md \"Computed columns\"): remove it from columns", name)}}}
		}
		if t == nil {
			return nil, &config.ConfigError{Problems: []config.Problem{{Field: "options.columns",
				Reason: fmt.Sprintf("%s: no capture instance of the table captures it (and bronze has no such column): remove it, or capture it", name)}}}
		}
		col = bronze.AsType(col, t)
		u.index[strings.ToLower(name)] = len(u.cols)
		u.cols, u.types, u.owner = append(u.cols, col), append(u.types, t), append(u.owner, "")
		warnings = append(warnings, fmt.Sprintf("declared column %s is not captured by %s: read as NULL", col.Name, strings.Join(names, ", ")))
	}
	return warnings, nil
}

// deltaWidens reports whether the Delta protocol's typeWidening feature allows changing a
// bronze column from type from to type to (deltalog.Widens, on the Delta types the Arrow
// types map to: docs/reference/delta-protocol.md §6.6). Equal types are no change (false).
func deltaWidens(from, to arrow.DataType) bool {
	f, err := deltalog.FromArrow(arrow.NewSchema([]arrow.Field{{Name: "c", Type: from}}, nil))
	if err != nil {
		return false
	}
	t, err := deltalog.FromArrow(arrow.NewSchema([]arrow.Field{{Name: "c", Type: to}}, nil))
	if err != nil {
		return false
	}
	return deltalog.Widens(f.Fields[0].Type, t.Fields[0].Type)
}

// fieldIndexFold is the index of the field named name (exactly, else ignoring case), or -1.
func fieldIndexFold(fields []arrow.Field, name string) int {
	for i, f := range fields {
		if f.Name == name {
			return i
		}
	}
	for i, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}
