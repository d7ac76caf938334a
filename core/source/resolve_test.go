package source

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// TestResolveBadInput: a nil list, an empty or unknown name is a
// *CaptureInstanceNotFoundError (with similar names), two case-insensitive matches an
// *AmbiguousCaptureInstanceError; InstancesOf of nothing is empty.
func TestResolveBadInput(t *testing.T) {
	list := []CaptureInstance{
		{Name: "dbo_orders", SourceSchema: "dbo", SourceTable: "orders"},
		{Name: "dbo_orders_v2", SourceSchema: "dbo", SourceTable: "orders"},
		{Name: "X", SourceSchema: "dbo", SourceTable: "x"},
		{Name: "x", SourceSchema: "dbo", SourceTable: "x"},
	}
	var nf *CaptureInstanceNotFoundError
	for _, name := range []string{"", "nope", "a]b"} {
		if _, err := Resolve(nil, name); !errors.As(err, &nf) {
			t.Errorf("Resolve(nil, %q): %v", name, err)
		}
	}
	if _, err := Resolve(list, "dbo_order"); !errors.As(err, &nf) || !slices.Equal(nf.Similar, []string{"dbo_orders", "dbo_orders_v2"}) {
		t.Errorf("Resolve dbo_order: %v", err)
	}
	var amb *AmbiguousCaptureInstanceError
	if ci, err := Resolve(list, "x"); err != nil || ci.Name != "x" {
		t.Errorf("exact match: %v %v", ci, err)
	}
	list = list[:3]
	list = append(list, CaptureInstance{Name: "DBO_ORDERS"})
	if _, err := Resolve(list, "Dbo_Orders"); !errors.As(err, &amb) || len(amb.Matches) != 2 {
		t.Errorf("ambiguous: %v", err)
	}
	if got := InstancesOf(nil, "", ""); len(got) != 0 {
		t.Errorf("InstancesOf(nil) = %v", got)
	}
}

// TestCheckNames: the identifier rules shared by both Sources.
func TestCheckNames(t *testing.T) {
	for _, bad := range []string{"", "a]b", "a\x00", "\xff", strings.Repeat("é", 101)} {
		var ia *InvalidArgumentError
		if err := CheckCaptureInstance(bad); !errors.As(err, &ia) {
			t.Errorf("CheckCaptureInstance(%q) = %v", bad, err)
		}
	}
	for _, good := range []string{"dbo_orders", "dbo_Situação", "a[b", strings.Repeat("é", 100)} {
		if err := CheckCaptureInstance(good); err != nil {
			t.Errorf("CheckCaptureInstance(%q) = %v", good, err)
		}
	}
	if err := CheckName("table", "a b.c"); err != nil {
		t.Errorf("CheckName: %v", err)
	}
	var ia *InvalidArgumentError
	if err := CheckName("table", "x]"); !errors.As(err, &ia) || ia.Arg != "table" {
		t.Errorf("CheckName(x]) = %v", err)
	}
}

// A newer instance whose start_lsn is still NULL sorts last and is left out of the
// table's instances until it has one: reading both instances over the whole range would
// return every change twice.
func TestInstancesOfSkipsUnestablishedNewer(t *testing.T) {
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := CaptureInstance{Name: "dbo_t", SourceSchema: "dbo", SourceTable: "t", StartLSN: lsn.MustParse("0x10"), CreateDate: day}
	pending := CaptureInstance{Name: "dbo_t_v2", SourceSchema: "dbo", SourceTable: "t", CreateDate: day}
	list := []CaptureInstance{pending, old}
	slices.SortStableFunc(list, CompareInstances)
	if list[0].Name != "dbo_t" {
		t.Fatalf("order %v: a NULL start_lsn must sort after an established one", list)
	}
	if got := InstancesOf(list, "dbo", "T"); len(got) != 1 || got[0].Name != "dbo_t" {
		t.Fatalf("InstancesOf = %v, want only dbo_t", got)
	}
	pending.StartLSN = lsn.MustParse("0x20")
	if got := InstancesOf([]CaptureInstance{old, pending}, "dbo", "t"); len(got) != 2 {
		t.Fatalf("established: %v", got)
	}
	// The only instance is kept whatever its start_lsn.
	if got := InstancesOf([]CaptureInstance{{Name: "x", SourceSchema: "dbo", SourceTable: "u"}}, "dbo", "u"); len(got) != 1 {
		t.Fatalf("single instance: %v", got)
	}
}
