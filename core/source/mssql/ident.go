package mssql

import (
	"strings"
	"unicode"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// MaxCaptureInstanceLen is source.MaxCaptureInstanceLen.
const MaxCaptureInstanceLen = source.MaxCaptureInstanceLen

// checkCaptureInstance validates a capture instance name before it is inlined as
// cdc.[<ci>_CT] (docs/reference/sqlserver-cdc.md §4.1, §8.4), with
// source.CheckCaptureInstance: bad input is a *source.InvalidArgumentError.
func checkCaptureInstance(ci string) error { return source.CheckCaptureInstance(ci) }

// checkName validates a schema, table or column name before it is bracket-quoted, with
// source.CheckName. what names the argument in the error.
func checkName(what, name string) error { return source.CheckName(what, name) }

func quoteForMessage(s string) string { return source.QuoteForMessage(s) }

// bracket quotes a validated name as [name]. Callers validate first: a name holding ']'
// never reaches here.
func bracket(name string) string { return "[" + name + "]" }

// changeTable is the inlined name of a capture instance's change table, cdc.[<ci>_CT].
func changeTable(ci string) string { return "cdc.[" + ci + "_CT]" }

// tableName validates and quotes a source table as [schema].[table].
func tableName(t source.Table) (string, error) {
	if err := checkName("schema", t.Schema); err != nil {
		return "", err
	}
	if err := checkName("table", t.Name); err != nil {
		return "", err
	}
	return bracket(t.Schema) + "." + bracket(t.Name), nil
}

// checkCollation validates a collation name before it is inlined after COLLATE: letters,
// digits and '_' only (docs/reference/sqlserver-cdc.md §8.4).
func checkCollation(c string) error {
	if c == "" {
		return &source.InvalidArgumentError{Arg: "collation", Reason: "empty name"}
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_') {
			return &source.InvalidArgumentError{Arg: "collation", Reason: "name " + quoteForMessage(c) + " may hold only letters, digits and '_'"}
		}
	}
	return nil
}

// checkZoneName validates a Windows time zone name (sourceTimeZone, CURRENT_TIMEZONE_ID()):
// letters, digits, space and ._+-/() only (docs/reference/sqlserver-cdc.md §8.4).
func checkZoneName(z string) error {
	if z == "" {
		return &source.InvalidArgumentError{Arg: "sourceTimeZone", Reason: "empty zone name"}
	}
	for _, r := range z {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(" ._+-/()", r)) {
			return &source.InvalidArgumentError{Arg: "sourceTimeZone", Reason: "zone " + quoteForMessage(z) + " may hold only letters, digits, space and ._+-/()"}
		}
	}
	return nil
}
