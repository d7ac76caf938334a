package source

import (
	"sort"
	"strings"
)

// Resolve finds a capture instance by name among list: an exact match first, then a
// case-insensitive one (SQL Server's default collation resolves names ignoring case). Two
// case-insensitive matches and no exact one is an *AmbiguousCaptureInstanceError; none is
// a *CaptureInstanceNotFoundError listing names that share a prefix or the table.
func Resolve(list []CaptureInstance, name string) (CaptureInstance, error) {
	for _, ci := range list {
		if ci.Name == name {
			return ci, nil
		}
	}
	var matches []CaptureInstance
	for _, ci := range list {
		if strings.EqualFold(ci.Name, name) {
			matches = append(matches, ci)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		var similar []string
		lower := strings.ToLower(name)
		for _, ci := range list {
			l := strings.ToLower(ci.Name)
			if strings.HasPrefix(l, lower) || strings.HasPrefix(lower, l) || strings.Contains(lower, strings.ToLower(ci.SourceTable)) {
				similar = append(similar, ci.Name)
			}
		}
		sort.Strings(similar)
		return CaptureInstance{}, &CaptureInstanceNotFoundError{Name: name, Similar: similar}
	default:
		names := make([]string, len(matches))
		for i, m := range matches {
			names[i] = m.Name
		}
		return CaptureInstance{}, &AmbiguousCaptureInstanceError{Name: name, Matches: names}
	}
}

// InstancesOf returns the capture instances of the table schema.table among list,
// comparing names ignoring case, in list order (oldest first). At most two exist.
//
// A newer instance whose start_lsn is still NULL (zero: its low endpoint is not
// established yet, docs/reference/sqlserver-cdc.md §4.7) is left out until
// it has one: a reader cannot tell where it takes over from the older one, and reading both
// over the whole range would return every change twice. The oldest instance is kept
// whatever its start_lsn.
func InstancesOf(list []CaptureInstance, schema, table string) []CaptureInstance {
	var out []CaptureInstance
	for _, ci := range list {
		if !strings.EqualFold(ci.SourceSchema, schema) || !strings.EqualFold(ci.SourceTable, table) {
			continue
		}
		if len(out) > 0 && ci.StartLSN.IsZero() {
			continue
		}
		out = append(out, ci)
	}
	return out
}

// CompareInstances is the order of CaptureInstances: by create_date, then by start_lsn,
// oldest first. A NULL (zero) start_lsn sorts after every established one of the same
// create_date: it belongs to an instance whose low endpoint is not established yet, the
// newest.
func CompareInstances(a, b CaptureInstance) int {
	if r := a.CreateDate.Compare(b.CreateDate); r != 0 {
		return r
	}
	switch az, bz := a.StartLSN.IsZero(), b.StartLSN.IsZero(); {
	case az && bz:
		return 0
	case az:
		return 1
	case bz:
		return -1
	}
	return a.StartLSN.Compare(b.StartLSN)
}

// TableInstances resolves name (Resolve) and returns every capture instance of its table
// (InstancesOf), oldest first. A name that no longer exists but is its table's default
// name <schema>_<table> resolves to that table's instances, so a stream configured with
// the default name follows the table's newest instance once the older one is disabled
// (docs/reference/original-library.md §8.3). Other names fail as Resolve does.
func TableInstances(list []CaptureInstance, name string) ([]CaptureInstance, error) {
	ci, err := Resolve(list, name)
	if err == nil {
		return InstancesOf(list, ci.SourceSchema, ci.SourceTable), nil
	}
	if _, nf := err.(*CaptureInstanceNotFoundError); nf {
		for _, c := range list {
			if strings.EqualFold(c.SourceSchema+"_"+c.SourceTable, name) {
				if insts := InstancesOf(list, c.SourceSchema, c.SourceTable); len(insts) > 0 {
					return insts, nil
				}
			}
		}
	}
	return nil, err
}
