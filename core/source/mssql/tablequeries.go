package mssql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Source-table statements (S1–S6 of docs/reference/sqlserver-cdc.md §12). Each runs
// after sessionPrefix on a connection of its own.

// sessionPrefix is the parameterless batch sent before every source-table read: the lock
// timeout and the isolation level, always both, so a pooled session never carries a
// previous read's settings (docs/reference/sqlserver-cdc.md §8.2: they stick to the
// session). READ UNCOMMITTED and NOLOCK are refused: a dirty read that a rollback removes is
// never corrected by a change row.
func sessionPrefix(t source.Table) (string, error) {
	timeout := int64(-1)
	if t.LockTimeout != nil {
		if *t.LockTimeout < 0 {
			return "", &source.InvalidArgumentError{Arg: "lockTimeoutMs", Reason: "negative"}
		}
		// SET LOCK_TIMEOUT takes an int of milliseconds and 0 means "do not wait": round
		// a fraction up so a short timeout still waits, refuse what int cannot hold.
		if *t.LockTimeout > math.MaxInt32*time.Millisecond {
			return "", &source.InvalidArgumentError{Arg: "lockTimeoutMs", Reason: fmt.Sprintf("%v is over SET LOCK_TIMEOUT's maximum of %d ms", *t.LockTimeout, math.MaxInt32)}
		}
		timeout = int64((*t.LockTimeout + time.Millisecond - 1) / time.Millisecond)
	}
	var level string
	switch t.Isolation {
	case "", source.ReadCommitted:
		level = "READ COMMITTED"
	case source.Snapshot:
		level = "SNAPSHOT"
	default:
		return "", &source.InvalidArgumentError{Arg: "isolation", Reason: fmt.Sprintf("%q: use read_committed or snapshot (never read uncommitted)", t.Isolation)}
	}
	return "SET LOCK_TIMEOUT " + strconv.FormatInt(timeout, 10) + "; SET TRANSACTION ISOLATION LEVEL " + level + ";", nil
}

// sessionReset puts a session back to the server defaults after a source-table read.
const sessionReset = "SET LOCK_TIMEOUT -1; SET TRANSACTION ISOLATION LEVEL READ COMMITTED;"

// keySet is the validated key columns of one statement.
type keySet struct {
	cols   []source.Column
	quoted []string
	casts  []string
}

func newKeySet(keys []source.Column) (keySet, error) {
	k := keySet{cols: keys, quoted: make([]string, len(keys)), casts: make([]string, len(keys))}
	for i, c := range keys {
		if err := checkName("key column", c.Name); err != nil {
			return k, err
		}
		ct, err := castType(c)
		if err != nil {
			return k, err
		}
		k.quoted[i], k.casts[i] = bracket(c.Name), ct
	}
	return k, nil
}

func (k keySet) list() string { return strings.Join(k.quoted, ", ") }

// bindKey checks that v is the Go value of the column's bronze type (source.Key) and
// returns the driver argument. time.Time is sent in UTC (go-mssqldb binds it as
// datetimeoffset(7), which the CAST turns into the column's type).
func bindKey(c source.Column, v any) (any, error) {
	bad := func() error {
		return &source.InvalidArgumentError{Arg: "key value for " + quoteForMessage(c.Name), Reason: fmt.Sprintf("%T does not fit SQL type %s", v, c.DataType)}
	}
	switch strings.ToLower(c.DataType) {
	case "tinyint", "smallint", "int", "bigint":
		switch x := v.(type) {
		case int64:
			return x, nil
		case int:
			return int64(x), nil
		case int32:
			return int64(x), nil
		}
	case "bit":
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case "real", "float":
		if x, ok := v.(float64); ok {
			return x, nil
		}
	case "decimal", "numeric", "money", "smallmoney", "uniqueidentifier", "time",
		"char", "varchar", "nchar", "nvarchar":
		if x, ok := v.(string); ok {
			return x, nil
		}
	case "date", "datetime", "datetime2", "smalldatetime", "datetimeoffset":
		if x, ok := v.(time.Time); ok {
			return x.UTC(), nil
		}
	case "binary", "varbinary", "timestamp", "rowversion":
		if x, ok := v.([]byte); ok {
			return x, nil
		}
	}
	return nil, bad()
}

// rangeWheres renders the pieces of r over k (the range builder, keyrange.go) with every
// bound value a parameter of p, cast to the key's type. No pieces: the range is empty.
func rangeWheres(p *params, k keySet, r source.KeyRange) ([]string, error) {
	pieces, err := rangePieces(len(k.cols), r.Lo, r.Hi)
	if err != nil {
		return nil, err
	}
	return pieceWheres(p, k, pieces, r)
}

// pieceWheres renders pieces (of rangePieces or afterPieces) over k, their bound values
// taken from r's Lo and Hi, each a parameter of p cast to the key's type.
func pieceWheres(p *params, k keySet, pieces []pred, r source.KeyRange) ([]string, error) {
	names := map[boundRef]string{}
	var bindErr error
	val := func(b boundRef) string {
		if n, ok := names[b]; ok {
			return n
		}
		var v any
		if b.side == sideHi {
			v = r.Hi[b.col]
		} else {
			v = r.Lo[b.col]
		}
		arg, err := bindKey(k.cols[b.col], v)
		if err != nil && bindErr == nil {
			bindErr = err
		}
		n := "CAST(" + p.add(arg) + " AS " + k.casts[b.col] + ")"
		names[b] = n
		return n
	}
	rd := renderer{cols: k.quoted, val: val}
	out := make([]string, len(pieces))
	for i, pc := range pieces {
		if pc == predConst(true) {
			out[i] = ""
		} else {
			out[i] = " WHERE " + rd.render(pc)
		}
	}
	if bindErr != nil {
		return nil, bindErr
	}
	return out, nil
}

// readTableSQL is S5: the columns of t inside r, one SELECT per range piece joined with
// UNION ALL, no ORDER BY. A column with Present false is read as NULL.
func readTableSQL(t source.Table, cols, keys []source.Column, r source.KeyRange) (string, []any, error) {
	tn, err := tableName(t)
	if err != nil {
		return "", nil, err
	}
	if len(cols) == 0 {
		return "", nil, &source.InvalidArgumentError{Arg: "columns", Reason: "no columns to read"}
	}
	sel := make([]string, len(cols))
	for i, c := range cols {
		if err := checkName("column", c.Name); err != nil {
			return "", nil, err
		}
		if c.Present && !c.Computed {
			sel[i] = columnExpr("t", c.Name, c.DataType)
		} else {
			// A computed column reads NULL, as it is in every change row, so that a
			// snapshot and the stream agree (docs/types.md "Computed columns").
			sel[i] = "NULL AS " + bracket(c.Name)
		}
	}
	k, err := newKeySet(keys)
	if err != nil {
		return "", nil, err
	}
	var p params
	wheres, err := rangeWheres(&p, k, r)
	if err != nil {
		return "", nil, err
	}
	head := "SELECT " + strings.Join(sel, ", ") + " FROM " + tn + " AS t"
	if len(wheres) == 0 {
		return head + " WHERE 1 = 0", p.args, nil
	}
	parts := make([]string, len(wheres))
	for i, w := range wheres {
		parts[i] = head + w
	}
	return strings.Join(parts, " UNION ALL "), p.args, nil
}

// keyBoundSQL is S6: the key that leaves exactly n rows in [lo, key) below hi. Each piece
// reads at most n+1 keys in key order (a seek), the pieces are UNION ALL'd and the
// (n+1)-th key overall is returned. "" when the range is empty.
func keyBoundSQL(t source.Table, keys []source.Column, r source.KeyRange, n int64) (string, []any, error) {
	tn, err := tableName(t)
	if err != nil {
		return "", nil, err
	}
	if len(keys) == 0 {
		return "", nil, &source.InvalidArgumentError{Arg: "keys", Reason: "no key columns"}
	}
	if n < 0 {
		return "", nil, &source.InvalidArgumentError{Arg: "n", Reason: "negative"}
	}
	k, err := newKeySet(keys)
	if err != nil {
		return "", nil, err
	}
	var p params
	wheres, err := rangeWheres(&p, k, r)
	if err != nil || len(wheres) == 0 {
		return "", nil, err
	}
	top := p.add(n + 1)
	parts := make([]string, len(wheres))
	for i, w := range wheres {
		parts[i] = "SELECT * FROM (SELECT TOP (" + top + ") " + k.list() + " FROM " + tn + w +
			" ORDER BY " + k.list() + ") AS [__$p" + strconv.Itoa(i+1) + "]"
	}
	return "SELECT " + k.list() + " FROM (" + strings.Join(parts, " UNION ALL ") + ") AS [__$u] ORDER BY " +
		k.list() + " OFFSET " + p.add(n) + " ROWS FETCH NEXT 1 ROWS ONLY", p.args, nil
}

// keyAfterSQL is the first key strictly after after (Source.KeyAfter): one TOP (1) seek
// per piece of "(keys) > after", each in key order, UNION ALL'd, and the first overall.
func keyAfterSQL(t source.Table, keys []source.Column, after source.Key) (string, []any, error) {
	tn, err := tableName(t)
	if err != nil {
		return "", nil, err
	}
	k, err := newKeySet(keys)
	if err != nil {
		return "", nil, err
	}
	pieces, err := afterPieces(len(keys), after)
	if err != nil {
		return "", nil, err
	}
	var p params
	wheres, err := pieceWheres(&p, k, pieces, source.KeyRange{Lo: after})
	if err != nil {
		return "", nil, err
	}
	parts := make([]string, len(wheres))
	for i, w := range wheres {
		parts[i] = "SELECT * FROM (SELECT TOP (1) " + k.list() + " FROM " + tn + w +
			" ORDER BY " + k.list() + ") AS [__$p" + strconv.Itoa(i+1) + "]"
	}
	return "SELECT TOP (1) " + k.list() + " FROM (" + strings.Join(parts, " UNION ALL ") + ") AS [__$u] ORDER BY " + k.list(), p.args, nil
}

// keyMaxSQL is S2: the last key in key order.
func keyMaxSQL(t source.Table, keys []source.Column) (string, error) {
	tn, err := tableName(t)
	if err != nil {
		return "", err
	}
	if len(keys) == 0 {
		return "", &source.InvalidArgumentError{Arg: "keys", Reason: "no key columns"}
	}
	k, err := newKeySet(keys)
	if err != nil {
		return "", err
	}
	desc := make([]string, len(k.quoted))
	for i, q := range k.quoted {
		desc[i] = q + " DESC"
	}
	return "SELECT TOP (1) " + k.list() + " FROM " + tn + " ORDER BY " + strings.Join(desc, ", "), nil
}

// isIntegerType reports the SQL integer types.
func isIntegerType(t string) bool {
	switch strings.ToLower(t) {
	case "tinyint", "smallint", "int", "bigint":
		return true
	}
	return false
}

// intBounds renders " AND k >= @lo AND k < @hi" for the optional integer bounds. The
// bigint parameters are compared uncast: a bound one past an int column's range must not
// overflow a CAST.
func intBounds(p *params, col string, lo, hi *int64) string {
	s := ""
	if lo != nil {
		s += " AND " + col + " >= " + p.add(*lo)
	}
	if hi != nil {
		s += " AND " + col + " < " + p.add(*hi)
	}
	return s
}

// keyExtentSQL is S1: MIN and MAX of one key in two scalar subqueries (two seeks),
// restricted to integer [lo, hi) when given.
func keyExtentSQL(t source.Table, key source.Column, lo, hi *int64) (string, []any, error) {
	tn, err := tableName(t)
	if err != nil {
		return "", nil, err
	}
	if err := checkName("key column", key.Name); err != nil {
		return "", nil, err
	}
	if (lo != nil || hi != nil) && !isIntegerType(key.DataType) {
		return "", nil, &source.InvalidArgumentError{Arg: "key extent bounds", Reason: "bounds apply to integer keys only, not " + key.DataType}
	}
	k := bracket(key.Name)
	var p params
	where := ""
	if b := intBounds(&p, k, lo, hi); b != "" {
		where = " WHERE " + strings.TrimPrefix(b, " AND ")
	}
	return "SELECT (SELECT MIN(" + k + ") FROM " + tn + where + "), (SELECT MAX(" + k + ") FROM " + tn + where + ")", p.args, nil
}

// keyTilesSQL is S3: the first key of tiles 2..n of NTILE(n) over the keys. Helper names
// use CDC's __$ prefix so no key column collides.
func keyTilesSQL(t source.Table, keys []source.Column, n int) (string, []any, error) {
	tn, err := tableName(t)
	if err != nil {
		return "", nil, err
	}
	if len(keys) == 0 {
		return "", nil, &source.InvalidArgumentError{Arg: "keys", Reason: "no key columns"}
	}
	if n < 1 {
		return "", nil, &source.InvalidArgumentError{Arg: "n", Reason: "must be at least 1"}
	}
	k, err := newKeySet(keys)
	if err != nil {
		return "", nil, err
	}
	var p params
	l := k.list()
	return "SELECT " + l + " FROM (SELECT " + l + ", [__$tile], LAG([__$tile]) OVER (ORDER BY " + l + ") AS [__$prev] " +
		"FROM (SELECT " + l + ", NTILE(" + p.add(int64(n)) + ") OVER (ORDER BY " + l + ") AS [__$tile] FROM " + tn + ") AS [__$t]) AS [__$l] " +
		"WHERE [__$tile] <> [__$prev] ORDER BY [__$tile]", p.args, nil
}

// keyBucketsSQL is S4: rows per bucket of an integer key, bucket = floor(k / width) (T-SQL
// division truncates toward zero, so negative keys are floored explicitly).
func keyBucketsSQL(t source.Table, key source.Column, width int64, lo, hi *int64) (string, []any, error) {
	tn, err := tableName(t)
	if err != nil {
		return "", nil, err
	}
	if err := checkName("key column", key.Name); err != nil {
		return "", nil, err
	}
	date := strings.EqualFold(key.DataType, "date")
	if !isIntegerType(key.DataType) && !date {
		return "", nil, &source.InvalidArgumentError{Arg: "key", Reason: "buckets need an integer or date key, not " + key.DataType}
	}
	if date && (lo != nil || hi != nil) {
		return "", nil, &source.InvalidArgumentError{Arg: "key bucket bounds", Reason: "bounds apply to integer keys only, not date"}
	}
	if width < 1 {
		return "", nil, &source.InvalidArgumentError{Arg: "width", Reason: "must be at least 1"}
	}
	k := bracket(key.Name)
	// A date key is bucketed by its days since 1970-01-01 (DATEDIFF of two dates counts
	// day boundaries; '19700101' is read the same under every language setting).
	o := "CAST(" + k + " AS bigint)"
	if date {
		o = "CAST(DATEDIFF(day, CAST('19700101' AS date), " + k + ") AS bigint)"
	}
	var p params
	w := "CAST(" + p.add(width) + " AS bigint)"
	bounds := intBounds(&p, k, lo, hi)
	return "SELECT [__$b], COUNT_BIG(*), SUM(CAST([__$o] AS decimal(38,0))) FROM (SELECT [__$o], CASE WHEN [__$o] >= 0 THEN [__$o] / " + w +
		" ELSE ([__$o] + 1) / " + w + " - 1 END AS [__$b] FROM (SELECT " + o + " AS [__$o] FROM " + tn +
		" WHERE " + k + " IS NOT NULL" + bounds + ") AS [__$x]) AS [__$y] GROUP BY [__$b] ORDER BY [__$b]", p.args, nil
}
