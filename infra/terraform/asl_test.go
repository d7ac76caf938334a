package terraform_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
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
			if isStartExecution(st) {
				continue // Step Functions' own API (a machine restarting itself), not Lambda
			}
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

// Which handler error names each Task retries, and that every ErrorEquals name is declared,
// is checked against the one declaration of the names, in functions/lambdaerr's tests.

// lambdaInitSeconds is Lambda's limit on a function's init phase, outside its timeout.
const lambdaInitSeconds = 10

// machineDefs parses every statemachine/*.asl.json.
func machineDefs(t *testing.T) map[string]map[string]any {
	t.Helper()
	defs, err := filepath.Glob(filepath.Join(repoRoot, "statemachine", "*.asl.json"))
	if err != nil || len(defs) == 0 {
		t.Fatalf("no statemachine/*.asl.json (%v)", err)
	}
	out := map[string]map[string]any{}
	for _, def := range defs {
		src, err := os.ReadFile(def)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(src, &doc); err != nil {
			t.Fatalf("%s: %v", def, err)
		}
		out[def] = doc
	}
	return out
}

var resourcePlaceholderRE = regexp.MustCompile(`^\$\{([a-z_]+)_function_arn\}$`)

// startExecutionARN is the Resource of a Task calling Step Functions' StartExecution: the
// backfill machine starts a fresh execution of itself before its history fills. It calls
// no function of the module, so the function checks skip it; the machine's role needs
// states:StartExecution on itself.
const startExecutionARN = "arn:aws:states:::states:startExecution"

func isStartExecution(st map[string]any) bool { return st["Resource"] == startExecutionARN }

// TestTaskTimeoutsAboveFunctionTimeouts (issue 15 item 4): every Task's TimeoutSeconds is
// above the longest its function can run, so that retrying States.Timeout never starts an
// invocation while the timed-out one still runs: no function timeout the module accepts,
// plus Lambda's init, reaches it, and the defaults stay well below.
func TestTaskTimeoutsAboveFunctionTimeouts(t *testing.T) {
	mod := loadModule(t, tableModule)
	defaults := tableEvaluator(t, nil).local("function_defaults")
	for def, doc := range machineDefs(t) {
		tasks := map[string]map[string]any{}
		taskStates(doc["States"], tasks)
		for name, st := range tasks {
			if isStartExecution(st) {
				continue
			}
			m := resourcePlaceholderRE.FindStringSubmatch(st["Resource"].(string))
			if m == nil {
				t.Errorf("%s: Task %s Resource %v is not a function placeholder", def, name, st["Resource"])
				continue
			}
			fn := strings.ReplaceAll(m[1], "_", "-")
			timeout, ok := st["TimeoutSeconds"].(float64)
			if !ok {
				t.Errorf("%s: Task %s has no TimeoutSeconds (Step Functions' default is 99999999 s: a lost answer would hang the execution)", def, name)
				continue
			}
			// The longest function timeout the module would deploy for fn must fail.
			longest := int64(timeout) - lambdaInitSeconds
			inputs := map[string]cty.Value{
				"name": cty.StringVal("t"), "spec": hclValue(t, minimalSpec),
				"functions": cty.ObjectVal(map[string]cty.Value{
					"stream": cty.EmptyObjectVal,
					fn:       cty.ObjectVal(map[string]cty.Value{"timeout": cty.NumberIntVal(longest)}),
				}),
			}
			if failed := newEvaluator(t, mod, inputs).failedValidations("functions"); len(failed) == 0 {
				t.Errorf("%s: Task %s times out at %v s, but the module accepts a %s timeout of %d s (+%d s init)", def, name, timeout, fn, longest, lambdaInitSeconds)
			}
			if d := defaults.GetAttr(fn).GetAttr("timeout"); !d.IsNull() {
				if n, _ := d.AsBigFloat().Int64(); n+lambdaInitSeconds >= int64(timeout) {
					t.Errorf("%s: Task %s times out at %v s, not above %s's default %d s + init", def, name, timeout, fn, n)
				}
			}
		}
	}
}

// TestTaskTimeoutPrecondition: a definition whose Task times out no later than its
// function could run is refused at plan time, naming the function.
func TestTaskTimeoutPrecondition(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot, "statemachine", "bootstrap.asl.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	short := strings.Replace(string(src), `"TimeoutSeconds": 960`, `"TimeoutSeconds": 905`, 1)
	if short == string(src) {
		t.Fatal("bootstrap.asl.json has no Task with TimeoutSeconds 960 to shorten")
	}
	path := filepath.Join(dir, "bootstrap.asl.json")
	if err := os.WriteFile(path, []byte(short), 0o644); err != nil {
		t.Fatal(err)
	}
	e := tableEvaluator(t, map[string]cty.Value{"statemachine_dir": cty.StringVal(dir)})
	failed := e.failedPreconditions("aws_sfn_state_machine.this", "bootstrap", cty.StringVal(path))
	if len(failed) != 1 || !strings.Contains(failed[0], "snapshot (905 s)") {
		t.Errorf("a 905 s Task over a 900 s function: %q", failed)
	}
	// A shorter function makes the same definition acceptable.
	e = tableEvaluator(t, map[string]cty.Value{"statemachine_dir": cty.StringVal(dir), "functions": hclValue(t, `{stream = {}, snapshot = {timeout = 600}}`)})
	if failed := e.failedPreconditions("aws_sfn_state_machine.this", "bootstrap", cty.StringVal(path)); len(failed) > 0 {
		t.Errorf("a 905 s Task over a 600 s function: %q", failed)
	}
}

// stepFunctionsHistoryLimit is the events one Standard execution may record.
const stepFunctionsHistoryLimit = 25000

// taskEvents is the most history events one Task state can add: TaskStateEntered and
// TaskStateExited, and per attempt the function's Scheduled, Started and
// Succeeded/Failed/TimedOut; every Retrier counts its own attempts.
func taskEvents(st map[string]any) int {
	attempts := 1
	retries, _ := st["Retry"].([]any)
	for _, r := range retries {
		rm, _ := r.(map[string]any)
		n, ok := rm["MaxAttempts"].(float64)
		if !ok {
			n = 3 // the ASL default
		}
		attempts += int(n)
	}
	return 2 + 3*attempts
}

// TestInlineMapFitsTheHistory (issue 15 item 4): an inline Map adds its iterations'
// events to the execution's history, which ends at 25,000 events. Each inline Map is
// preceded by a Choice refusing more items than can fit when every Task uses every retry,
// and that refusal fails the execution with a named error before anything is read.
func TestInlineMapFitsTheHistory(t *testing.T) {
	guardRE := regexp.MustCompile(`^(\$\.[A-Za-z0-9_.]+)\[([0-9]+)\]$`)
	for def, doc := range machineDefs(t) {
		states := doc["States"].(map[string]any)
		outside := 4 // ExecutionStarted, ExecutionSucceeded, the Succeed state's entered/exited
		for _, s := range states {
			st := s.(map[string]any)
			switch st["Type"] {
			case "Task":
				outside += taskEvents(st)
			case "Map":
				outside += 4 // MapStateEntered, MapStateStarted, MapStateSucceeded, MapStateExited
			default:
				outside += 2
			}
		}
		for name, s := range states {
			st := s.(map[string]any)
			if st["Type"] != "Map" {
				continue
			}
			proc, _ := st["ItemProcessor"].(map[string]any)
			if cfg, _ := proc["ProcessorConfig"].(map[string]any); cfg["Mode"] == "DISTRIBUTED" {
				continue // child executions keep their own histories
			}
			perItem := 2 // MapIterationStarted, MapIterationSucceeded
			for _, is := range proc["States"].(map[string]any) {
				ist := is.(map[string]any)
				if ist["Type"] == "Task" {
					perItem += taskEvents(ist)
				} else {
					perItem += 2
				}
			}
			// The guard: a Choice whose Default is this Map and whose one rule sends
			// ItemsPath[N] IsPresent elsewhere.
			limit := -1
			for gname, g := range states {
				gs := g.(map[string]any)
				if gs["Type"] != "Choice" || gs["Default"] != name {
					continue
				}
				for _, c := range gs["Choices"].([]any) {
					cm := c.(map[string]any)
					m := guardRE.FindStringSubmatch(fmt.Sprint(cm["Variable"]))
					if m == nil || m[1] != st["ItemsPath"] || cm["IsPresent"] != true {
						continue
					}
					limit, _ = strconv.Atoi(m[2])
					rec := states[cm["Next"].(string)].(map[string]any)
					params, _ := rec["Parameters"].(map[string]any)
					fail, _ := states[fmt.Sprint(rec["Next"])].(map[string]any)
					if params["error"] != "PlanTooLargeError" || fail["Type"] != "Fail" {
						t.Errorf("%s: guard %s does not end in a Fail named PlanTooLargeError (%v, %v)", def, gname, params, fail)
					}
				}
			}
			if limit < 0 {
				t.Errorf("%s: inline Map %s has no guard on the number of items (%s[N] IsPresent)", def, name, st["ItemsPath"])
				continue
			}
			if worst := outside + limit*perItem; worst > stepFunctionsHistoryLimit {
				t.Errorf("%s: %d items of at most %d events, plus %d outside, can reach %d events, above %d", def, limit, perItem, outside, worst, stepFunctionsHistoryLimit)
			}
			if limit < 64 {
				t.Errorf("%s: the guard allows only %d items; a plan needs at least numPartitions ranges", def, limit)
			}
			t.Logf("%s: Map %s: at most %d items × %d events + %d outside = %d of %d", def, name, limit, perItem, outside, outside+limit*perItem, stepFunctionsHistoryLimit)
		}
	}
}
