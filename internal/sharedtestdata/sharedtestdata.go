// Package sharedtestdata finds the shared test data that sits beside the repository clone
// (../shared/testdata from the directory holding go.mod), for tests only.
package sharedtestdata

import (
	"os"
	"path/filepath"
	"testing"
)

// DeltaDir is ../shared/testdata/delta beside the repository root: the golden Delta tables
// other engines (Spark, delta-rs) wrote. It fails the test when the root (the first
// directory up from the working directory holding go.mod) or the tables are missing,
// since a golden test has nothing to check without them.
func DeltaDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root (go.mod) not found")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "testdata", "delta")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("golden Delta tables not found at %s (the shared/ directory must sit beside the repository clone): %v", p, err)
	}
	return p
}
