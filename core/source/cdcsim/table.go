package cdcsim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// TableSpec describes a table to create.
type TableSpec struct {
	Schema string // "dbo" when empty
	Name   string
	// Columns in table order. Name and DataType are required; Ordinal, ColumnID and
	// Present are assigned. Collation applies to char types.
	Columns []source.Column
	// Key names the columns of the unique index CDC identifies rows by, in index order.
	// Empty makes a heap.
	Key []string
	// Compute gives each computed column (a column with Computed set) its expression: its
	// value from the row's other columns (by name, NULL as nil), as SQL Server evaluates
	// `name AS (expression)` when the row is read. A computed column without one reads NULL.
	Compute map[string]func(Row) any
}

// table is a source table: its columns and current rows.
type table struct {
	schema, name string
	cols         []source.Column // current columns (Present true), in table order
	nextColumnID int
	key          []int // indexes into cols of the unique index, in index order; nil for a heap
	keyIDs       []int // column_ids of the key (stable across DDL)
	rows         map[string]*row
	list         []*row // every row, for random picks; row.pos is its index
	sorted       []*row // rows in key order as of the last order(); nil before the first
	// Row versions put and removed since sorted was built; stale when there are any.
	added    []*row
	removed  map[*row]struct{}
	stale    bool
	nextRID  int64
	idsCache []int // column_ids of cols; nil after DDL
	// computed holds the expressions of computed columns by column_id (TableSpec.Compute).
	computed map[int]func(Row) any
}

// row is one immutable row version. Writes replace it.
type row struct {
	vals []any // by column index of table.cols at the time of writing, see table.value
	ids  []int // column_id of each value
	rid  int64
	pos  int
}

func (t *table) qualified() string { return t.schema + "." + t.name }

// current is the row's value of column c as a SELECT of the table reads it: a computed
// column's expression over the row, a stored column's value.
func (t *table) current(r *row, c source.Column) any {
	if !c.Computed {
		return r.value(c.ColumnID)
	}
	fn := t.computed[c.ColumnID]
	if fn == nil {
		return nil
	}
	in := Row{}
	for _, o := range t.cols {
		if !o.Computed {
			in[o.Name] = r.value(o.ColumnID)
		}
	}
	v, err := normalize(c, fn(in))
	if err != nil {
		return nil // SQL Server would fail the SELECT; the simulator's expressions are the tests'
	}
	return v
}

// value is the row's value of the column with column_id id (NULL when the row predates an
// ADD COLUMN).
func (r *row) value(id int) any {
	for i, x := range r.ids {
		if x == id {
			return r.vals[i]
		}
	}
	return nil
}

func (t *table) colByName(name string) (int, bool) {
	for i, c := range t.cols {
		if strings.EqualFold(c.Name, name) {
			return i, true
		}
	}
	return 0, false
}

func (t *table) colByID(id int) (int, bool) {
	for i, c := range t.cols {
		if c.ColumnID == id {
			return i, true
		}
	}
	return 0, false
}

// TableError names a table or column that does not exist or already exists, or an
// operation SQL Server refuses on it.
type TableError struct {
	Table  string
	Reason string
}

func (e *TableError) Error() string { return e.Table + ": " + e.Reason }

// CreateTable creates an empty table. Names compare ignoring case.
func (db *DB) CreateTable(spec TableSpec) error {
	if spec.Schema == "" {
		spec.Schema = "dbo"
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	k := tableKey(spec.Schema, spec.Name)
	if spec.Name == "" || len(spec.Columns) == 0 {
		return &TableError{Table: spec.Schema + "." + spec.Name, Reason: "a table needs a name and columns"}
	}
	if _, ok := db.tables[k]; ok {
		return &TableError{Table: spec.Schema + "." + spec.Name, Reason: "already exists"}
	}
	t := &table{schema: spec.Schema, name: spec.Name, rows: map[string]*row{}}
	for _, c := range spec.Columns {
		if c.Name == "" || c.DataType == "" {
			return &TableError{Table: t.qualified(), Reason: "a column needs a name and a type"}
		}
		if _, dup := t.colByName(c.Name); dup {
			return &TableError{Table: t.qualified(), Reason: "duplicate column " + c.Name}
		}
		t.nextColumnID++
		c.ColumnID = t.nextColumnID
		c.Ordinal = len(t.cols) + 1
		c.Present = true
		c.DataType = strings.ToLower(c.DataType)
		if c.Collation == "" && kindOf(c.DataType) == kindString && c.DataType != "xml" {
			c.Collation = db.cfg.Collation // the database default, as SQL Server assigns it
		}
		t.cols = append(t.cols, c)
	}
	for name, fn := range spec.Compute {
		i, ok := t.colByName(name)
		if !ok || !t.cols[i].Computed {
			return &TableError{Table: t.qualified(), Reason: "Compute names " + name + ", which is not a computed column"}
		}
		if t.computed == nil {
			t.computed = map[int]func(Row) any{}
		}
		t.computed[t.cols[i].ColumnID] = fn
	}
	for _, name := range spec.Key {
		i, ok := t.colByName(name)
		if !ok {
			return &TableError{Table: t.qualified(), Reason: "key column " + name + " does not exist"}
		}
		if slices.Contains(t.key, i) {
			return &TableError{Table: t.qualified(), Reason: "key column " + name + " is listed twice"}
		}
		if t.cols[i].Computed {
			return &TableError{Table: t.qualified(), Reason: "key column " + name + " is computed: the simulator keys on stored columns only"}
		}
		if t.cols[i].Nullable {
			// SQL Server refuses a CDC index over nullable columns; keys stay NOT NULL.
			return &TableError{Table: t.qualified(), Reason: "key column " + name + " is nullable: CDC needs a unique index over NOT NULL columns"}
		}
		t.key = append(t.key, i)
		t.keyIDs = append(t.keyIDs, t.cols[i].ColumnID)
	}
	db.tables[k] = t
	return nil
}

func (db *DB) tableLocked(name string) (*table, error) {
	s, n := splitName(name)
	t, ok := db.tables[tableKey(s, n)]
	if !ok {
		return nil, &TableError{Table: name, Reason: "no such table"}
	}
	return t, nil
}

func (db *DB) tableOf(st source.Table) (*table, error) {
	schema := st.Schema
	if schema == "" {
		schema = "dbo"
	}
	t, ok := db.tables[tableKey(schema, st.Name)]
	if !ok {
		return nil, &source.InvalidArgumentError{Arg: "table", Reason: fmt.Sprintf("Invalid object name '%s.%s'", schema, st.Name)}
	}
	return t, nil
}

// Columns returns the table's current columns.
func (db *DB) Columns(name string) ([]source.Column, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(t.cols), nil
}

// KeyColumns returns the names of the table's unique index columns (nil for a heap).
func (db *DB) KeyColumns(name string) ([]string, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, i := range t.key {
		out = append(out, t.cols[i].Name)
	}
	return out, nil
}

// keyIdent is the identity of a row in the unique index (or its row id for a heap).
func (t *table) keyIdent(r *row) string {
	if t.key == nil {
		return "r" + strconv.FormatInt(r.rid, 10)
	}
	var b strings.Builder
	for j, id := range t.keyIDs {
		i, _ := t.colByID(id)
		if j > 0 {
			b.WriteByte(0)
		}
		b.WriteString(encodeValue(t.cols[i], r.value(id)))
	}
	return b.String()
}

// identOfKey is keyIdent for key values given in index order (already normalised).
func (t *table) identOfKey(key []any) string {
	if t.key == nil {
		rid, _ := key[0].(int64)
		return "r" + strconv.FormatInt(rid, 10)
	}
	var b strings.Builder
	for j, i := range t.key {
		if j > 0 {
			b.WriteByte(0)
		}
		b.WriteString(encodeValue(t.cols[i], key[j]))
	}
	return b.String()
}

// normKey normalises key values given for the unique index (or a heap's row id).
func (t *table) normKey(key []any) ([]any, error) {
	if t.key == nil {
		if len(key) != 1 {
			return nil, &TableError{Table: t.qualified(), Reason: "a heap row is named by its row id"}
		}
		switch v := key[0].(type) {
		case int64:
			return []any{v}, nil
		case int:
			return []any{int64(v)}, nil
		}
		return nil, &TableError{Table: t.qualified(), Reason: "a heap row id is an int64"}
	}
	if len(key) != len(t.key) {
		return nil, &TableError{Table: t.qualified(), Reason: fmt.Sprintf("key has %d values, the index %d columns", len(key), len(t.key))}
	}
	out := make([]any, len(key))
	for j, i := range t.key {
		v, err := normalize(t.cols[i], key[j])
		if err != nil {
			return nil, err
		}
		out[j] = v
	}
	return out, nil
}

// put stores a new row version (insert or replace) and records the change for order.
func (t *table) put(ident string, r *row) {
	track := t.tracking()
	if old, ok := t.rows[ident]; ok {
		r.pos = old.pos
		t.list[r.pos] = r
		if track {
			t.noteRemoved(old)
		}
	} else {
		r.pos = len(t.list)
		t.list = append(t.list, r)
	}
	t.rows[ident] = r
	if track {
		t.added = append(t.added, r)
	}
}

func (t *table) remove(ident string) {
	old, ok := t.rows[ident]
	if !ok {
		return
	}
	last := t.list[len(t.list)-1]
	t.list[old.pos] = last
	last.pos = old.pos
	t.list = t.list[:len(t.list)-1]
	delete(t.rows, ident)
	if t.tracking() {
		t.noteRemoved(old)
	}
}

// tracking reports whether writes are recorded for a merge into the last order: only when
// there is an order, and only while the changes stay few (else the next order() sorts).
func (t *table) tracking() bool {
	if t.sorted == nil {
		return false
	}
	if len(t.added)+len(t.removed) > len(t.list)/8+64 {
		t.resetOrder()
		return false
	}
	t.stale = true
	return true
}

func (t *table) noteRemoved(r *row) {
	if t.removed == nil {
		t.removed = map[*row]struct{}{}
	}
	t.removed[r] = struct{}{}
}

// resetOrder forgets the order, so the next order() sorts every row (after DDL).
func (t *table) resetOrder() {
	t.sorted, t.added, t.removed, t.stale = nil, nil, nil, false
}

// cmpRows is the unique-index order (row id order for a heap).
func (t *table) cmpRows() func(a, b *row) int {
	if t.key == nil {
		return func(a, b *row) int { return cmpOrdered(a.rid, b.rid) }
	}
	cols := make([]source.Column, len(t.key))
	for j, i := range t.key {
		cols[j] = t.cols[i]
	}
	ids := slices.Clone(t.keyIDs)
	return func(a, b *row) int {
		for j, id := range ids {
			if r := compareValues(cols[j], a.value(id), b.value(id)); r != 0 {
				return r
			}
		}
		return 0
	}
}

// order returns the rows in unique-index order (row id order for a heap). After a few
// writes it merges the new row versions into the previous order instead of sorting every
// row again. The returned slice is never modified later, so readers may keep it.
func (t *table) order() []*row {
	if t.sorted != nil && !t.stale {
		return t.sorted
	}
	cmp := t.cmpRows()
	if t.sorted == nil {
		s := slices.Clone(t.list)
		slices.SortFunc(s, cmp)
		t.resetOrder()
		t.sorted = s
		return s
	}
	var add []*row
	for _, r := range t.added {
		if _, gone := t.removed[r]; !gone {
			add = append(add, r)
		}
	}
	slices.SortFunc(add, cmp)
	out := make([]*row, 0, len(t.list))
	i := 0
	for _, r := range t.sorted {
		if _, gone := t.removed[r]; gone {
			continue
		}
		for i < len(add) && cmp(add[i], r) < 0 {
			out = append(out, add[i])
			i++
		}
		out = append(out, r)
	}
	out = append(out, add[i:]...)
	t.resetOrder()
	t.sorted = out
	return out
}

// RowCount is the table's current number of rows.
func (db *DB) RowCount(name string) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(name)
	if err != nil {
		return 0, err
	}
	return len(t.list), nil
}

// RandomKey picks a current row with pick, which returns an index in [0, n) for n rows,
// and returns its key in index order (its row id for a heap). ok is false for an empty
// table. A nil pick or an index outside [0, n) is a *source.InvalidArgumentError.
func (db *DB) RandomKey(name string, pick func(n int) int) (key []any, ok bool, err error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(name)
	if err != nil || len(t.list) == 0 {
		return nil, false, err
	}
	if pick == nil {
		return nil, false, &source.InvalidArgumentError{Arg: "pick", Reason: "nil"}
	}
	i := pick(len(t.list))
	if i < 0 || i >= len(t.list) {
		return nil, false, &source.InvalidArgumentError{Arg: "pick", Reason: fmt.Sprintf("index %d outside [0, %d)", i, len(t.list))}
	}
	r := t.list[i]
	return t.keyOf(r), true, nil
}

func (t *table) keyOf(r *row) []any {
	if t.key == nil {
		return []any{r.rid}
	}
	k := make([]any, len(t.keyIDs))
	for j, id := range t.keyIDs {
		k[j] = r.value(id)
	}
	return k
}

// Get returns the current row with key (index order; row id for a heap) as column name →
// value. ok is false when no such row exists.
func (db *DB) Get(name string, key []any) (map[string]any, bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.tableLocked(name)
	if err != nil {
		return nil, false, err
	}
	k, err := t.normKey(key)
	if err != nil {
		return nil, false, err
	}
	r, ok := t.rows[t.identOfKey(k)]
	if !ok {
		return nil, false, nil
	}
	out := map[string]any{}
	for _, c := range t.cols {
		out[c.Name] = t.current(r, c)
	}
	return out, true, nil
}
