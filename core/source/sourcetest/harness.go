// Package sourcetest is the contract suite of source.Source: one named test per SQL Server
// behaviour the engine relies on (docs/reference/sqlserver-cdc.md, with the lab findings of
// docs/reference/lab-findings.md). Run calls it against any implementation through a Harness
// that can also make writes happen: the simulator's write API for core/source/cdcsim, T-SQL
// for a real SQL Server.
package sourcetest

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Harness makes a fresh environment for each test.
type Harness interface {
	// Open returns an environment with no tables of its own yet. The harness cleans it up
	// with t.Cleanup.
	Open(t *testing.T) Env
}

// Env is one test's database: the Source under test and the writes the tests need. Names
// given to Env methods are logical; Name maps them to the physical names the Source sees
// (a real server shares one database between tests).
type Env interface {
	Source() source.Source
	// Name is the physical name of a logical table or capture instance name.
	Name(logical string) string
	// CreateTable creates a table in schema dbo and enables CDC on it with one capture
	// instance named by spec.Instance (all columns captured).
	CreateTable(ctx context.Context, spec Table) error
	// EnableCapture adds a capture instance to a table.
	EnableCapture(ctx context.Context, table, instance string) error
	// Begin opens a transaction.
	Begin(ctx context.Context) (Tx, error)
	// Exec runs the statements as one transaction and returns once capture has
	// processed it.
	Exec(ctx context.Context, stmts ...Stmt) error
	// WaitCaptured returns once capture has processed every committed transaction.
	WaitCaptured(ctx context.Context) error
	// Idle returns once capture has written an idle entry: max LSN moved with no commit.
	Idle(ctx context.Context) error
	// Sleep lets d pass on the server's clock (simulated or real).
	Sleep(ctx context.Context, d time.Duration) error
	// Cleanup runs sys.sp_cdc_cleanup_change_table on an instance.
	Cleanup(ctx context.Context, instance string, lowWater lsn.LSN) error
}

// Restorer is an Env that can back its database up and restore it (RESTORE DATABASE ...
// WITH KEEP_CDC): the restore/rewind contract test needs it and skips without it.
type Restorer interface {
	// Backup takes a backup; Restore puts the database back to it.
	Backup(ctx context.Context) (any, error)
	Restore(ctx context.Context, backup any) error
}

// ReplicaLagger is an Env whose next change reads can land on a secondary that has
// replayed only up to an LSN (read-only routing to a lagging secondary).
type ReplicaLagger interface {
	LagReplica(ctx context.Context, at lsn.LSN, reads int) error
}

// DDLer is an Env that can run DDL on a captured table and disable a capture instance
// (ALTER TABLE ... ADD / DROP COLUMN / ALTER COLUMN, sys.sp_cdc_disable_table).
type DDLer interface {
	// Alter runs one of "ADD <column> <type>", "DROP COLUMN <column>" or
	// "ALTER COLUMN <column> <type>" on table.
	Alter(ctx context.Context, table, ddl string) error
	// DisableCapture disables a capture instance of table.
	DisableCapture(ctx context.Context, table, instance string) error
}

// Tx is an open transaction of an Env.
type Tx interface {
	Exec(ctx context.Context, stmts ...Stmt) error
	Commit(ctx context.Context) error
}

// Table is a table to create. Column types are T-SQL text: "int", "nvarchar(20)",
// "decimal(18,2)", "varchar(10) COLLATE Latin1_General_CI_AS". Key columns are NOT NULL
// and form the primary key; other columns are nullable.
type Table struct {
	Name     string
	Columns  [][2]string // name, type
	Key      []string
	Instance string
	// Computed are computed columns after Columns: name and "[col] * n", the one expression
	// shape every harness evaluates (SQL Server as `name AS ([col] * n)`).
	Computed [][2]string
}

// Stmt is one statement: exactly one of Insert (or Rows), Update or Delete.
type Stmt struct {
	Table string
	// Insert is the new row (column → value).
	Insert map[string]any
	// Update sets columns of the row with Key.
	Update map[string]any
	// Delete removes the row with Key.
	Delete bool
	// Key names the row for Update and Delete, in key order.
	Key []any
	// Keys, instead of Key, makes Update or Delete one statement over several rows (each
	// key in key order): the update sets the same values on every row.
	Keys [][]any
	// Rows, instead of Insert, makes one INSERT of several rows; every row names the same
	// columns.
	Rows []map[string]any
}

// InsertRows builds one INSERT of several rows.
func InsertRows(table string, rows ...map[string]any) Stmt { return Stmt{Table: table, Rows: rows} }

// UpdateRows builds one UPDATE that sets set on every row whose key is in keys.
func UpdateRows(table string, keys [][]any, set map[string]any) Stmt {
	return Stmt{Table: table, Keys: keys, Update: set}
}

// DeleteRows builds one DELETE of every row whose key is in keys.
func DeleteRows(table string, keys ...[]any) Stmt {
	return Stmt{Table: table, Keys: keys, Delete: true}
}

// Insert builds an INSERT of row (column → value).
func Insert(table string, row map[string]any) Stmt { return Stmt{Table: table, Insert: row} }

// Update builds an UPDATE of the row with key (in key order) setting set.
func Update(table string, key []any, set map[string]any) Stmt {
	return Stmt{Table: table, Key: key, Update: set}
}

// Delete builds a DELETE of the row with key (in key order).
func Delete(table string, key ...any) Stmt { return Stmt{Table: table, Key: key, Delete: true} }

var typeRE = regexp.MustCompile(`^\s*([a-zA-Z0-9_]+)\s*(?:\(\s*(max|\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*(?:COLLATE\s+([A-Za-z0-9_]+))?\s*$`)

// ParseColumn turns a T-SQL column type into a source.Column (Present true). A name
// source.CheckName refuses, a type it cannot parse, or a length, precision or scale that
// is not a small number is a *source.InvalidArgumentError.
func ParseColumn(name, sqlType string, nullable bool) (source.Column, error) {
	if err := source.CheckName("column", name); err != nil {
		return source.Column{}, err
	}
	m := typeRE.FindStringSubmatch(sqlType)
	if m == nil {
		return source.Column{}, &source.InvalidArgumentError{Arg: "type of column " + name, Reason: fmt.Sprintf("cannot parse %q", sqlType)}
	}
	for _, num := range []string{m[2], m[3]} {
		if num != "" && num != "max" && len(num) > 4 {
			return source.Column{}, &source.InvalidArgumentError{Arg: "type of column " + name, Reason: fmt.Sprintf("%s in %q is out of range", num, sqlType)}
		}
	}
	c := source.Column{Name: name, DataType: strings.ToLower(m[1]), Collation: m[4], Present: true, Nullable: nullable}
	n := -1
	if m[2] != "" && m[2] != "max" {
		n, _ = strconv.Atoi(m[2]) // at most 4 digits: cannot fail
	}
	switch c.DataType {
	case "decimal", "numeric":
		c.Precision, c.Scale = 18, 0
		if n > 0 {
			c.Precision = n
		}
		if m[3] != "" {
			c.Scale, _ = strconv.Atoi(m[3])
		}
	case "datetime2", "datetimeoffset", "time":
		c.DatetimePrecision = 7
		if n >= 0 && m[2] != "" {
			c.DatetimePrecision = n
		}
	case "char", "varchar", "nchar", "nvarchar", "binary", "varbinary":
		c.MaxLength = 1
		if m[2] == "max" {
			c.MaxLength = -1
		} else if n > 0 {
			c.MaxLength = n
		}
	}
	return c, nil
}

// ClockSetter is an Env whose server clock and time zone can be set: the simulator. A real
// server's clock cannot be moved to a daylight-saving change, so the test that needs it
// skips there. SetClock must be called before the test creates tables.
type ClockSetter interface {
	SetClock(ctx context.Context, zone *time.Location, utc time.Time) error
}

// Permissioner is an Env that can take SELECT on a change table from the login the Source
// under test uses, and give it back. ok is false when that login is the one that owns the
// tables (no separate reader login), where nothing can be taken: the test skips.
type Permissioner interface {
	DenyChangeTable(ctx context.Context, instance string) (ok bool, err error)
	GrantChangeTable(ctx context.Context, instance string) error
}
