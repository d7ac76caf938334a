package testfiles

import (
	"os"
	"path/filepath"
	"testing"
)

// The golden tables are found from any package directory, and a copy is independent of
// the committed files.
func TestDeltaDirAndCopy(t *testing.T) {
	root := Root(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("Root %s holds no go.mod", root)
	}
	if got, want := DeltaDir(t), filepath.Join(root, "testdata", "delta"); got != want {
		t.Fatalf("DeltaDir %s, want %s", got, want)
	}
	orig := DeltaTable(t, "simple_table")
	cp := CopyDeltaTable(t, "simple_table")
	commit := filepath.Join("_delta_log", "00000000000000000000.json")
	want, err := os.ReadFile(filepath.Join(orig, commit))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(cp, commit))
	if err != nil || string(got) != string(want) {
		t.Fatalf("copied commit differs (%v)", err)
	}
	if err := os.WriteFile(filepath.Join(cp, commit), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(orig, commit)); string(again) != string(want) {
		t.Fatal("writing the copy changed the committed table")
	}
}
