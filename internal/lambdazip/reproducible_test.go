package main

import (
	"archive/zip"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBuildIsReproducible: `make build` before and after a commit that changes no code
// gives a byte-identical zip, so Terraform's source_code_hash (and with it a redeploy)
// changes only with the code; a code change does change it. It builds the stream function
// as make build does, in a git repository holding a copy of this checkout, on a Go whose
// settings are the defaults (GOFLAGS=-buildvcs=auto: stamping the commit unless the
// Makefile says not to).
func TestBuildIsReproducible(t *testing.T) {
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("builds the stream function three times for linux/arm64; not in -short")
	}
	for _, tool := range []string{"git", "make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyCheckout(t, root, dir)

	env := append(os.Environ(), "GOFLAGS=-buildvcs=auto",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	build := func() []byte {
		t.Helper()
		run("make", "build", "FUNCTIONS=stream")
		b, err := os.ReadFile(filepath.Join(dir, "dist", "stream.zip"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	run("git", "init", "-q")
	run("git", "add", "-A")
	run("git", "commit", "-q", "-m", "first")
	first := build()
	checkZip(t, first)

	// A commit that changes no code.
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("git", "commit", "-q", "-am", "docs only")
	if second := build(); !bytes.Equal(first, second) {
		t.Fatalf("a commit that changes no code changed dist/stream.zip (%d -> %d bytes): the build stamps something besides the code", len(first), len(second))
	}

	// A commit that changes the code (the test must be able to tell): an init function in
	// core/config, which every function links.
	cfgSrc, err := os.ReadFile(filepath.Join(dir, "core", "config", "config.go"))
	if err != nil {
		t.Fatal(err)
	}
	pkg := regexp.MustCompile(`(?m)^package (\w+)`).FindSubmatch(cfgSrc)
	if pkg == nil {
		t.Fatal("core/config/config.go has no package clause")
	}
	probe := "package " + string(pkg[1]) + "\n\nimport \"os\"\n\nfunc init() { _ = os.Setenv(\"MSSQLCDC_REPRODUCIBLE_PROBE\", \"1\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "core", "config", "zz_probe.go"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	run("git", "add", "-A")
	run("git", "commit", "-q", "-m", "code")
	if third := build(); bytes.Equal(first, third) {
		t.Fatal("a code change left dist/stream.zip unchanged")
	}
}

// copyCheckout copies the files git tracks in root (as they are in the work tree) to dir.
func copyCheckout(t *testing.T, root, dir string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", root, err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, rel)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// checkZip: one executable entry named bootstrap, as the provided.al2023 runtime wants,
// without a modification time.
func checkZip(t *testing.T, b []byte) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != 1 || zr.File[0].Name != "bootstrap" {
		t.Fatalf("zip entries %v, want bootstrap alone", zr.File)
	}
	f := zr.File[0]
	if f.Mode().Perm() != 0o755 {
		t.Errorf("bootstrap mode %v, want 0755", f.Mode())
	}
	if f.ModifiedTime != 0 || f.ModifiedDate != 0 || len(f.Extra) != 0 {
		t.Errorf("bootstrap carries a timestamp (time %d, date %d, extra %d bytes)", f.ModifiedTime, f.ModifiedDate, len(f.Extra))
	}
}
