package lambdaerr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
)

// errorType is the name aws-lambda-go reports for err (the type's name, pointer removed);
// the handlers' own tests check it through aws-lambda-go's invoke path itself.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// zeros are new zero values of the declared name's types.
func zeros(n Name) []error {
	var out []error
	for _, t := range n.typs {
		out = append(out, reflect.New(t.Elem()).Interface().(error))
	}
	return out
}

func TestDeclaredNamesAreTypeNames(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range Declared() {
		if seen[n.Name] {
			t.Errorf("%s declared twice", n.Name)
		}
		seen[n.Name] = true
		for _, z := range zeros(n) {
			if got := errorType(z); got != n.Name || !strings.HasSuffix(n.Name, "Error") {
				t.Errorf("%s: errorType %q of %T", n.Name, got, z)
			}
		}
		if n.Functions == 0 {
			t.Errorf("%s: returned by no function", n.Name)
		}
		if got, ok := Lookup(n.Name); !ok || got.Name != n.Name {
			t.Errorf("Lookup(%s) = %v, %v", n.Name, got, ok)
		}
	}
	if _, ok := Lookup("wrapError"); ok {
		t.Error("Lookup found an undeclared name")
	}
}

// Named returns every declared error itself however deeply wrapped, and the outermost one
// when several are nested.
func TestNamedUnwrapsEveryDeclaredName(t *testing.T) {
	for _, n := range Declared() {
		for _, typed := range zeros(n) {
			for _, wrapped := range []error{
				typed,
				fmt.Errorf("batch 3: %w", fmt.Errorf("read: %w", typed)),
				errors.Join(errors.New("first"), fmt.Errorf("second: %w", typed)),
			} {
				if got := Named(wrapped); got != typed {
					t.Errorf("%s (%T) in %q: Named gave %T", n.Name, typed, wrapped, got)
				}
			}
		}
	}
	transient := &source.TransientError{Op: "x", Err: errors.New("reset")}
	su := &stream.SourceUnavailableError{Op: "max_lsn", Err: transient}
	if got := Named(fmt.Errorf("batch: %w", su)); got != su {
		t.Errorf("SourceUnavailableError around TransientError: Named gave %T, want the outer one", got)
	}
}

// A rewound checkpoint or one of another app_id is a spec change (ConfigError on
// "checkpoint"); a column bronze cannot hold is a ColumnsError however it arrives.
func TestNamedConverts(t *testing.T) {
	for _, e := range []error{&stream.CheckpointRewoundError{AppID: "a", Next: 1, FactsBatch: 4}, &checkpoint.AppIDMismatchError{Want: "a", Written: "b"}} {
		got := Named(fmt.Errorf("open: %w", e))
		var ce *config.ConfigError
		if !errors.As(got, &ce) || errorType(got) != "ConfigError" || !ce.Has("checkpoint") || !strings.Contains(got.Error(), e.Error()) {
			t.Errorf("%T: %T %v, want a ConfigError on checkpoint", e, got, got)
		}
	}
	bare := &bronze.UnsupportedTypeError{Column: "g", Type: "vector"}
	got := Named(fmt.Errorf("columns: %w", bare))
	var cols *bronze.ColumnsError
	if !errors.As(got, &cols) || errorType(got) != "ColumnsError" || len(cols.Problems) != 1 || cols.Problems[0] != bare {
		t.Errorf("bare UnsupportedTypeError: %T %v", got, got)
	}
	collision := &bronze.ColumnCollisionError{Column: "_seqval", With: "_seqval"}
	if got := Named(collision); errorType(got) != "ColumnsError" {
		t.Errorf("bare ColumnCollisionError: %T %v", got, got)
	}
	// Silver keys refused are a spec change too (silver.keys), and do not reach Step
	// Functions as snapshot's KeyError.
	ke := &silver.KeyError{Column: "idd", Reason: "not a captured column of bronze"}
	got = Named(fmt.Errorf("apply: %w", ke))
	var kce *config.ConfigError
	if !errors.As(got, &kce) || !kce.Has("silver.keys") || !strings.Contains(got.Error(), ke.Error()) {
		t.Errorf("silver.KeyError: %T %v, want a ConfigError on silver.keys", got, got)
	}
	// bronze's own check reports every problem in one ColumnsError, returned as is.
	_, err := bronze.Schema([]source.Column{{Name: "shape", DataType: "vector"}, {Name: "_seqval", DataType: "int"}})
	if got := Named(fmt.Errorf("schema: %w", err)); !errors.As(err, &cols) || got != error(cols) || len(cols.Problems) != 2 {
		t.Errorf("bronze.Schema's error: Named gave %T %v", got, got)
	}
}

// Whatever a handler meets, what it returns has a declared name: the issue-12 leaks
// (joinError, wrapError) and any error of a type nobody declared become UnexpectedError.
func TestEveryErrorGetsADeclaredName(t *testing.T) {
	if Named(nil) != nil {
		t.Fatal("Named(nil) must be nil")
	}
	for _, err := range []error{
		errors.New("boom"),
		fmt.Errorf("read spec: %w", os.ErrNotExist),
		errors.Join(errors.New("a"), errors.New("b")),
		context.Canceled,
		context.DeadlineExceeded,
		&bronze.RecordMismatchError{Column: "c"},
		&UnexpectedError{},
	} {
		got := Named(err)
		n, ok := Lookup(errorType(got))
		if !ok {
			t.Errorf("%T %q: named %q, which is not declared", err, err, errorType(got))
			continue
		}
		if n.Name != "UnexpectedError" || got.Error() != err.Error() || !errors.Is(got, err) {
			t.Errorf("%T %q: %s %q, want UnexpectedError with the same text wrapping it", err, err, n.Name, got)
		}
	}
	u := &UnexpectedError{Err: errors.New("x")}
	if Named(fmt.Errorf("again: %w", u)) != u {
		t.Error("an UnexpectedError must not be wrapped twice")
	}
}

// machines reads statemachine/*.asl.json.
func machines(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "statemachine", "*.asl.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no statemachine/*.asl.json: %v", err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = doc
	}
	return out
}

// tasks collects every Task state by name, inside Map and Parallel states too.
func tasks(states any, out map[string]map[string]any) {
	m, _ := states.(map[string]any)
	for name, s := range m {
		st, _ := s.(map[string]any)
		if st["Type"] == "Task" {
			out[name] = st
		}
		for _, key := range []string{"ItemProcessor", "Iterator"} {
			if p, ok := st[key].(map[string]any); ok {
				tasks(p["States"], out)
			}
		}
		if branches, ok := st["Branches"].([]any); ok {
			for _, b := range branches {
				if bm, ok := b.(map[string]any); ok {
					tasks(bm["States"], out)
				}
			}
		}
	}
}

// errorEquals returns every ErrorEquals list under key ("Retry" or "Catch") anywhere in v.
func errorEquals(v any, key string) [][]string {
	var out [][]string
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if k == key {
				for _, r := range child.([]any) {
					var names []string
					for _, n := range r.(map[string]any)["ErrorEquals"].([]any) {
						names = append(names, n.(string))
					}
					out = append(out, names)
				}
				continue
			}
			out = append(out, errorEquals(child, key)...)
		}
	case []any:
		for _, child := range x {
			out = append(out, errorEquals(child, key)...)
		}
	}
	return out
}

// Every ErrorEquals in statemachine/ is a declared name (a handler's or the service's):
// a misspelt or renamed type would silently stop being retried or caught.
func TestMachinesMatchOnlyDeclaredNames(t *testing.T) {
	n := 0
	for file, doc := range machines(t) {
		for _, key := range []string{"Retry", "Catch"} {
			for _, names := range errorEquals(doc, key) {
				for _, name := range names {
					n++
					if _, ok := Lookup(name); !ok && !slices.Contains(ServiceNames, name) {
						t.Errorf("%s: %s matches %q, which is not declared in functions/lambdaerr", file, key, name)
					}
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("found %d ErrorEquals names: the machines' shape changed?", n)
	}
}

// taskFunction is the function a Task's Resource placeholder names.
var taskFunction = regexp.MustCompile(`^\$\{([a-z_]+)_function_arn\}$`)

// Each Task retries the transient names its function returns, and no other handler name:
// a retried ConfigError would only fail again later.
func TestTasksRetryExactlyTheTransientNames(t *testing.T) {
	fns := map[string]Function{"snapshot": Snapshot, "stream": Stream, "seed": Seed, "backfill_wave": BackfillWave}
	for file, doc := range machines(t) {
		ts := map[string]map[string]any{}
		tasks(doc["States"], ts)
		for name, st := range ts {
			if st["Resource"] == "arn:aws:states:::states:startExecution" {
				continue // Step Functions' own API (a machine restarting itself), no handler of ours
			}
			m := taskFunction.FindStringSubmatch(fmt.Sprint(st["Resource"]))
			if m == nil || fns[m[1]] == 0 {
				t.Errorf("%s: Task %s calls %v, not a function this package knows", file, name, st["Resource"])
				continue
			}
			var retried []string
			for _, names := range errorEquals(map[string]any{"Retry": st["Retry"]}, "Retry") {
				retried = append(retried, names...)
			}
			for _, d := range Declared() {
				if d.Retry && d.Functions.Has(fns[m[1]]) && !slices.Contains(retried, d.Name) {
					t.Errorf("%s: Task %s (%s) does not retry %s", file, name, m[1], d.Name)
				}
				if !d.Retry && slices.Contains(retried, d.Name) {
					t.Errorf("%s: Task %s retries %s, which needs a change, not a retry", file, name, d.Name)
				}
			}
		}
	}
}

// docs/handlers.md names, in each function's section, every name that function returns,
// and names no other handler error.
func TestHandlersDocNamesEveryDeclaredName(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "handlers.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(data), "## Local-only errors")
	sections := map[Function]string{}
	titles := map[Function]string{Snapshot: "snapshot", Stream: "stream", Maintain: "maintain", Apply: "apply", Seed: "seed", BackfillWave: "backfill-wave", Reconcile: "reconcile"}
	for _, s := range strings.Split(doc, "\n## ")[1:] {
		for f, title := range titles {
			if strings.HasPrefix(s, title+" ") {
				sections[f] = s
			}
		}
	}
	if len(sections) != len(titles) {
		t.Fatalf("docs/handlers.md: want a \"## snapshot\", a \"## stream\", a \"## maintain\", an \"## apply\", a \"## seed\", a \"## backfill-wave\" and a \"## reconcile\" section, found %d", len(sections))
	}
	for _, d := range Declared() {
		for f, s := range sections {
			if d.Functions.Has(f) && !strings.Contains(s, "`"+d.Name+"`") {
				t.Errorf("docs/handlers.md: the %s section does not name %s", titles[f], d.Name)
			}
		}
	}
	for _, m := range regexp.MustCompile("`([A-Z][A-Za-z]*Error)`").FindAllStringSubmatch(doc, -1) {
		if _, ok := Lookup(m[1]); !ok {
			t.Errorf("docs/handlers.md names %s, which no handler returns (declare it, or list it under Local-only errors)", m[1])
		}
	}
}

// EventDecodeReason says which field of an event is of the wrong type in the event's
// own terms, without Go's type names (the handlers' events decode through a local type
// named plain, which json's message repeated).
func TestEventDecodeReason(t *testing.T) {
	var ev struct {
		MaxSeconds *float64 `json:"max_seconds"`
		Tables     []string `json:"tables"`
		DryRun     bool     `json:"dry_run"`
	}
	for doc, want := range map[string]string{
		`{"max_seconds": "x"}`: "max_seconds: got a string, want a number",
		`{"tables": "bronze"}`: "tables: got a string, want an array of strings",
		`{"dry_run": 1}`:       "dry_run: got a number, want true or false",
		`[1]`:                  "got an array, want a JSON object",
		`{"dry_run": tru}`:     "not JSON: invalid character",
	} {
		err := json.Unmarshal([]byte(doc), &ev)
		got := EventDecodeReason(err)
		if !strings.HasPrefix(got, want) || strings.Contains(got, "Go ") || strings.Contains(got, "float64") {
			t.Errorf("%s: %q, want %q", doc, got, want)
		}
	}
}

// OverrideError makes a spec problem on an event's overrides the event's: one field as
// the EventError's Field, several joined, the hint last; a problem on a field the event
// did not set stays the spec's ConfigError, and an error of another type keeps its name.
func TestOverrideError(t *testing.T) {
	ce := &config.ConfigError{Problems: []config.Problem{{Field: "bronze", Reason: "empty"}, {Field: "chunk_rows", Reason: "0: want >= 1"},
		{Field: "max_waves", Reason: "-1: want >= 0"}}}
	for _, c := range []struct {
		fields []string
		hint   string
		want   string
	}{
		{[]string{"chunk_rows"}, "", "f event: chunk_rows: 0: want >= 1"},
		{[]string{"max_waves", "chunk_rows", "isolation"}, "fix it", "f event: chunk_rows: 0: want >= 1; max_waves: -1: want >= 0; fix it"},
	} {
		err := OverrideError("f", ce, c.hint, c.fields...)
		var ev *EventError
		if !errors.As(err, &ev) || err.Error() != c.want {
			t.Errorf("%v: %T %v, want an EventError %q", c.fields, err, err, c.want)
		}
	}
	if err := OverrideError("f", ce, "", "isolation"); err != ce {
		t.Errorf("no problem on the event's fields: %T %v, want the spec's ConfigError", err, err)
	}
	if err := OverrideError("f", fmt.Errorf("x: %w", &source.TransientError{}), "", "chunk_rows"); reflect.TypeOf(err) != reflect.TypeOf(&source.TransientError{}) {
		t.Errorf("another error: %T, want its own name", err)
	}
}
