package mssql

import (
	"strings"
	"testing"
)

// Open refuses a DSN it cannot use without repeating any of it: the DSN may hold the
// password (docs/spec.md § source).
func TestOpenErrorsCarryNoDSN(t *testing.T) {
	for _, dsn := range []string{
		"sqlserver://sa:Inl1ne#pw@db:1433?database=d",
		"sqlserver://sa:Inl1ne%zz@db?database=d",
		"mysql://sa:Inl1ne-pw@db?database=d",
		"sqlserver://sa:Inl1ne-pw@db?database=d&encrypt=sometimes",
	} {
		db, err := Open(Options{DSN: dsn, SourceTimeZone: "UTC"})
		if err == nil {
			db.Close()
			t.Errorf("%q: opened, want an error", dsn)
			continue
		}
		if strings.Contains(err.Error(), "Inl1ne") {
			t.Errorf("%q: error carries the password: %v", dsn, err)
		}
	}
}
