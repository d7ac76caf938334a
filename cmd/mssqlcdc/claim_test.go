package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
)

// writeSpecWith writes the simulated orders spec with bronze, checkpoint and facts_table
// replaced, and returns its path.
func writeSpecWith(t *testing.T, bronze, cp, facts string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "spec.json")
	doc := `{"app_id":"orders-v1","bootstrap":true,"source":{"dsn":"sqlserver://u@db.invalid:1433?database=shop","captureInstance":"dbo_orders"},
		"bronze":"` + bronze + `","checkpoint":"` + cp + `","facts_table":"` + facts + `","options":{"numPartitions":2}}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A --sim run writes simulated rows, so it refuses any location off local disk (or off
// an emulator on this machine), before it writes anything (issue 12 item 10).
func TestSimRefusesRemoteLocations(t *testing.T) {
	dir := t.TempDir()
	local := func(n string) string { return filepath.Join(dir, n) }
	for _, tc := range []struct {
		spec string
		args []string
	}{
		{writeSpecWith(t, "s3://real-lake/bronze/orders", local("cp"), local("facts")), []string{"stream", "--available-now"}},
		{writeSpecWith(t, local("b"), "s3a://real-lake/checkpoints/orders", local("facts")), []string{"bootstrap", "--no-stream"}},
		{writeSpecWith(t, local("b"), local("cp"), "s3://real-lake/ops/facts"), []string{"snapshot"}},
		{writeSpecWith(t, local("b"), local("cp"), local("facts")), []string{"export", "--to", "s3://real-lake/exports/orders"}},
	} {
		args := append(append([]string{}, tc.args...), "--spec", tc.spec, "--sim")
		_, errOut, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "--sim writes simulated rows, so it writes only to local paths or to S3 and DynamoDB emulators") || !strings.Contains(errOut, "real-lake") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming the remote location", args, code, errOut)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused runs wrote %d entries under %s", len(entries), dir)
	}
}

// A bronze path that already holds unrelated Parquet files and no Delta log is refused,
// not adopted; a location a --sim run made is refused to a real run, and a real table to a
// --sim run.
func TestRunsRefuseForeignAndMixedLocations(t *testing.T) {
	dir := t.TempDir()
	bronze, cp, facts := filepath.Join(dir, "bronze"), filepath.Join(dir, "cp"), filepath.Join(dir, "facts")
	spec := writeSpecWith(t, bronze, cp, facts)
	if err := os.MkdirAll(bronze, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bronze, "part-00000-old.snappy.parquet"), []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"stream", "--available-now", "--sim"}, {"bootstrap", "--sim"}, {"snapshot", "--sim"}, {"stream", "--available-now"}} {
		_, errOut, code := runCLI(t, append(cmd, "--spec", spec)...)
		if code != 1 || !strings.Contains(errOut, "holds 1 file (e.g. part-00000-old.snappy.parquet) and no Delta log") {
			t.Errorf("%v: exit %d, stderr %q; want the foreign file refused", cmd, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(bronze, "_delta_log")); err == nil {
		t.Error("a refused run created a Delta log next to the foreign files")
	}

	// A simulated snapshot into new local paths, then a real run at them: refused before it
	// connects to SQL Server (db.invalid would fail differently).
	if err := os.RemoveAll(bronze); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "snapshot", "--spec", spec, "--sim"); code != 0 {
		t.Fatalf("snapshot --sim: exit %d: %s", code, errOut)
	}
	_, errOut, code := runCLI(t, "stream", "--spec", spec, "--available-now")
	if code != 1 || !strings.Contains(errOut, "was made by a simulated run") {
		t.Errorf("real stream into a simulated table: exit %d, stderr %q", code, errOut)
	}
}

// S3 is writable by a --sim run only through emulators on a loopback address.
func TestSimWritable(t *testing.T) {
	emu := config.Storage{S3Endpoint: "http://127.0.0.1:9000"}
	for _, tc := range []struct {
		url string
		st  config.Storage
		ok  bool
	}{
		{"/tmp/lake/b", config.Storage{}, true},
		{"file:///tmp/lake/b", config.Storage{}, true},
		{"s3://lake/b", config.Storage{}, false},
		{"s3://lake/b", emu, true},
		{"s3://lake/b", config.Storage{S3Endpoint: "http://localhost:4566"}, true},
		{"s3://lake/b", config.Storage{S3Endpoint: "http://[::1]:9000"}, true},
		{"s3://lake/b", config.Storage{S3Endpoint: "https://minio.example.com"}, false},
		{"s3://lake/b", config.Storage{S3Endpoint: "http://127.0.0.1:9000", DynamoTable: "delta_log"}, false},
		{"s3://lake/b", config.Storage{S3Endpoint: "http://127.0.0.1:9000", DynamoTable: "delta_log", DynamoEndpoint: "http://127.0.0.1:8000"}, true},
	} {
		if got := simWritable(tc.url, tc.st); got != tc.ok {
			t.Errorf("simWritable(%s, %+v) = %v, want %v", tc.url, tc.st, got, tc.ok)
		}
	}
}

// A location that is a file (a spec's bronze, checkpoint or facts table, inspect's or
// show's URL) is refused before anything is read or written, naming the file and what is
// wanted, not with the operating system's "not a directory" on a key inside it.
func TestLocationThatIsAFileSaysSo(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "orders.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := func(n string) string { return filepath.Join(dir, n) }
	for _, args := range [][]string{
		{"bootstrap", "--sim", "--no-stream", "--spec", writeSpecWith(t, file, local("cp"), local("facts"))},
		{"stream", "--sim", "--available-now", "--spec", writeSpecWith(t, local("b"), filepath.Join(file, "cp"), local("facts"))},
		{"inspect", file},
		{"show", file},
	} {
		_, errOut, code := runCLI(t, args...)
		if code != 1 || !strings.Contains(errOut, file+" is a file, not a directory") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 saying %s is a file", args[0], code, errOut, file)
		}
		if strings.Contains(errOut, "_delta_log") || strings.Contains(errOut, ".mssqlcdc-location") {
			t.Errorf("%s: stderr %q names a key inside the file", args[0], errOut)
		}
	}
}

// A location that cannot be written says which spec field it is and why in plain words,
// not the store's internals ("claim file://...: localstore: put if absent
// .mssqlcdc-location: mkdir ...: permission denied", or "storage: not found" for a
// directory /proc cannot hold). The test runs as root, so the unwritable places are a path
// under a regular file and one under /proc, not a chmod.
func TestUnwritableLocationNamesTheField(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ bronze, facts, field, why string }{
		{filepath.Join(file, "b"), filepath.Join(dir, "facts"), "bronze", "not a directory"},
		{filepath.Join(dir, "b"), filepath.Join(file, "facts"), "facts_table", "not a directory"},
	}
	if _, err := os.Stat("/proc/self"); err == nil {
		cases = append(cases, struct{ bronze, facts, field, why string }{"/proc/mssqlcdc-x/b", filepath.Join(dir, "facts"), "bronze", "no such file or directory"})
	}
	for _, tc := range cases {
		spec := writeSpecWith(t, tc.bronze, filepath.Join(dir, "cp"), tc.facts)
		_, errOut, code := runCLI(t, "bootstrap", "--no-stream", "--sim", "--spec", spec)
		want := "cannot write " + tc.field + " ("
		if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, tc.why) ||
			strings.Contains(errOut, "localstore") || strings.Contains(errOut, "storage: not found") || strings.Contains(errOut, ".mssqlcdc-location") {
			t.Errorf("bronze %s, facts %s: exit %d, stderr %q; want %q ... %q without the store's internals", tc.bronze, tc.facts, code, errOut, want, tc.why)
		}
	}
}

// The file system's failures as the local store wraps them, injected (the tests run as
// root, whom chmod does not stop): each names the field, the directory and the reason.
func TestUnwritableSaysWhatFailed(t *testing.T) {
	wrap := func(err error) error {
		return fmt.Errorf("claim file:///data/b: %w", fmt.Errorf("localstore: put if absent .mssqlcdc-location: %w", err))
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "mkdir", Path: "/data/b", Err: syscall.EACCES},
			"cannot write bronze (/data/b): cannot create directory /data/b: permission denied; point bronze at a directory this user can create and write, or fix its permissions"},
		{&fs.PathError{Op: "open", Path: "/data/b/.localstore-*.tmp", Err: syscall.EROFS},
			"cannot write bronze (/data/b): cannot write a file in /data/b: read-only file system; "},
		{&os.LinkError{Op: "link", Old: "/data/b/.localstore-1.tmp", New: "/data/b/.mssqlcdc-location", Err: syscall.EDQUOT},
			"cannot write bronze (/data/b): cannot write a file in /data/b: disk quota exceeded; "},
	} {
		err := unwritable("bronze", "/data/b", wrap(tc.err))
		var lw *LocationWriteError
		if !errors.As(err, &lw) || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, tc.err.(interface{ Unwrap() error }).Unwrap()) {
			t.Errorf("%v: %v, want %q", tc.err, err, tc.want)
		}
	}
	other := errors.New("s3: access denied")
	if err := unwritable("bronze", "s3://b/x", other); err != other {
		t.Errorf("an error off local disk: %v, want it as it is", err)
	}
}

// A real run (no --sim) checks the checkpoint location before it connects, as a --sim run
// does: a checkpoint under a file is a LocationWriteError naming the field, and a
// checkpoint a simulated run made is refused, not written by real rows (both failed
// later, in the store's own words, or not at all). db.invalid would fail differently.
func TestRealRunClaimsTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := func(n string) string { return filepath.Join(dir, n) }
	for _, tc := range []struct {
		cp   string
		args []string
	}{
		{file, []string{"stream", "--available-now"}},
		{filepath.Join(file, "cp"), []string{"stream", "--available-now"}},
		{filepath.Join(file, "cp"), []string{"snapshot"}},
		{filepath.Join(file, "cp"), []string{"bootstrap", "--no-stream"}},
	} {
		spec := writeSpecWith(t, local("b"), tc.cp, local("facts"))
		_, errOut, code := runCLI(t, append(tc.args, "--spec", spec)...)
		if code != 1 || !strings.Contains(errOut, "cannot write checkpoint ("+tc.cp+")") || !strings.Contains(errOut, file+" is a file, not a directory") {
			t.Errorf("%v with checkpoint %s: exit %d, stderr %q; want a LocationWriteError on checkpoint", tc.args, tc.cp, code, errOut)
		}
	}

	// A simulated run's checkpoint with new tables: a real stream refuses it.
	cp := local("cp")
	if _, errOut, code := runCLI(t, "snapshot", "--sim", "--spec", writeSpecWith(t, local("b1"), cp, local("f1"))); code != 0 {
		t.Fatalf("snapshot --sim: exit %d: %s", code, errOut)
	}
	_, errOut, code := runCLI(t, "stream", "--available-now", "--spec", writeSpecWith(t, local("b2"), cp, local("f2")))
	if code != 1 || !strings.Contains(errOut, "was made by a simulated run") || !strings.Contains(errOut, cp) {
		t.Errorf("real stream with a simulated checkpoint: exit %d, stderr %q", code, errOut)
	}
}

// export's --to that is a file, or lies under one, names --to and says what to do, before
// SQL Server is asked anything (db.invalid would fail differently); it said "a table's
// location is a directory" of a folder of Parquet files.
func TestExportToAFileNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := writeSpecWith(t, filepath.Join(dir, "b"), filepath.Join(dir, "cp"), filepath.Join(dir, "facts"))
	for _, to := range []string{file, filepath.Join(file, "export")} {
		_, errOut, code := runCLI(t, "export", "--spec", spec, "--to", to)
		if code != 1 || !strings.Contains(errOut, "cannot write --to ("+to+"): "+file+" is a file, not a directory; point --to at a directory") ||
			strings.Contains(errOut, "table") {
			t.Errorf("--to %s: exit %d, stderr %q", to, code, errOut)
		}
	}
}
