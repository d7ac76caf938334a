package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// show prints the rows of a table through our reader: the snapshot of the simulated orders
// table, filtered, limited, as text and as JSON lines, and refuses what it cannot do.
func TestShowPrintsRows(t *testing.T) {
	spec := writeSimSpec(t)
	if _, errOut, code := runCLI(t, "snapshot", "--spec", spec, "--sim"); code != 0 {
		t.Fatalf("snapshot: exit %d: %s", code, errOut)
	}
	bronze := filepath.Join(filepath.Dir(spec), "bronze")

	out, errOut, code := runCLI(t, "show", bronze, "--limit", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "_capture_instance") || !strings.Contains(errOut, "3 rows shown; more match") {
		t.Fatalf("--limit 3: exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}

	out, errOut, code = runCLI(t, "show", bronze, "--where", "id=42", "--where", "_operation = 0", "--json", "--columns", "id,_operation,_start_lsn,customer")
	if code != 0 || strings.TrimSpace(errOut) != "1 row" {
		t.Fatalf("--where id=42: exit %d, stderr %q", code, errOut)
	}
	var row map[string]any
	if err := json.Unmarshal([]byte(out), &row); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if row["id"] != float64(42) || row["_operation"] != float64(0) || !strings.HasPrefix(row["_start_lsn"].(string), "0x") || len(row) != 4 {
		t.Errorf("row %v", row)
	}
	if !strings.HasPrefix(out, `{"id":42,"_operation":0,"_start_lsn":`) {
		t.Errorf("keys not in --columns order: %s", out)
	}

	out, errOut, code = runCLI(t, "show", bronze, "--where", "_capture_instance='dbo_orders'", "--limit", "0", "--columns", "id")
	if code != 0 || strings.Count(out, "\n") != 10_001 || strings.TrimSpace(errOut) != "10000 rows" {
		t.Errorf("--limit 0: exit %d, %d lines, stderr %q; want all 10,000 rows", code, strings.Count(out, "\n"), errOut)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--where", "nope=1"}, `no column "nope"`},
		{[]string{"--where", "id=abc"}, "integer column"},
		{[]string{"--where", "amount=1"}, "string and integer columns only"},
		{[]string{"--where", "id"}, "COLUMN=VALUE"},
		{[]string{"--limit", "-1"}, "--limit"},
		{[]string{"--columns", "id,nope"}, `--columns: no column "nope" (columns: _capture_instance, `},
	} {
		_, errOut, code := runCLI(t, append([]string{"show", bronze}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", tc.args, code, errOut, tc.want)
		}
	}
	if _, errOut, code := runCLI(t, "show", t.TempDir()); code != 1 || !strings.Contains(errOut, "no Delta table there") {
		t.Errorf("empty directory: exit %d, %q", code, errOut)
	}
}

// --where filters on NULL, of any column type: COL=NULL or COL IS NULL, COL IS NOT NULL
// (the facts table's batch rows are event IS NULL); a quoted 'NULL' is the string.
func TestShowWhereNull(t *testing.T) {
	spec := writeSimSpec(t)
	if _, errOut, code := runCLI(t, "snapshot", "--spec", spec, "--sim"); code != 0 {
		t.Fatalf("snapshot: exit %d: %s", code, errOut)
	}
	bronze := filepath.Join(filepath.Dir(spec), "bronze")
	for _, tc := range []struct {
		where []string
		want  string
	}{
		{[]string{"_seqval=NULL"}, "10000 rows"}, // a snapshot row has no _seqval (binary)
		{[]string{"_seqval = null"}, "10000 rows"},
		{[]string{"_command_id IS NULL"}, "10000 rows"},
		{[]string{"_command_id is not null"}, "0 rows"},
		{[]string{"_snapshot IS NOT NULL", "id=42"}, "1 row"},
		{[]string{"id IS NULL"}, "0 rows"},
		{[]string{"customer='NULL'"}, "0 rows"},
	} {
		args := []string{"show", bronze, "--limit", "0", "--columns", "id"}
		for _, w := range tc.where {
			args = append(args, "--where", w)
		}
		_, errOut, code := runCLI(t, args...)
		if code != 0 || strings.TrimSpace(errOut) != tc.want {
			t.Errorf("--where %q: exit %d, stderr %q; want %q", tc.where, code, errOut, tc.want)
		}
	}
	if _, errOut, code := runCLI(t, "show", bronze, "--where", "nope IS NULL"); code != 2 || !strings.Contains(errOut, `no column "nope"`) {
		t.Errorf("nope IS NULL: exit %d, stderr %q", code, errOut)
	}
}
