// Package core_test holds checks on core/ as a whole.
package core_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// forbidden are the module paths core must not depend on: core is the domain, and the AWS
// SDK and the Lambda runtime belong to the wiring (internal/connect) and the handlers
// (functions/). A core package that needs AWS takes an interface the wiring fills.
var forbidden = []string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-lambda-go"}

// notYetMoved are core packages still allowed to import AWS, each with the reason; an
// entry is removed when its package leaves core (the test fails while a stale one stays).
var notYetMoved = map[string]string{}

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
	var check []string
	for _, p := range pkgs {
		if _, ok := notYetMoved[p]; !ok {
			check = append(check, p)
		}
	}
	for p, why := range notYetMoved {
		if !slices.Contains(pkgs, p) {
			t.Errorf("%s is no longer in core (%s): remove it from notYetMoved", p, why)
		}
	}
	if len(check) < 10 {
		t.Fatalf("go list ./... in core found %d packages: %v", len(check), check)
	}
	bad := map[string][]string{}
	for _, dep := range goList(t, append([]string{"-deps"}, check...)...) {
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
