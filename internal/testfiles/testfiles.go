// Package testfiles finds the test data committed inside the repository, for tests only:
// the golden Delta tables of testdata/delta (see testdata/delta/README.md for their origin,
// licence and expected values). Nothing outside the clone is needed.
package testfiles

import (
	"os"
	"path/filepath"
	"testing"
)

// Root is the repository root: the first directory at or above the working directory that
// holds go.mod (go test runs each package in its own directory). It fails the test when
// there is none.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testfiles: repository root (go.mod) not found above the working directory")
		}
		dir = parent
	}
}

// DeltaDir is <root>/testdata/delta, the golden Delta tables Spark, Databricks and delta-rs
// wrote. The tables are committed files: read them in place, or copy one with
// CopyDeltaTable before writing to it. It fails the test when the directory is missing.
func DeltaDir(t testing.TB) string {
	t.Helper()
	p := filepath.Join(Root(t), "testdata", "delta")
	if _, err := os.Stat(filepath.Join(p, "README.md")); err != nil {
		t.Fatalf("testfiles: golden Delta tables not found at %s (they are part of the repository): %v", p, err)
	}
	return p
}

// DeltaTable is the directory of one golden table, such as "table-with-dv-small". It fails
// the test when the table does not exist.
func DeltaTable(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(DeltaDir(t), name)
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		t.Fatalf("testfiles: no golden Delta table %q in %s", name, DeltaDir(t))
	}
	return p
}

// CopyDeltaTable copies a golden table into a new temporary directory and returns that
// directory, for tests that commit to, clean up or otherwise change the table.
func CopyDeltaTable(t testing.TB, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(DeltaTable(t, name))); err != nil {
		t.Fatalf("testfiles: copy golden table %q: %v", name, err)
	}
	return dst
}
