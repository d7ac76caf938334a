package deltalog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Filter is a row predicate for Snapshot.Scan. Scan skips the files whose statistics
// (add.stats minValues, maxValues, nullCount; partition values for partition columns)
// prove that no row matches, and drops the non-matching rows of the files it reads, so
// the iterator yields exactly the matching rows. NULL never equals a value (SQL
// semantics): IsNull and NotNull test for it. Build filters with Eq, IsNull, NotNull and
// And.
type Filter interface {
	// columns are the top-level columns the predicate reads.
	columns() []string
	// check validates the predicate against the table schema.
	check(schema *StructType) error
	// skip reports whether the file's statistics prove no row matches.
	skip(f *fileView) bool
	// eval computes the predicate on a batch that holds its columns (named as in the
	// table schema); NULL counts as false.
	eval(rec arrow.RecordBatch) ([]bool, error)
}

// Eq is the predicate column = value on a top-level string column (value a string) or
// integer column (byte, short, integer, long; value any Go integer type), e.g.
// Eq("_operation", 0), Eq("app_id", "orders"). Column names compare ignoring case.
// Another column or value type is a *FilterError when the scan starts.
func Eq(column string, value any) Filter {
	e := &eqFilter{filterColumn: filterColumn{column: column}}
	switch v := value.(type) {
	case string:
		e.str, e.isStr = v, true
	case int:
		e.i = int64(v)
	case int8:
		e.i = int64(v)
	case int16:
		e.i = int64(v)
	case int32:
		e.i = int64(v)
	case int64:
		e.i = v
	case uint8:
		e.i = int64(v)
	case uint16:
		e.i = int64(v)
	case uint32:
		e.i = int64(v)
	default:
		e.bad = fmt.Sprintf("value of type %T (want string or integer)", value)
	}
	return e
}

// IsNull is the predicate column IS NULL on a top-level column of any type, e.g.
// IsNull("event") (the facts table's batch rows). Column names compare ignoring case.
func IsNull(column string) Filter { return &nullFilter{filterColumn: filterColumn{column: column}} }

// NotNull is column IS NOT NULL.
func NotNull(column string) Filter {
	return &nullFilter{filterColumn: filterColumn{column: column}, not: true}
}

// And is the conjunction of filters (true when there are none).
func And(filters ...Filter) Filter { return andFilter(filters) }

// FilterError is a Filter that cannot apply to the table: an unknown column, a column
// type the predicate does not support, or a value of the wrong type.
type FilterError struct {
	Column string
	Reason string
}

func (e *FilterError) Error() string {
	return fmt.Sprintf("deltalog: filter on column %q: %s", e.Column, e.Reason)
}

// fileView is what file skipping looks at: the add's partition values and parsed stats.
type fileView struct {
	add      *Add
	stats    Stats
	hasStats bool
	partCols map[string]bool // lower-cased partition column names
}

// partition is the file's value of column when it is a partition column (part): "" for a
// NULL partition; ok is false when the add lacks it.
func (f *fileView) partition(column string) (pv string, part, ok bool) {
	if !f.partCols[strings.ToLower(column)] {
		return "", false, false
	}
	pv, ok = lookupFold(f.add.PartitionValues, column)
	return pv, true, ok
}

// nullCount is the column's nullCount statistic; ok is false when the file has none.
func (f *fileView) nullCount(column string) (int64, bool) {
	if !f.hasStats {
		return 0, false
	}
	raw, ok := lookupRawFold(f.stats.NullCount, column)
	if !ok {
		return 0, false
	}
	var nulls int64
	if json.Unmarshal(raw, &nulls) != nil {
		return 0, false
	}
	return nulls, true
}

// filterColumn is the column a predicate reads: as given, and as the table schema names
// it (set by resolve).
type filterColumn struct {
	column string
	name   string
}

func (c *filterColumn) columns() []string {
	if c.name != "" {
		return []string{c.name}
	}
	return []string{c.column}
}

// resolve finds the column in schema (ignoring case) and records its name there.
func (c *filterColumn) resolve(schema *StructType) (StructField, error) {
	f, ok := schema.Field(c.column)
	if !ok {
		return StructField{}, &FilterError{Column: c.column, Reason: "no such column"}
	}
	c.name = f.Name
	return f, nil
}

type eqFilter struct {
	filterColumn
	isStr bool
	str   string
	i     int64
	bad   string
}

func (e *eqFilter) check(schema *StructType) error {
	if e.bad != "" {
		return &FilterError{Column: e.column, Reason: e.bad}
	}
	f, err := e.resolve(schema)
	if err != nil {
		return err
	}
	switch f.Type {
	case TypeString:
		if !e.isStr {
			return &FilterError{Column: e.column, Reason: "string column compared with an integer"}
		}
	case TypeLong, TypeInteger, TypeShort, TypeByte:
		if e.isStr {
			return &FilterError{Column: e.column, Reason: "integer column compared with a string"}
		}
	default:
		return &FilterError{Column: e.column, Reason: fmt.Sprintf("type %s not supported (string and integer columns only)", typeString(f.Type))}
	}
	return nil
}

// skip: a partition column is compared with the file's partition value; otherwise the value
// must lie within [minValues, maxValues] and the column must not be all NULL. A missing
// statistic means unknown (the file is read). With tightBounds false (deletion vectors) the
// bounds and an all-NULL nullCount stay valid. Truncated string bounds stay valid: Delta cuts
// the min to a prefix (not above any value) and extends a cut max so it stays an upper bound
// (docs/reference/delta-protocol.md §4).
func (e *eqFilter) skip(f *fileView) bool {
	if pv, part, ok := f.partition(e.name); part {
		if !ok {
			return false
		}
		if pv == "" { // NULL partition
			return true
		}
		if e.isStr {
			return pv != e.str
		}
		n, err := strconv.ParseInt(pv, 10, 64)
		return err == nil && n != e.i
	}
	if !f.hasStats {
		return false
	}
	if nulls, ok := f.nullCount(e.name); ok && nulls == f.stats.NumRecords && nulls > 0 {
		return true
	}
	if raw, ok := lookupRawFold(f.stats.MinValues, e.name); ok && e.less(raw, true) {
		return true
	}
	if raw, ok := lookupRawFold(f.stats.MaxValues, e.name); ok && e.less(raw, false) {
		return true
	}
	return false
}

// less reports, for isMin, whether value < bound; otherwise whether value > bound. An
// unparsable bound reports false (unknown).
func (e *eqFilter) less(raw json.RawMessage, isMin bool) bool {
	if e.isStr {
		var b string
		if json.Unmarshal(raw, &b) != nil {
			return false
		}
		if isMin {
			return e.str < b
		}
		return e.str > b
	}
	var b int64
	if json.Unmarshal(raw, &b) != nil {
		return false
	}
	if isMin {
		return e.i < b
	}
	return e.i > b
}

func (e *eqFilter) eval(rec arrow.RecordBatch) ([]bool, error) {
	col := columnFold(rec, e.name)
	if col == nil {
		return nil, &FilterError{Column: e.column, Reason: "column missing from the batch"}
	}
	n := int(rec.NumRows())
	out := make([]bool, n)
	switch a := col.(type) {
	case *array.String:
		for i := range n {
			out[i] = a.IsValid(i) && e.isStr && a.Value(i) == e.str
		}
	case *array.LargeString:
		for i := range n {
			out[i] = a.IsValid(i) && e.isStr && a.Value(i) == e.str
		}
	case *array.Int64:
		for i := range n {
			out[i] = a.IsValid(i) && !e.isStr && a.Value(i) == e.i
		}
	case *array.Int32:
		for i := range n {
			out[i] = a.IsValid(i) && !e.isStr && int64(a.Value(i)) == e.i
		}
	case *array.Int16:
		for i := range n {
			out[i] = a.IsValid(i) && !e.isStr && int64(a.Value(i)) == e.i
		}
	case *array.Int8:
		for i := range n {
			out[i] = a.IsValid(i) && !e.isStr && int64(a.Value(i)) == e.i
		}
	case *array.Null:
		// every row NULL: nothing matches
	default:
		return nil, &FilterError{Column: e.column, Reason: "unsupported Arrow type " + col.DataType().String()}
	}
	return out, nil
}

type nullFilter struct {
	filterColumn
	not bool // IS NOT NULL
}

func (e *nullFilter) check(schema *StructType) error {
	_, err := e.resolve(schema)
	return err
}

// skip: a partition value is NULL or not; otherwise nullCount 0 proves no NULL, nullCount
// equal to numRecords no value. Both stay valid with deletion vectors (eqFilter.skip).
func (e *nullFilter) skip(f *fileView) bool {
	if pv, part, ok := f.partition(e.name); part {
		return ok && (pv == "") == e.not
	}
	nulls, ok := f.nullCount(e.name)
	if !ok {
		return false
	}
	if e.not {
		return nulls == f.stats.NumRecords && nulls > 0
	}
	return nulls == 0
}

func (e *nullFilter) eval(rec arrow.RecordBatch) ([]bool, error) {
	col := columnFold(rec, e.name)
	if col == nil {
		return nil, &FilterError{Column: e.column, Reason: "column missing from the batch"}
	}
	out := make([]bool, rec.NumRows())
	allNull := col.DataType().ID() == arrow.NULL // a Null array has no validity bitmap
	for i := range out {
		out[i] = (allNull || col.IsNull(i)) != e.not
	}
	return out, nil
}

type andFilter []Filter

func (a andFilter) columns() []string {
	var out []string
	for _, f := range a {
		out = append(out, f.columns()...)
	}
	return out
}

func (a andFilter) check(schema *StructType) error {
	for _, f := range a {
		if err := f.check(schema); err != nil {
			return err
		}
	}
	return nil
}

func (a andFilter) skip(v *fileView) bool {
	for _, f := range a {
		if f.skip(v) {
			return true
		}
	}
	return false
}

func (a andFilter) eval(rec arrow.RecordBatch) ([]bool, error) {
	out := make([]bool, rec.NumRows())
	for i := range out {
		out[i] = true
	}
	for _, f := range a {
		m, err := f.eval(rec)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i] = out[i] && m[i]
		}
	}
	return out, nil
}

func lookupFold(m map[string]string, name string) (string, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

func lookupRawFold(m map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	if v, ok := m[name]; ok {
		return v, !isNull(v)
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, !isNull(v)
		}
	}
	return nil, false
}

// columnFold is rec's column with this name (exactly, else ignoring case), or nil.
func columnFold(rec arrow.RecordBatch, name string) arrow.Array {
	fields := rec.Schema().Fields()
	for i, f := range fields {
		if f.Name == name {
			return rec.Column(i)
		}
	}
	for i, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return rec.Column(i)
		}
	}
	return nil
}
