package terraform_test

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// The part of Terraform's expression language the module's variables, validations and
// plan-time locals use: Terraform's own functions come from cty's stdlib and hcl's tryfunc,
// as in Terraform; the few Terraform writes itself (alltrue, startswith, length, replace,
// toset) are re-implemented here from their documentation. A function missing here fails
// the evaluation, and so the test, rather than passing silently.
var tfFunctions = map[string]function.Function{
	"alltrue":      boolFold(true),
	"anytrue":      boolFold(false),
	"can":          tryfunc.CanFunc,
	"try":          tryfunc.TryFunc,
	"coalesce":     stdlib.CoalesceFunc,
	"compact":      stdlib.CompactFunc,
	"concat":       stdlib.ConcatFunc,
	"contains":     stdlib.ContainsFunc,
	"distinct":     stdlib.DistinctFunc,
	"flatten":      stdlib.FlattenFunc,
	"floor":        stdlib.FloorFunc,
	"join":         stdlib.JoinFunc,
	"jsondecode":   stdlib.JSONDecodeFunc,
	"jsonencode":   stdlib.JSONEncodeFunc,
	"keys":         stdlib.KeysFunc,
	"length":       lengthFunc,
	"lookup":       stdlib.LookupFunc,
	"max":          stdlib.MaxFunc,
	"min":          stdlib.MinFunc,
	"merge":        stdlib.MergeFunc,
	"nonsensitive": identityFunc,
	"regex":        stdlib.RegexFunc,
	"regexall":     stdlib.RegexAllFunc,
	"replace":      replaceFunc,
	"setproduct":   stdlib.SetProductFunc,
	"split":        stdlib.SplitFunc,
	"startswith":   stringPredicate(strings.HasPrefix),
	"strcontains":  stringPredicate(strings.Contains),
	"substr":       stdlib.SubstrFunc,
	"toset":        tosetFunc,
	"trim":         stdlib.TrimFunc,
	"trimsuffix":   stdlib.TrimSuffixFunc,
	"values":       stdlib.ValuesFunc,
}

func boolFold(all bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			for it := args[0].ElementIterator(); it.Next(); {
				_, v := it.Element()
				if v.IsNull() {
					v = cty.False
				}
				if v.True() != all {
					return cty.BoolVal(!all), nil
				}
			}
			return cty.BoolVal(all), nil
		},
	})
}

func stringPredicate(f func(s, sub string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "sub", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(f(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

var identityFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowNull: true}},
	Type:   func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil },
	Impl:   func(args []cty.Value, _ cty.Type) (cty.Value, error) { return args[0], nil },
})

var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v := args[0]
		switch {
		case v.Type() == cty.String:
			return cty.NumberIntVal(int64(utf8.RuneCountInString(v.AsString()))), nil
		case v.CanIterateElements():
			return v.Length(), nil
		}
		return cty.NilVal, fmt.Errorf("length of %s", v.Type().FriendlyName())
	},
})

// replaceFunc is Terraform's replace: a search string wrapped in slashes is a regex.
var replaceFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "substr", Type: cty.String}, {Name: "replace", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		sub := args[1].AsString()
		if len(sub) > 1 && strings.HasPrefix(sub, "/") && strings.HasSuffix(sub, "/") {
			return stdlib.RegexReplace(args[0], cty.StringVal(sub[1:len(sub)-1]), args[2])
		}
		return stdlib.Replace(args[0], args[1], args[2])
	},
})

var tosetFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType}},
	Type: func(args []cty.Value) (cty.Type, error) {
		v, err := convert.Convert(args[0], cty.Set(cty.DynamicPseudoType))
		if err != nil {
			return cty.NilType, err
		}
		return v.Type(), nil
	},
	Impl: func(args []cty.Value, ty cty.Type) (cty.Value, error) {
		return convert.Convert(args[0], ty)
	},
})

// inputValue converts a value for variable b as Terraform does for a module input: the
// type's optional-attribute defaults first, then conversion to the type constraint; a null
// value takes the variable's default.
func inputValue(t *testing.T, b *hclsyntax.Block, v cty.Value) cty.Value {
	t.Helper()
	if v.IsNull() {
		if d, ok := b.Body.Attributes["default"]; ok {
			var diags hcl.Diagnostics
			if v, diags = d.Expr.Value(nil); diags.HasErrors() {
				t.Fatalf("default of %s: %s", b.Labels[0], diags.Error())
			}
		}
	}
	ty, defaults := cty.DynamicPseudoType, (*typeexpr.Defaults)(nil)
	if a, ok := b.Body.Attributes["type"]; ok {
		var diags hcl.Diagnostics
		if ty, defaults, diags = typeexpr.TypeConstraintWithDefaults(a.Expr); diags.HasErrors() {
			t.Fatalf("type of %s: %s", b.Labels[0], diags.Error())
		}
	}
	if defaults != nil && !v.IsNull() {
		v = defaults.Apply(v)
	}
	out, err := convert.Convert(v, ty)
	if err != nil {
		t.Fatalf("variable %s: %v", b.Labels[0], err)
	}
	return out
}

// evaluator evaluates a module's plan-time expressions: var.* from given inputs, local.*
// computed on demand from other locals and variables.
type evaluator struct {
	t      *testing.T
	m      *tfModule
	vars   map[string]cty.Value
	extra  map[string]cty.Value // other roots, e.g. each and module in a root module
	locals map[string]cty.Value
	busy   map[string]bool
}

// newEvaluator takes the module's inputs by name; unset variables take their defaults.
func newEvaluator(t *testing.T, m *tfModule, inputs map[string]cty.Value) *evaluator {
	t.Helper()
	e := &evaluator{t: t, m: m, vars: map[string]cty.Value{}, extra: map[string]cty.Value{}, locals: map[string]cty.Value{}, busy: map[string]bool{}}
	for name, b := range m.variables {
		v, ok := inputs[name]
		if !ok {
			v = cty.NullVal(cty.DynamicPseudoType)
		}
		e.vars[name] = inputValue(t, b, v)
	}
	for name := range inputs {
		if m.variables[name] == nil {
			t.Fatalf("%s declares no variable %q", m.dir, name)
		}
	}
	return e
}

// eval evaluates expr, first computing the locals it refers to.
func (e *evaluator) eval(expr hclsyntax.Expression) (cty.Value, hcl.Diagnostics) {
	for _, r := range refs(expr) {
		if r.root == "local" {
			e.local(r.attr(0))
		}
	}
	vars := map[string]cty.Value{"var": cty.ObjectVal(e.vars), "local": cty.ObjectVal(e.locals)}
	for k, v := range e.extra {
		vars[k] = v
	}
	return expr.Value(&hcl.EvalContext{Variables: vars, Functions: tfFunctions})
}

// local returns local.name, failing the test when it cannot be computed at plan time here
// (it depends on a resource, a data source or the file system).
func (e *evaluator) local(name string) cty.Value {
	e.t.Helper()
	if v, ok := e.locals[name]; ok {
		return v
	}
	a := e.m.locals[name]
	if a == nil {
		e.t.Fatalf("no local %q", name)
	}
	if e.busy[name] {
		e.t.Fatalf("local %q refers to itself", name)
	}
	e.busy[name] = true
	v, diags := e.eval(a.Expr)
	if diags.HasErrors() {
		e.t.Fatalf("local.%s: %s", name, diags.Error())
	}
	e.locals[name] = v
	return v
}

// failedValidations evaluates every validation block of variable name and returns the
// error messages of those whose condition is false.
func (e *evaluator) failedValidations(name string) []string {
	e.t.Helper()
	var failed []string
	for _, b := range e.m.variables[name].Body.Blocks {
		if b.Type != "validation" {
			continue
		}
		ok, diags := e.eval(b.Body.Attributes["condition"].Expr)
		if diags.HasErrors() {
			e.t.Fatalf("validation of %s at %s: %s", name, b.Range(), diags.Error())
		}
		if ok.Type() != cty.Bool || ok.IsNull() {
			e.t.Fatalf("validation of %s at %s: condition is %#v, not a bool", name, b.Range(), ok)
		}
		if ok.False() {
			msg, _ := b.Body.Attributes["error_message"].Expr.Value(nil)
			failed = append(failed, msg.AsString())
		}
	}
	return failed
}

// fileFuncs are Terraform's file, filebase64sha256 and fileexists, resolving relative paths against the
// working directory as Terraform does.
var fileFuncs = map[string]function.Function{
	"file": function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(args[0].AsString())
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(string(b)), nil
		},
	}),
	"filebase64sha256": function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(args[0].AsString())
			if err != nil {
				return cty.NilVal, err
			}
			sum := sha256.Sum256(b)
			return cty.StringVal(base64.StdEncoding.EncodeToString(sum[:])), nil
		},
	}),
	"fileexists": function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			st, err := os.Stat(args[0].AsString())
			return cty.BoolVal(err == nil && st.Mode().IsRegular()), nil
		},
	}),
}

func init() {
	for k, f := range fileFuncs {
		tfFunctions[k] = f
	}
}

// withAWS sets what the module reads from data sources and path.module, as a plan in
// account 123456789012, region eu-west-1, would see them from this directory.
func (e *evaluator) withAWS() *evaluator {
	obj := func(kv ...string) cty.Value {
		m := map[string]cty.Value{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = cty.StringVal(kv[i+1])
		}
		return cty.ObjectVal(m)
	}
	current := func(v cty.Value) cty.Value { return cty.ObjectVal(map[string]cty.Value{"current": v}) }
	e.extra["data"] = cty.ObjectVal(map[string]cty.Value{
		"aws_partition":       current(obj("partition", "aws")),
		"aws_region":          current(obj("id", "eu-west-1")),
		"aws_caller_identity": current(obj("account_id", "123456789012")),
	})
	e.extra["path"] = obj("module", e.m.dir)
	return e
}

// failedPreconditions evaluates the preconditions of resource ("aws_lambda_function.this")
// for one instance and returns the error messages of those whose condition is false.
func (e *evaluator) failedPreconditions(resource string, eachKey string, eachValue cty.Value) []string {
	e.t.Helper()
	b := e.m.resources[resource]
	if b == nil {
		e.t.Fatalf("no resource %s", resource)
	}
	e.extra["each"] = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(eachKey), "value": eachValue})
	defer delete(e.extra, "each")
	var failed []string
	n := 0
	for _, lc := range b.Body.Blocks {
		if lc.Type != "lifecycle" {
			continue
		}
		for _, pc := range lc.Body.Blocks {
			if pc.Type != "precondition" {
				continue
			}
			n++
			ok, diags := e.eval(pc.Body.Attributes["condition"].Expr)
			if diags.HasErrors() {
				e.t.Fatalf("precondition of %s at %s: %s", resource, pc.Range(), diags.Error())
			}
			if ok.False() {
				msg, diags := e.eval(pc.Body.Attributes["error_message"].Expr)
				if diags.HasErrors() {
					e.t.Fatalf("precondition message of %s at %s: %s", resource, pc.Range(), diags.Error())
				}
				failed = append(failed, msg.AsString())
			}
		}
	}
	if n == 0 {
		e.t.Fatalf("%s has no preconditions", resource)
	}
	return failed
}
