// Package core_test holds checks on core/ as a whole.
package core_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// forbidden are the module paths core must not depend on: core is the domain, and the AWS
// SDK and the Lambda runtime belong to the wiring (internal/connect) and the handlers
// (functions/). A core package that needs AWS takes an interface the wiring fills.
var forbidden = []string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-lambda-go"}

// goList runs `go list args...` in this directory and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Fields(string(out))
}

// `go list -deps ./core/...` names no package of the AWS SDK or of aws-lambda-go.
func TestCoreImportsNoAWS(t *testing.T) {
	pkgs := goList(t, "./...")
	if len(pkgs) < 10 {
		t.Fatalf("go list ./... in core found %d packages: %v", len(pkgs), pkgs)
	}
	// One line per dependency: its import path, its directory and its Go files.
	const format = `{{.ImportPath}}{{if not .Standard}} {{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{end}}`
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", format}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	// go test caches a result by the files the test itself opened, not those go list read:
	// stat every file the answer depends on, so a change to any of them reruns the test.
	for _, f := range []string{"../go.mod", "../go.sum"} {
		_, _ = os.Stat(f)
	}
	bad := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 1 { // not a standard library package: its directory (listing) and files
			for _, f := range append([]string{""}, fields[2:]...) {
				_, _ = os.Stat(filepath.Join(fields[1], f))
			}
		}
		dep := fields[0]
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				bad[f] = append(bad[f], dep)
			}
		}
	}
	for f, deps := range bad {
		t.Errorf("core depends on %d packages of %s (%s, ...); find the importer with\n"+
			"  go list -f '{{.ImportPath}}: {{.Imports}}' -deps ./core/... | grep %s", len(deps), f, deps[0], f)
	}
}
