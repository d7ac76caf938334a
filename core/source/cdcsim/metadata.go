package cdcsim

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// CaptureInstances implements source.Source.
func (db *DB) CaptureInstances(ctx context.Context) ([]source.CaptureInstance, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "CaptureInstances"); err != nil {
		return nil, err
	}
	out := make([]source.CaptureInstance, 0, len(db.instances))
	for _, ci := range db.instances {
		info := ci.info()
		if db.cfg.NullStartLSNUntilCaptured && ci.min.IsZero() {
			info.StartLSN = lsn.Zero // the low endpoint is not established yet
		}
		out = append(out, info)
	}
	slices.SortStableFunc(out, source.CompareInstances)
	return out, nil
}

// CapturedColumns implements source.Source. Present is matched by column_id, so a column
// dropped and added back under its name is not present.
func (db *DB) CapturedColumns(ctx context.Context, captureInstance string) ([]source.Column, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "CapturedColumns"); err != nil {
		return nil, err
	}
	ci, err := db.instanceLocked(captureInstance)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(ci.cols)
	for i := range out {
		j, ok := ci.tbl.colByID(out[i].ColumnID)
		out[i].Present = ok
		if ok {
			out[i].Computed = ci.tbl.cols[j].Computed
			out[i].Nullable = ci.tbl.cols[j].Nullable
		}
	}
	return out, nil
}

// DDLHistory implements source.Source.
func (db *DB) DDLHistory(ctx context.Context, captureInstance string, after, upto lsn.LSN) ([]source.DDLEvent, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "DDLHistory"); err != nil {
		return nil, err
	}
	ci, err := db.instanceLocked(captureInstance)
	if err != nil {
		return nil, err
	}
	var out []source.DDLEvent
	for _, e := range ci.ddl {
		if e.LSN.Compare(after) > 0 && e.LSN.Compare(upto) <= 0 {
			m := db.mapping()
			if i := searchEntries(m, e.LSN); i > 0 {
				e.Time = msUTC(m[i-1].utc)
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// ddlLocked records a DDL statement on every instance of t at a fresh LSN (no commit's:
// CommitTime of it is not found) and returns that LSN. Capture writes the mapping entry of
// the DDL's transaction (SQL Server logs the DDL inside a transaction whose commit follows).
func (db *DB) ddlLocked(t *table, command string, typeChange bool) lsn.LSN {
	db.captureLocked()
	at := db.allocLSN()
	for _, ci := range db.instances {
		if ci.tbl == t {
			ci.ddl = append(ci.ddl, source.DDLEvent{LSN: at, Command: command, RequiredColumnUpdate: typeChange})
		}
	}
	t.idsCache = nil
	t.resetOrder()
	for _, ci := range db.instances {
		if ci.tbl == t {
			ci.refresh()
		}
	}
	return at
}

// AddColumn is ALTER TABLE ADD: the instances do not change, and updates that set only the
// new column write no change row.
func (db *DB) AddColumn(tableName string, c source.Column) (lsn.LSN, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(tableName)
	if err != nil {
		return lsn.Zero, err
	}
	if _, dup := t.colByName(c.Name); dup || c.Name == "" || c.DataType == "" {
		return lsn.Zero, &TableError{Table: t.qualified(), Reason: "cannot add column " + c.Name}
	}
	if !c.Nullable && !c.Computed {
		return lsn.Zero, &TableError{Table: t.qualified(), Reason: "an added column must be nullable (the simulator keeps no defaults)"}
	}
	t.nextColumnID++
	c.ColumnID = t.nextColumnID
	c.Ordinal = len(t.cols) + 1
	c.Present = true
	c.DataType = strings.ToLower(c.DataType)
	if c.Collation == "" && kindOf(c.DataType) == kindString && c.DataType != "xml" {
		c.Collation = db.cfg.Collation
	}
	t.cols = append(t.cols, c)
	return db.ddlLocked(t, fmt.Sprintf("ALTER TABLE [%s].[%s] ADD [%s] %s", t.schema, t.name, c.Name, c.DataType), false), nil
}

// DropColumn is ALTER TABLE DROP COLUMN: instances keep capturing the column, NULL from
// then on, and a SELECT of it fails. Key columns cannot be dropped.
func (db *DB) DropColumn(tableName, column string) (lsn.LSN, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(tableName)
	if err != nil {
		return lsn.Zero, err
	}
	i, ok := t.colByName(column)
	if !ok {
		return lsn.Zero, &TableError{Table: t.qualified(), Reason: "no column " + column}
	}
	if slices.Contains(t.keyIDs, t.cols[i].ColumnID) {
		return lsn.Zero, &TableError{Table: t.qualified(), Reason: "cannot drop key column " + column + " of a CDC table"}
	}
	t.cols = slices.Delete(t.cols, i, i+1)
	t.key = t.key[:0]
	for _, id := range t.keyIDs {
		j, _ := t.colByID(id)
		t.key = append(t.key, j)
	}
	return db.ddlLocked(t, fmt.Sprintf("ALTER TABLE [%s].[%s] DROP COLUMN [%s]", t.schema, t.name, column), false), nil
}

// AlterColumn is ALTER TABLE ALTER COLUMN to c's type: the table's values and the change
// rows of every instance capturing it are converted in place, and the DDL row has
// required_column_update. A value that does not convert is an error and nothing changes.
// Key columns cannot be altered on a CDC table.
func (db *DB) AlterColumn(tableName string, c source.Column) (lsn.LSN, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(tableName)
	if err != nil {
		return lsn.Zero, err
	}
	i, ok := t.colByName(c.Name)
	if !ok {
		return lsn.Zero, &TableError{Table: t.qualified(), Reason: "no column " + c.Name}
	}
	old := t.cols[i]
	if slices.Contains(t.keyIDs, old.ColumnID) {
		return lsn.Zero, &TableError{Table: t.qualified(), Reason: "cannot alter key column " + c.Name + " of a CDC table"}
	}
	c.Name, c.ColumnID, c.Ordinal, c.Present = old.Name, old.ColumnID, old.Ordinal, true
	c.DataType = strings.ToLower(c.DataType)
	if !c.Nullable {
		for _, r := range t.list {
			if r.value(old.ColumnID) == nil {
				return lsn.Zero, &TableError{Table: t.qualified(), Reason: "cannot make column " + c.Name + " NOT NULL: it holds NULL"}
			}
		}
	}
	// required_column_update marks a change of the data type only: a nullability change
	// alone is recorded without it (docs/reference/sqlserver-cdc.md, cdc.ddl_history).
	typeChange := old.DataType != c.DataType || old.MaxLength != c.MaxLength || old.Precision != c.Precision ||
		old.Scale != c.Scale || old.DatetimePrecision != c.DatetimePrecision
	// Convert everything first, then swap, so a failure changes nothing.
	newRows := make(map[*row]*row, len(t.list))
	for _, r := range t.list {
		v, err := convertValue(old, c, r.value(old.ColumnID))
		if err != nil {
			return lsn.Zero, err
		}
		nr := &row{vals: slices.Clone(r.vals), ids: r.ids, rid: r.rid, pos: r.pos}
		for k, id := range r.ids {
			if id == old.ColumnID {
				nr.vals[k] = v
			}
		}
		newRows[r] = nr
	}
	newChanges := map[*instance][]change{}
	for _, ci := range db.instances {
		if ci.tbl != t {
			continue
		}
		for j, cc := range ci.cols {
			if cc.ColumnID != old.ColumnID {
				continue
			}
			rows := make([]change, len(ci.changes))
			for k, ch := range ci.changes {
				v, err := convertValue(cc, c, ch.vals[j])
				if err != nil {
					return lsn.Zero, err
				}
				ch.vals = slices.Clone(ch.vals)
				ch.vals[j] = v
				rows[k] = ch
			}
			newChanges[ci] = rows
		}
	}
	t.cols[i] = c
	for ident, r := range t.rows {
		t.put(ident, newRows[r])
	}
	for ci, rows := range newChanges {
		ci.changes = rows
		for j := range ci.cols {
			if ci.cols[j].ColumnID == c.ColumnID {
				ord := ci.cols[j].Ordinal
				ci.cols[j] = c
				ci.cols[j].Ordinal = ord
			}
		}
	}
	null := " NULL"
	if !c.Nullable {
		null = " NOT NULL"
	}
	return db.ddlLocked(t, fmt.Sprintf("ALTER TABLE [%s].[%s] ALTER COLUMN [%s] %s%s", t.schema, t.name, c.Name, c.DataType, null), typeChange), nil
}

// RenameColumn is sp_rename of a column: SQL Server refuses it for a column a capture
// instance captures (error 4928, "enabled for Change Data Capture"), and the simulator
// keeps no uncaptured columns' renames either, so it always fails while the table is
// captured and renames nothing.
func (db *DB) RenameColumn(tableName, column, to string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(tableName)
	if err != nil {
		return err
	}
	if _, ok := t.colByName(column); !ok {
		return &TableError{Table: t.qualified(), Reason: "no column " + column}
	}
	if db.capturedLocked(t) {
		return &TableError{Table: t.qualified(), Reason: "cannot rename column " + column + ": the table is enabled for Change Data Capture"}
	}
	return &TableError{Table: t.qualified(), Reason: "the simulator renames no column"}
}

// Truncate is TRUNCATE TABLE: SQL Server refuses it on a table enabled for Change Data
// Capture (error 4711); the simulator refuses it always, as it has no uncaptured tables to
// truncate in the tests.
func (db *DB) Truncate(tableName string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(tableName)
	if err != nil {
		return err
	}
	if db.capturedLocked(t) {
		return &TableError{Table: t.qualified(), Reason: "cannot truncate the table: it is enabled for Change Data Capture"}
	}
	return &TableError{Table: t.qualified(), Reason: "the simulator truncates no table"}
}

// capturedLocked reports whether a capture instance captures t.
func (db *DB) capturedLocked(t *table) bool {
	for _, ci := range db.instances {
		if ci.tbl == t {
			return true
		}
	}
	return false
}

// convertValue converts a stored value of column from to column to, as CAST would for the
// conversions the simulator supports (within integers, floats and decimals; anything to a
// string type; strings between string types).
func convertValue(from, to source.Column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	fk, tk := kindOf(from.DataType), kindOf(to.DataType)
	switch {
	case tk == kindString:
		s := fmt.Sprint(v)
		if t, ok := v.(string); ok {
			s = strings.TrimRight(t, " ")
		}
		return normalize(to, s)
	case fk == tk:
		return normalize(to, v)
	case fk == kindInt && (tk == kindFloat || tk == kindDecimal):
		return normalize(to, v)
	case fk == kindDate && tk == kindDateTime:
		// A date converts to midnight of that day (SQL Server's implicit date conversion to
		// datetime, datetime2, smalldatetime or datetimeoffset, +00:00).
		return normalize(to, v)
	case fk == kindDecimal && tk == kindFloat:
		var f float64
		if _, err := fmt.Sscan(v.(string), &f); err != nil {
			return nil, err
		}
		return normalize(to, f)
	}
	return nil, &ValueError{Column: to.Name, Type: to.DataType, Reason: fmt.Sprintf("the simulator cannot convert %s to %s", from.DataType, to.DataType)}
}
