// Package terraform_test checks the Terraform under infra/terraform without a terraform
// binary: every file parses with the HCL parser Terraform uses, every reference resolves
// inside its module, module calls pass only declared variables, the spec variable matches
// core/config's JSON document, and every statemachine/*.asl.json placeholder is filled by
// the module's templatefile() call (rendered here the way templatefile renders it).
package terraform_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mssqlcdc/mssqlcdc/core/config"
)

const (
	repoRoot    = "../.."
	tableModule = "modules/mssqlcdc-table"
)

// Roots a Terraform expression may start with besides resource types and iterators.
var knownRoots = map[string]bool{
	"var": true, "local": true, "data": true, "module": true, "path": true,
	"terraform": true, "count": true, "each": true, "self": true,
}

func TestReferencesResolve(t *testing.T) {
	dirs := terraformDirs(t)
	for _, want := range []string{tableModule, "modules/mssqlcdc-shared", "examples/basic"} {
		if !slices.Contains(dirs, want) {
			t.Errorf("no Terraform in %s (found %v)", want, dirs)
		}
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			m := loadModule(t, dir)
			for _, r := range m.allRefs() {
				checkRef(t, m, r)
			}
		})
	}
}

func checkRef(t *testing.T, m *tfModule, r ref) {
	t.Helper()
	switch r.root {
	case "var":
		if m.variables[r.attr(0)] == nil {
			t.Errorf("%s: no variable %q in %s", r, r.attr(0), m.dir)
		}
	case "local":
		if m.locals[r.attr(0)] == nil {
			t.Errorf("%s: no local %q in %s", r, r.attr(0), m.dir)
		}
	case "data":
		if m.data[r.attr(0)+"."+r.attr(1)] == nil {
			t.Errorf("%s: no data source %s.%s in %s", r, r.attr(0), r.attr(1), m.dir)
		}
	case "module":
		call := m.modules[r.attr(0)]
		if call == nil {
			t.Errorf("%s: no module %q in %s", r, r.attr(0), m.dir)
			return
		}
		if out := r.attr(1); out != "" {
			if called := loadCalled(t, m, call); called != nil && called.outputs[out] == nil {
				t.Errorf("%s: module %q has no output %q", r, r.attr(0), out)
			}
		}
	default:
		if strings.HasPrefix(r.root, "aws_") && m.resources[r.root+"."+r.attr(0)] == nil {
			t.Errorf("%s: no resource %s.%s in %s", r, r.root, r.attr(0), m.dir)
		}
	}
}

// loadCalled parses the module a module block calls (local sources only).
func loadCalled(t *testing.T, m *tfModule, call *hclsyntax.Block) *tfModule {
	t.Helper()
	src, ok := call.Body.Attributes["source"]
	if !ok {
		t.Errorf("%s: module without source", call.Range())
		return nil
	}
	v, diags := src.Expr.Value(nil)
	if diags.HasErrors() || v.Type() != cty.String {
		t.Errorf("%s: source is not a literal string", src.SrcRange)
		return nil
	}
	if !strings.HasPrefix(v.AsString(), "./") && !strings.HasPrefix(v.AsString(), "../") {
		return nil
	}
	return loadModule(t, filepath.Join(m.dir, v.AsString()))
}

func TestModuleCallsMatchVariables(t *testing.T) {
	meta := map[string]bool{"source": true, "version": true, "for_each": true, "count": true, "providers": true, "depends_on": true}
	calls := 0
	for _, dir := range terraformDirs(t) {
		m := loadModule(t, dir)
		for name, call := range m.modules {
			called := loadCalled(t, m, call)
			if called == nil {
				continue
			}
			calls++
			for arg, a := range call.Body.Attributes {
				if !meta[arg] && called.variables[arg] == nil {
					t.Errorf("%s: module %q passes %q, which %s does not declare", a.SrcRange, name, arg, called.dir)
				}
			}
			for v, b := range called.variables {
				if _, hasDefault := b.Body.Attributes["default"]; !hasDefault && call.Body.Attributes[v] == nil {
					t.Errorf("%s: module %q does not pass required variable %q", call.Range(), name, v)
				}
			}
		}
	}
	if calls < 2 {
		t.Errorf("found %d local module calls, want the example's calls of both modules", calls)
	}
}

// Terraform before 1.9 accepts validation conditions that refer only to the variable being
// validated; versions.tf allows 1.5.
func TestValidationsReferOnlyToTheirVariable(t *testing.T) {
	for _, dir := range terraformDirs(t) {
		m := loadModule(t, dir)
		for name, b := range m.variables {
			if _, ok := b.Body.Attributes["description"]; !ok {
				t.Errorf("%s: variable %q has no description", b.Range(), name)
			}
			for _, v := range b.Body.Blocks {
				if v.Type != "validation" {
					continue
				}
				for _, r := range refs(v.Body) {
					if knownRoots[r.root] && (r.root != "var" || r.attr(0) != name) {
						t.Errorf("%s: validation of %q refers to %s.%s", r.rng, name, r.root, r.attr(0))
					}
				}
			}
		}
		for name, b := range m.outputs {
			if _, ok := b.Body.Attributes["description"]; !ok {
				t.Errorf("%s: output %q has no description", b.Range(), name)
			}
		}
	}
}

func TestVersionsPinned(t *testing.T) {
	for _, dir := range terraformDirs(t) {
		src, err := os.ReadFile(filepath.Join(dir, "versions.tf"))
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		// 5.32: aws_lambda_function.logging_config; below 7: the majors tested against.
		for _, want := range []string{`required_version = ">= 1.5"`, `source  = "hashicorp/aws"`, `version = ">= 5.32, < 7"`} {
			if !strings.Contains(string(src), want) {
				t.Errorf("%s/versions.tf lacks %s", dir, want)
			}
		}
		// Provider 6 deprecates data.aws_region's name; id is the region in both majors.
		for _, r := range loadModule(t, dir).allRefs() {
			if r.root == "data" && r.attr(0) == "aws_region" && r.attr(2) != "id" {
				t.Errorf("%s: read data.aws_region.%s.id, not .%s", r, r.attr(1), r.attr(2))
			}
		}
	}
}

var placeholderRE = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// TestStateMachinePlaceholdersFilled renders every statemachine/*.asl.json as templatefile()
// does (an HCL template whose variables are exactly the vars object) with the variables
// the module passes, and checks the result is JSON whose Task resources are the ARNs.
func TestStateMachinePlaceholdersFilled(t *testing.T) {
	m := loadModule(t, tableModule)

	var calls []*hclsyntax.FunctionCallExpr
	for _, body := range m.files {
		hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
			if c, ok := n.(*hclsyntax.FunctionCallExpr); ok && c.Name == "templatefile" {
				calls = append(calls, c)
			}
			return nil
		})
	}
	if len(calls) != 1 || len(calls[0].Args) != 2 {
		t.Fatalf("want one templatefile(path, vars) call in %s, found %d", tableModule, len(calls))
	}
	if !refersTo(calls[0].Args[1], "local", "machine_template_vars") {
		t.Fatalf("%s: templatefile vars are not local.machine_template_vars", calls[0].Args[1].Range())
	}
	if !refersTo(m.locals["machine_template_vars"].Expr, "local", "machine_functions") {
		t.Fatalf("local.machine_template_vars is not built from local.machine_functions")
	}
	fnOf := map[string]string{}
	for placeholder, e := range objectKeys(t, m.locals["machine_functions"].Expr) {
		v, diags := e.Value(nil)
		if diags.HasErrors() || v.Type() != cty.String {
			t.Fatalf("%s: machine_functions values must be function names", e.Range())
		}
		fnOf[placeholder] = v.AsString()
		if want := strings.ReplaceAll(v.AsString(), "-", "_") + "_function_arn"; placeholder != want {
			t.Errorf("machine_functions: %s = %q, want the key %s", placeholder, v.AsString(), want)
		}
	}

	defs, err := filepath.Glob(filepath.Join(repoRoot, "statemachine", "*.asl.json"))
	if err != nil || len(defs) == 0 {
		t.Fatalf("no statemachine/*.asl.json (%v)", err)
	}
	vars := map[string]cty.Value{}
	for placeholder, fn := range fnOf {
		vars[placeholder] = cty.StringVal("arn:aws:lambda:eu-west-1:123456789012:function:t-" + fn)
	}
	for _, def := range defs {
		src, err := os.ReadFile(def)
		if err != nil {
			t.Fatal(err)
		}
		for _, sm := range placeholderRE.FindAllStringSubmatch(string(src), -1) {
			fn, ok := fnOf[sm[1]]
			if !ok {
				t.Errorf("%s: placeholder ${%s} is not in the module's local.machine_functions", def, sm[1])
				continue
			}
			if _, err := os.Stat(filepath.Join(repoRoot, "functions", fn, "lambda", "main.go")); err != nil {
				t.Errorf("%s: ${%s} calls functions/%s, which does not exist", def, sm[1], fn)
			}
		}
		rendered := renderTemplate(t, def, src, vars)
		var doc map[string]any
		if err := json.Unmarshal([]byte(rendered), &doc); err != nil {
			t.Errorf("%s rendered is not JSON: %v", def, err)
			continue
		}
		resources := taskResources(doc["States"])
		if len(resources) == 0 {
			t.Errorf("%s: no Task states", def)
		}
		for _, r := range resources {
			if r != startExecutionARN && !strings.HasPrefix(r, "arn:aws:lambda:eu-west-1:123456789012:function:t-") {
				t.Errorf("%s: rendered Task resource %q is not a function ARN", def, r)
			}
		}
	}
}

// renderTemplate evaluates src as Terraform's templatefile() does.
func renderTemplate(t *testing.T, name string, src []byte, vars map[string]cty.Value) string {
	t.Helper()
	tmpl, diags := hclsyntax.ParseTemplate(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s is not a valid template: %s", name, diags.Error())
	}
	out, diags := tmpl.Value(&hcl.EvalContext{Variables: vars})
	if diags.HasErrors() {
		t.Fatalf("render %s: %s", name, diags.Error())
	}
	return out.AsString()
}

// taskResources collects the Resource of every Task, including those inside Map and
// Parallel states.
func taskResources(states any) []string {
	var out []string
	m, _ := states.(map[string]any)
	for _, s := range m {
		st, _ := s.(map[string]any)
		if st["Type"] == "Task" {
			r, _ := st["Resource"].(string)
			out = append(out, r)
		}
		for _, key := range []string{"ItemProcessor", "Iterator"} {
			if p, ok := st[key].(map[string]any); ok {
				out = append(out, taskResources(p["States"])...)
			}
		}
		if branches, ok := st["Branches"].([]any); ok {
			for _, b := range branches {
				if bm, ok := b.(map[string]any); ok {
					out = append(out, taskResources(bm["States"])...)
				}
			}
		}
	}
	return out
}

func refersTo(expr hclsyntax.Expression, root, attr string) bool {
	for _, r := range refs(expr) {
		if r.root == root && r.attr(0) == attr {
			return true
		}
	}
	return false
}

// TestDefaultsDeployTheDefaultMachines: with the module's defaults, every function the
// default state machines call is deployed, and each has per-function defaults.
func TestDefaultsDeployTheDefaultMachines(t *testing.T) {
	m := loadModule(t, tableModule)
	fnDefaults, diags := m.locals["function_defaults"].Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("local.function_defaults is not a literal: %s", diags.Error())
	}
	functions := literalDefault(t, m, "functions")
	machines := literalDefault(t, m, "state_machines")

	for it := functions.ElementIterator(); it.Next(); {
		k, _ := it.Element()
		if !fnDefaults.Type().HasAttribute(k.AsString()) {
			t.Errorf("default function %q has no entry in local.function_defaults", k.AsString())
		}
	}
	for it := machines.ElementIterator(); it.Next(); {
		_, name := it.Element()
		src, err := os.ReadFile(filepath.Join(repoRoot, "statemachine", name.AsString()+".asl.json"))
		if err != nil {
			t.Errorf("default state machine %q: %v", name.AsString(), err)
			continue
		}
		for _, sm := range placeholderRE.FindAllStringSubmatch(string(src), -1) {
			fn := strings.ReplaceAll(strings.TrimSuffix(sm[1], "_function_arn"), "_", "-")
			if !functions.Type().HasAttribute(fn) {
				t.Errorf("default state machine %q calls %s, which the default functions do not deploy", name.AsString(), fn)
			}
		}
	}

	stream := fnDefaults.GetAttr("stream")
	timeout, _ := stream.GetAttr("timeout").AsBigFloat().Int64()
	if timeout <= 60 || timeout > 600 {
		t.Errorf("stream default timeout %d s: want well under Lambda's 900 s and above the 30 s margin", timeout)
	}
	for it := fnDefaults.ElementIterator(); it.Next(); {
		name, f := it.Element()
		sec, _ := f.GetAttr("timeout").AsBigFloat().Int64()
		mem, _ := f.GetAttr("memory_size").AsBigFloat().Int64()
		if sec < 60 || sec > 900 || mem < 128 || mem > 10240 {
			t.Errorf("function_defaults.%s: timeout %d s, memory %d MB outside Lambda's limits", name.AsString(), sec, mem)
		}
	}
}

func literalDefault(t *testing.T, m *tfModule, variable string) cty.Value {
	t.Helper()
	b := m.variables[variable]
	if b == nil || b.Body.Attributes["default"] == nil {
		t.Fatalf("variable %q has no default", variable)
	}
	v, diags := b.Body.Attributes["default"].Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("default of %q is not a literal: %s", variable, diags.Error())
	}
	return v
}

// TestSpecVariableMatchesConfig: the spec variable's attributes are exactly core/config's
// JSON field names, level by level. config.Parse refuses unknown fields, so a misspelt
// attribute would only fail when a function starts; a missing one would hide an option.
func TestSpecVariableMatchesConfig(t *testing.T) {
	m := loadModule(t, tableModule)
	spec := m.variables["spec"]
	if spec == nil || spec.Body.Attributes["type"] == nil {
		t.Fatal("no typed variable \"spec\"")
	}
	compareFields(t, "spec", typeAttrs(t, spec.Body.Attributes["type"].Expr), reflect.TypeOf(config.Spec{}))
}

func compareFields(t *testing.T, path string, attrs map[string]hclsyntax.Expression, typ reflect.Type) {
	t.Helper()
	fields := map[string]reflect.Type{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fields[name] = f.Type
	}
	for name, expr := range attrs {
		ft, ok := fields[name]
		if !ok {
			t.Errorf("%s.%s: core/config has no JSON field %q (config.Parse would refuse it)", path, name, name)
			continue
		}
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			ft = ft.Elem() // an optional section (silver)
		}
		if ft.Kind() == reflect.Struct {
			if !isObjectType(expr) {
				t.Errorf("%s.%s: want an object type for %s", path, name, ft)
				continue
			}
			compareFields(t, path+"."+name, typeAttrs(t, expr), ft)
		}
	}
	for name := range fields {
		if _, ok := attrs[name]; !ok {
			t.Errorf("%s.%s: core/config field missing from the Terraform type", path, name)
		}
	}
}
