package repotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/internal/testfiles"
)

// TestNpmToolsRefusesALinkedNodeModules runs scripts/npm-tools.sh (what scripts/test.sh
// and scripts/with-dynalite.sh install with) in a checkout whose node_modules is a symlink
// to another checkout's install: it must fail with advice and leave the link's target as
// it was, because npm ci would empty it.
func TestNpmToolsRefusesALinkedNodeModules(t *testing.T) {
	root := testfiles.Root(t)
	checkout := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(checkout, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := t.TempDir() // another checkout's node_modules, without the tools: npm ci would run
	sentinel := filepath.Join(other, "kept")
	if err := os.WriteFile(sentinel, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(checkout, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `set -euo pipefail; root="$1"; . "$2"`, "npm-tools", checkout, filepath.Join(root, "scripts", "npm-tools.sh"))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("npm-tools.sh accepted a symlinked node_modules; output:\n%s", out)
	}
	if !strings.Contains(string(out), "node_modules is a symlink") || !strings.Contains(string(out), "Remove the link") {
		t.Errorf("refusal does not say what is wrong and what to do:\n%s", out)
	}
	if _, err := os.Stat(sentinel); err != nil {
		t.Errorf("the link's target was changed: %v", err)
	}
}
