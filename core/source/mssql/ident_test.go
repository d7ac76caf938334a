package mssql

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

func isInvalid(err error) bool {
	var ia *source.InvalidArgumentError
	return errors.As(err, &ia)
}

func TestCheckCaptureInstance(t *testing.T) {
	good := []string{"dbo_orders", "dbo_Situação", "x", strings.Repeat("é", 100), "a b-c.d"}
	for _, s := range good {
		if err := checkCaptureInstance(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	bad := []string{"", strings.Repeat("a", 101), "a]b", "a\nb", "a\x00b", "a\tb", "\xff\xfe"}
	for _, s := range bad {
		if err := checkCaptureInstance(s); !isInvalid(err) {
			t.Errorf("%q: got %v, want *InvalidArgumentError", s, err)
		}
	}
}

func TestCheckNameAndTable(t *testing.T) {
	for _, s := range []string{"orders", "Order Details", "a[b", "ação", "a'b"} {
		if err := checkName("column", s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "a]", "a\rb"} {
		if err := checkName("column", s); !isInvalid(err) {
			t.Errorf("%q: got %v", s, err)
		}
	}
	if got, err := tableName(source.Table{Schema: "dbo", Name: "Order Details"}); err != nil || got != "[dbo].[Order Details]" {
		t.Errorf("tableName = %q, %v", got, err)
	}
	if _, err := tableName(source.Table{Schema: "dbo]; DROP TABLE x; --", Name: "t"}); !isInvalid(err) {
		t.Errorf("injection through schema: %v", err)
	}
	if changeTable("dbo_orders") != "cdc.[dbo_orders_CT]" {
		t.Error(changeTable("dbo_orders"))
	}
}

func TestCheckCollationAndZone(t *testing.T) {
	if err := checkCollation("SQL_Latin1_General_CP1_CI_AS"); err != nil {
		t.Error(err)
	}
	for _, c := range []string{"", "Latin1 CI", "x;y", "a-b"} {
		if err := checkCollation(c); !isInvalid(err) {
			t.Errorf("collation %q: %v", c, err)
		}
	}
	for _, z := range []string{"E. South America Standard Time", "UTC", "US Mountain Standard Time", "(UTC-03.00) a/b"} {
		if err := checkZoneName(z); err != nil {
			t.Errorf("zone %q: %v", z, err)
		}
	}
	for _, z := range []string{"", "x'y", "a;b", "a\nb"} {
		if err := checkZoneName(z); !isInvalid(err) {
			t.Errorf("zone %q: %v", z, err)
		}
	}
}
