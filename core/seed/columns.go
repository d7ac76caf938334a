package seed

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Why a captured column is seeded as NULL (columnPlan.Null).
const (
	nullComputed = "computed" // CDC captures computed columns as NULL (docs/reference/sqlserver-cdc.md §3.6)
	nullDropped  = "dropped"  // the source table no longer has it: a snapshot reads NULL
	nullMissing  = "missing"  // the copy lacks it and allow_missing_columns is set
)

// columnPlan is how one captured column is filled from the copy.
type columnPlan struct {
	// Column is the captured column (source.Column as CapturedColumns reported it).
	Column source.Column `json:"column"`
	// Copy is the copy column it is read from, as the copy spells it; "" when NULL.
	Copy string `json:"copy,omitempty"`
	// Null says why the column is NULL: computed, dropped or missing.
	Null string `json:"null,omitempty"`
}

// mapColumns matches the captured columns to the copy's by name, exactly or else
// ignoring case (docs/seed.md § Columns and types); the copy's other columns are dropped.
// Computed columns and columns the source table dropped are NULL. Every problem is
// reported at once in one *config.ConfigError: captured columns the copy lacks (field
// "copy"; unless allowMissing, which seeds them NULL), a copy column whose type no cast
// takes, and a name two copy columns match ignoring case (field "copy.<column>").
func mapColumns(cols []source.Column, copySchema *arrow.Schema, allowMissing bool) ([]columnPlan, error) {
	var out []columnPlan
	var missing []string
	var problems []config.Problem
	fields := copySchema.Fields()
	for _, c := range cols {
		p := columnPlan{Column: c}
		switch {
		case c.Computed:
			p.Null = nullComputed
		case !c.Present:
			p.Null = nullDropped
		default:
			switch i := fieldIndexFold(fields, c.Name); i {
			case -1:
				if !allowMissing {
					missing = append(missing, c.Name)
				}
				p.Null = nullMissing
			case -2:
				problems = append(problems, config.Problem{Field: "copy." + c.Name,
					Reason: "matches several copy columns ignoring case: rename them so that one matches"})
			default:
				f := fields[i]
				if _, err := newCast(c, f.Type); err != nil {
					var te *CopyTypeError
					if errors.As(err, &te) {
						te.CopyColumn = f.Name
					}
					problems = append(problems, config.Problem{Field: "copy." + c.Name, Reason: err.Error()})
				}
				p.Copy = f.Name
			}
		}
		out = append(out, p)
	}
	if len(missing) > 0 {
		problems = append([]config.Problem{{Field: "copy", Reason: fmt.Sprintf("the copy lacks the captured columns %s (matched by name ignoring case): "+
			"add them to the copy, or seed with allow_missing_columns to write them as NULL", strings.Join(missing, ", "))}}, problems...)
	}
	if len(problems) > 0 {
		return nil, &config.ConfigError{Problems: problems, In: requestInput}
	}
	return out, nil
}

// copyColumns are the copy columns the plan reads, in plan order.
func copyColumns(plan []columnPlan) []string {
	var out []string
	for _, p := range plan {
		if p.Copy != "" {
			out = append(out, p.Copy)
		}
	}
	return out
}

// converter turns batches of the copy into bronze snapshot records.
type converter struct {
	plan   []columnPlan
	schema *arrow.Schema // bronze's schema, the files' schema
	stamp  bronze.SnapshotStamp
	// casts by plan index and copy type fingerprint (a Parquet copy's files may type a
	// column differently).
	casts map[castKey]castFunc
}

type castKey struct {
	col  int
	from string
}

// columnFailure is a value of one captured column the cast refused.
type columnFailure struct {
	plan columnPlan
	failure
}

// convert returns rec's rows as a record of c.schema stamped as snapshot rows: each
// captured column cast from its copy column (found in rec by name, else among the file's
// partition values, parts), NULL for the plan's NULL columns. A copy column neither holds
// is a ConfigError naming file. The first value a cast refuses is returned as a
// *columnFailure, with no record.
func (cv *converter) convert(rec arrow.RecordBatch, parts map[string]*string, file string) (arrow.RecordBatch, *columnFailure, error) {
	n := int(rec.NumRows())
	fields := make([]arrow.Field, 0, len(cv.plan))
	cols := make([]arrow.Array, 0, len(cv.plan))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	recFields := rec.Schema().Fields()
	for i, p := range cv.plan {
		if p.Copy == "" {
			continue // NULL: SnapshotRecord fills it
		}
		var in arrow.Array
		if j := fieldIndexFold(recFields, p.Copy); j >= 0 {
			in = rec.Column(j)
			in.Retain()
		} else if v, ok := parts[strings.ToLower(p.Copy)]; ok {
			in = constantText(v, n)
		} else {
			return nil, nil, configErr("copy", fmt.Sprintf("file %s has no column %s (captured column %s): add it to every file of the copy, or seed with allow_missing_columns and leave it out of the copy",
				file, p.Copy, p.Column.Name))
		}
		fn, err := cv.cast(i, in.DataType())
		if err != nil {
			in.Release()
			return nil, nil, fmt.Errorf("file %s: %w", file, err)
		}
		out, f := fn(in)
		in.Release()
		if f != nil {
			return nil, &columnFailure{plan: p, failure: *f}, nil
		}
		cols = append(cols, out)
		fields = append(fields, arrow.Field{Name: p.Column.Name, Type: out.DataType(), Nullable: true})
	}
	table := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
	defer table.Release()
	out, err := bronze.SnapshotRecord(cv.schema, table, cv.stamp)
	if err != nil {
		return nil, nil, err
	}
	return out, nil, nil
}

// cast is the cached cast of plan column i from type from.
func (cv *converter) cast(i int, from arrow.DataType) (castFunc, error) {
	k := castKey{col: i, from: from.Fingerprint()}
	if fn, ok := cv.casts[k]; ok {
		return fn, nil
	}
	fn, err := newCast(cv.plan[i].Column, from)
	if err != nil {
		var te *CopyTypeError
		if errors.As(err, &te) {
			te.CopyColumn = cv.plan[i].Copy
		}
		return nil, err
	}
	if cv.casts == nil {
		cv.casts = map[castKey]castFunc{}
	}
	cv.casts[k] = fn
	return fn, nil
}

// constantText is n rows of one text (nil: NULL), a partition value.
func constantText(v *string, n int) arrow.Array {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(n)
	for range n {
		if v == nil {
			b.AppendNull()
		} else {
			b.Append(*v)
		}
	}
	return b.NewArray()
}
