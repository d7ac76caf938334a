package terraform_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// lambdaServiceErrors are the Lambda service's transient errors that every Task calling a
// function retries: the four the Step Functions developer guide lists under "Handle Lambda
// service exceptions" (an invocation that failed with a 500 from Lambda), and
// Lambda.TooManyRequestsException, which the stream's reserved concurrency of 1 makes likely
// while a scheduled invocation runs.
var lambdaServiceErrors = []string{
	"Lambda.ClientExecutionTimeoutException",
	"Lambda.ServiceException",
	"Lambda.AWSLambdaException",
	"Lambda.SdkClientException",
	"Lambda.TooManyRequestsException",
}

// taskStates collects every Task state by name, including those inside Map and Parallel
// states.
func taskStates(states any, out map[string]map[string]any) {
	m, _ := states.(map[string]any)
	for name, s := range m {
		st, _ := s.(map[string]any)
		if st["Type"] == "Task" {
			out[name] = st
		}
		for _, key := range []string{"ItemProcessor", "Iterator"} {
			if p, ok := st[key].(map[string]any); ok {
				taskStates(p["States"], out)
			}
		}
		if branches, ok := st["Branches"].([]any); ok {
			for _, b := range branches {
				if bm, ok := b.(map[string]any); ok {
					taskStates(bm["States"], out)
				}
			}
		}
	}
}

// TestTasksRetryLambdaServiceErrors: every Task of statemachine/*.asl.json retries the
// Lambda service's transient errors, so a 500 from Lambda does not fail a bootstrap.
func TestTasksRetryLambdaServiceErrors(t *testing.T) {
	defs, err := filepath.Glob(filepath.Join(repoRoot, "statemachine", "*.asl.json"))
	if err != nil || len(defs) == 0 {
		t.Fatalf("no statemachine/*.asl.json (%v)", err)
	}
	for _, def := range defs {
		src, err := os.ReadFile(def)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(src, &doc); err != nil {
			t.Fatalf("%s: %v", def, err)
		}
		tasks := map[string]map[string]any{}
		taskStates(doc["States"], tasks)
		if len(tasks) == 0 {
			t.Errorf("%s: no Task states", def)
		}
		for name, st := range tasks {
			var retried []string
			retries, _ := st["Retry"].([]any)
			for _, r := range retries {
				rm, _ := r.(map[string]any)
				names, _ := rm["ErrorEquals"].([]any)
				for _, n := range names {
					if s, ok := n.(string); ok {
						retried = append(retried, s)
					}
				}
			}
			for _, want := range lambdaServiceErrors {
				if !slices.Contains(retried, want) {
					t.Errorf("%s: Task %s does not retry %s", def, name, want)
				}
			}
		}
	}
}

// TestRetriedErrorsAreNamedByHandlers: every handler error a Retry names is one that
// core/snapshot.Named or core/stream.Named can return (as[*pkg.Type]), since aws-lambda-go
// reports the returned error's type name as errorType, and that is the name Step Functions
// matches. A misspelt or renamed type would silently stop being retried.
func TestRetriedErrorsAreNamedByHandlers(t *testing.T) {
	named := map[string]bool{}
	typeRE := regexp.MustCompile(`as\[\*(?:[a-z]+\.)?([A-Z][A-Za-z0-9]*)\]`)
	for _, f := range []string{"core/snapshot/event.go", "core/stream/named.go"} {
		src, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range typeRE.FindAllStringSubmatch(string(src), -1) {
			named[m[1]] = true
		}
	}
	if !named["TransientError"] || !named["ConcurrentModificationError"] {
		t.Fatalf("found %d named errors; the Named functions moved?", len(named))
	}
	defs, err := filepath.Glob(filepath.Join(repoRoot, "statemachine", "*.asl.json"))
	if err != nil || len(defs) == 0 {
		t.Fatalf("no statemachine/*.asl.json (%v)", err)
	}
	for _, def := range defs {
		src, err := os.ReadFile(def)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(src, &doc); err != nil {
			t.Fatalf("%s: %v", def, err)
		}
		tasks := map[string]map[string]any{}
		taskStates(doc["States"], tasks)
		for name, st := range tasks {
			retries, _ := st["Retry"].([]any)
			for _, r := range retries {
				rm, _ := r.(map[string]any)
				names, _ := rm["ErrorEquals"].([]any)
				for _, n := range names {
					s, _ := n.(string)
					if strings.HasPrefix(s, "Lambda.") || strings.HasPrefix(s, "States.") || strings.HasPrefix(s, "Sandbox.") {
						continue
					}
					if !named[s] {
						t.Errorf("%s: Task %s retries %q, which no handler returns (core/snapshot.Named, core/stream.Named)", def, name, s)
					}
				}
			}
		}
	}
}
