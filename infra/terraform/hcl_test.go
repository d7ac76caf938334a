package terraform_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// tfModule is what the tests need of one Terraform module directory, read with the HCL
// parser Terraform itself uses (no terraform binary is needed).
type tfModule struct {
	dir       string
	files     map[string]*hclsyntax.Body
	variables map[string]*hclsyntax.Block
	locals    map[string]*hclsyntax.Attribute
	outputs   map[string]*hclsyntax.Block
	resources map[string]*hclsyntax.Block // "aws_lambda_function.this"
	data      map[string]*hclsyntax.Block // "aws_region.current"
	modules   map[string]*hclsyntax.Block
}

// loadModule parses every .tf file of dir and fails the test on any syntax error.
func loadModule(t *testing.T, dir string) *tfModule {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("%s: no .tf files", dir)
	}
	m := &tfModule{
		dir:       dir,
		files:     map[string]*hclsyntax.Body{},
		variables: map[string]*hclsyntax.Block{},
		locals:    map[string]*hclsyntax.Attribute{},
		outputs:   map[string]*hclsyntax.Block{},
		resources: map[string]*hclsyntax.Block{},
		data:      map[string]*hclsyntax.Block{},
		modules:   map[string]*hclsyntax.Block{},
	}
	p := hclparse.NewParser()
	for _, path := range paths {
		f, diags := p.ParseHCLFile(path)
		if diags.HasErrors() {
			t.Errorf("%s", diags.Error())
			continue
		}
		body := f.Body.(*hclsyntax.Body)
		m.files[path] = body
		for _, b := range body.Blocks {
			m.declare(t, path, b)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return m
}

func (m *tfModule) declare(t *testing.T, path string, b *hclsyntax.Block) {
	t.Helper()
	put := func(into map[string]*hclsyntax.Block, key string) {
		if _, dup := into[key]; dup {
			t.Errorf("%s: %s %q declared twice", path, b.Type, key)
		}
		into[key] = b
	}
	switch b.Type {
	case "variable":
		put(m.variables, b.Labels[0])
	case "output":
		put(m.outputs, b.Labels[0])
	case "resource":
		put(m.resources, b.Labels[0]+"."+b.Labels[1])
	case "data":
		put(m.data, b.Labels[0]+"."+b.Labels[1])
	case "module":
		put(m.modules, b.Labels[0])
	case "locals":
		for name, a := range b.Body.Attributes {
			if _, dup := m.locals[name]; dup {
				t.Errorf("%s: local %q declared twice", path, name)
			}
			m.locals[name] = a
		}
	case "terraform", "provider":
	default:
		t.Errorf("%s: unexpected top-level block %q", path, b.Type)
	}
}

// ref is one reference found in an expression, such as var.name or
// data.aws_region.current.name.
type ref struct {
	root  string   // "var", "local", "data", "module", "aws_iam_role", an iterator name, ...
	attrs []string // the attribute names after the root, up to the first index or splat
	rng   hcl.Range
}

// attr is the i-th attribute name after the root, or "".
func (r ref) attr(i int) string {
	if i < len(r.attrs) {
		return r.attrs[i]
	}
	return ""
}

func (r ref) String() string {
	return r.rng.String() + ": " + strings.Join(append([]string{r.root}, r.attrs...), ".")
}

// refs returns every scope traversal under node (attributes, nested blocks, templates,
// for expressions).
func refs(node hclsyntax.Node) []ref {
	var out []ref
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		st, ok := n.(*hclsyntax.ScopeTraversalExpr)
		if !ok {
			return nil
		}
		r := ref{root: st.Traversal.RootName(), rng: st.SrcRange}
		for _, step := range st.Traversal[1:] {
			a, ok := step.(hcl.TraverseAttr)
			if !ok {
				break
			}
			r.attrs = append(r.attrs, a.Name)
		}
		out = append(out, r)
		return nil
	})
	return out
}

// allRefs is refs over every file of the module.
func (m *tfModule) allRefs() []ref {
	var out []ref
	for _, path := range sortedKeys(m.files) {
		out = append(out, refs(m.files[path])...)
	}
	return out
}

// objectKeys returns the literal keys of an object constructor expression { a = ..., b = ... }.
func objectKeys(t *testing.T, expr hclsyntax.Expression) map[string]hclsyntax.Expression {
	t.Helper()
	obj, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		t.Fatalf("%s: want an object constructor, have %T", expr.Range(), expr)
	}
	out := map[string]hclsyntax.Expression{}
	for _, item := range obj.Items {
		key := hcl.ExprAsKeyword(item.KeyExpr)
		if key == "" {
			// A quoted key such as "backfill-wave" = ...
			v, diags := item.KeyExpr.Value(nil)
			if diags.HasErrors() || v.Type() != cty.String || v.IsNull() {
				t.Fatalf("%s: object key is not a literal", item.KeyExpr.Range())
			}
			key = v.AsString()
		}
		out[key] = item.ValueExpr
	}
	return out
}

// typeAttrs returns the attributes of a Terraform type expression object({...}), looking
// through optional(T) and optional(T, default).
func typeAttrs(t *testing.T, expr hclsyntax.Expression) map[string]hclsyntax.Expression {
	t.Helper()
	expr = unwrapOptional(expr)
	call, ok := expr.(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "object" || len(call.Args) != 1 {
		t.Fatalf("%s: want object({...})", expr.Range())
	}
	return objectKeys(t, call.Args[0])
}

func unwrapOptional(expr hclsyntax.Expression) hclsyntax.Expression {
	if call, ok := expr.(*hclsyntax.FunctionCallExpr); ok && call.Name == "optional" && len(call.Args) >= 1 {
		return call.Args[0]
	}
	return expr
}

// isObjectType reports whether a type expression is object({...}) or optional(object(...)).
func isObjectType(expr hclsyntax.Expression) bool {
	call, ok := unwrapOptional(expr).(*hclsyntax.FunctionCallExpr)
	return ok && call.Name == "object"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// localStackRoot is the Terraform root localstack/deploy.sh applies to LocalStack.
const localStackRoot = "../../localstack/deploy"

// terraformDirs lists every directory of the repository holding .tf files: this
// directory's modules and example, and the LocalStack root.
func terraformDirs(t *testing.T) []string {
	t.Helper()
	return append(moduleDirs(t, "."), localStackRoot)
}

// moduleDirs lists every directory under root holding .tf files.
func moduleDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir // .terraform/ of a local init
		}
		if !d.IsDir() && strings.HasSuffix(path, ".tf") {
			dir := filepath.Dir(path)
			if len(dirs) == 0 || dirs[len(dirs)-1] != dir {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}
