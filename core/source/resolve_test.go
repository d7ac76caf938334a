package source

import (
	"errors"
	"slices"
	"strings"
	"testing"
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
