package terraform_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// withResources sets what a plan knows of the module's resources, so that expressions
// referring to them evaluate: names as the module sets them, ARNs in their documented
// shapes for account 123456789012 in eu-west-1, one instance of every counted resource (an
// expression reads [0] only where the count makes it exist). It needs withAWS.
func (e *evaluator) withResources() *evaluator {
	e.t.Helper()
	name := e.vars["name"].AsString()
	arn := func(kind string) cty.Value { return cty.StringVal("arn:aws:" + kind) }
	obj := func(kv map[string]cty.Value) cty.Value { return cty.ObjectVal(kv) }

	fns := map[string]cty.Value{}
	aliases := map[string]cty.Value{}
	logGroups := map[string]cty.Value{}
	for it := e.local("functions").ElementIterator(); it.Next(); {
		k, _ := it.Element()
		fn := name + "-" + k.AsString()
		fns[k.AsString()] = obj(map[string]cty.Value{
			"function_name": cty.StringVal(fn),
			"arn":           arn("lambda:eu-west-1:123456789012:function:" + fn),
			"version":       cty.StringVal("7"),
		})
		aliasName := "live"
		if a := e.vars["alias_name"]; !a.IsNull() {
			aliasName = a.AsString()
		}
		aliases[k.AsString()] = obj(map[string]cty.Value{
			"arn": arn("lambda:eu-west-1:123456789012:function:" + fn + ":" + aliasName),
		})
		group := "/aws/lambda/" + fn
		logGroups[k.AsString()] = obj(map[string]cty.Value{
			"name": cty.StringVal(group),
			"arn":  arn("logs:eu-west-1:123456789012:log-group:" + group),
		})
	}
	machines := map[string]cty.Value{}
	for it := e.local("state_machines").ElementIterator(); it.Next(); {
		_, m := it.Element()
		sm := name + "-" + m.AsString()
		machines[m.AsString()] = obj(map[string]cty.Value{
			"name": cty.StringVal(sm),
			"arn":  arn("states:eu-west-1:123456789012:stateMachine:" + sm),
		})
	}
	role := func(r string) cty.Value {
		return cty.TupleVal([]cty.Value{obj(map[string]cty.Value{
			"id":  cty.StringVal(name + "-" + r),
			"arn": arn("iam::123456789012:role/" + name + "-" + r),
		})})
	}
	set := func(root string, attrs map[string]cty.Value) { e.extra[root] = cty.ObjectVal(attrs) }
	set("aws_lambda_function", map[string]cty.Value{"this": cty.ObjectVal(fns)})
	set("aws_lambda_alias", map[string]cty.Value{"this": cty.ObjectVal(aliases)})
	set("aws_cloudwatch_log_group", map[string]cty.Value{"function": cty.ObjectVal(logGroups)})
	set("aws_sfn_state_machine", map[string]cty.Value{"this": cty.ObjectVal(machines)})
	set("aws_iam_role", map[string]cty.Value{
		"lambda": role("lambda"), "maintain": role("maintain"), "apply": role("apply"), "reconcile": role("reconcile"), "states": role("states"), "scheduler": role("scheduler"),
	})
	set("aws_sqs_queue", map[string]cty.Value{"stream_failures": cty.TupleVal([]cty.Value{obj(map[string]cty.Value{
		"arn": arn("sqs:eu-west-1:123456789012:" + name + "-stream-failures"),
	})})})
	set("aws_cloudwatch_dashboard", map[string]cty.Value{"this": cty.TupleVal([]cty.Value{obj(map[string]cty.Value{
		"dashboard_name": cty.StringVal(name),
	})})})
	return e
}

// block returns the resource or data block "type.name" ("data.type.name" for data).
func (e *evaluator) block(addr string) *hclsyntax.Block {
	e.t.Helper()
	var b *hclsyntax.Block
	if rest, ok := strings.CutPrefix(addr, "data."); ok {
		b = e.m.data[rest]
	} else {
		b = e.m.resources[addr]
	}
	if b == nil {
		e.t.Fatalf("no %s in %s", addr, e.m.dir)
	}
	return b
}

// attr evaluates the attribute at a path of nested blocks and an attribute name inside
// resource addr, such as ("aws_lambda_function_event_invoke_config.stream",
// "destination_config", "on_failure", "destination"); it returns a null value when a
// block on the way is absent (including a dynamic block whose for_each is empty). A
// dynamic block is entered with its single element bound to its iterator.
func (e *evaluator) attr(addr string, path ...string) cty.Value {
	e.t.Helper()
	body := e.block(addr).Body
	for _, name := range path[:len(path)-1] {
		next := (*hclsyntax.Body)(nil)
		for _, b := range body.Blocks {
			if b.Type == name {
				next = b.Body
				break
			}
			if b.Type == "dynamic" && b.Labels[0] == name {
				items := e.mustEval(b.Body.Attributes["for_each"].Expr)
				if items.LengthInt() == 0 {
					return cty.NullVal(cty.DynamicPseudoType)
				}
				if items.LengthInt() != 1 {
					e.t.Fatalf("%s: dynamic %q has %d elements, attr reads one", addr, name, items.LengthInt())
				}
				it := items.ElementIterator()
				it.Next()
				k, v := it.Element()
				e.extra[name] = cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})
				for _, c := range b.Body.Blocks {
					if c.Type == "content" {
						next = c.Body
					}
				}
				break
			}
		}
		if next == nil {
			return cty.NullVal(cty.DynamicPseudoType)
		}
		body = next
	}
	a, ok := body.Attributes[path[len(path)-1]]
	if !ok {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return e.mustEval(a.Expr)
}

func (e *evaluator) mustEval(expr hclsyntax.Expression) cty.Value {
	e.t.Helper()
	v, diags := e.eval(expr)
	if diags.HasErrors() {
		e.t.Fatalf("%s: %s", expr.Range(), diags.Error())
	}
	return v
}

// stmt is one statement of an aws_iam_policy_document as the data source renders it.
type stmt struct {
	Sid        string
	Effect     string
	Actions    []string
	Resources  []string
	Conditions []cond
}

type cond struct {
	Test, Variable string
	Values         []string
}

// policy renders data.aws_iam_policy_document.<name> as the data source does: its
// source_policy_documents' statements first, then its static and dynamic statement blocks
// (dynamic blocks expanded over for_each with their iterator bound).
func (e *evaluator) policy(name string) []stmt {
	e.t.Helper()
	b := e.block("data.aws_iam_policy_document." + name)
	var out []stmt
	if a, ok := b.Body.Attributes["source_policy_documents"]; ok {
		for _, r := range refs(a.Expr) {
			if r.root == "data" && r.attr(0) == "aws_iam_policy_document" {
				out = append(out, e.policy(r.attr(1))...)
			}
		}
	}
	for _, sb := range b.Body.Blocks {
		out = append(out, e.statements(sb, "statement")...)
	}
	return out
}

// statements renders a statement block, or a dynamic "statement" block into one statement
// per element.
func (e *evaluator) statements(b *hclsyntax.Block, kind string) []stmt {
	e.t.Helper()
	var out []stmt
	switch {
	case b.Type == kind:
		out = append(out, e.statement(b.Body))
	case b.Type == "dynamic" && b.Labels[0] == kind:
		items := e.mustEval(b.Body.Attributes["for_each"].Expr)
		for it := items.ElementIterator(); it.Next(); {
			k, v := it.Element()
			e.extra[kind] = cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})
			for _, c := range b.Body.Blocks {
				if c.Type == "content" {
					out = append(out, e.statement(c.Body))
				}
			}
			delete(e.extra, kind)
		}
	}
	return out
}

func (e *evaluator) statement(body *hclsyntax.Body) stmt {
	e.t.Helper()
	s := stmt{Effect: "Allow"}
	str := func(name string) string {
		if a, ok := body.Attributes[name]; ok {
			return e.mustEval(a.Expr).AsString()
		}
		return ""
	}
	s.Sid = str("sid")
	if eff := str("effect"); eff != "" {
		s.Effect = eff
	}
	s.Actions = e.strings(body.Attributes["actions"])
	s.Resources = e.strings(body.Attributes["resources"])
	for _, cb := range body.Blocks {
		switch {
		case cb.Type == "condition":
			s.Conditions = append(s.Conditions, e.condition(cb.Body))
		case cb.Type == "dynamic" && cb.Labels[0] == "condition":
			items := e.mustEval(cb.Body.Attributes["for_each"].Expr)
			for it := items.ElementIterator(); it.Next(); {
				k, v := it.Element()
				e.extra["condition"] = cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})
				for _, c := range cb.Body.Blocks {
					if c.Type == "content" {
						s.Conditions = append(s.Conditions, e.condition(c.Body))
					}
				}
				delete(e.extra, "condition")
			}
		}
	}
	return s
}

func (e *evaluator) condition(body *hclsyntax.Body) cond {
	return cond{
		Test:     e.mustEval(body.Attributes["test"].Expr).AsString(),
		Variable: e.mustEval(body.Attributes["variable"].Expr).AsString(),
		Values:   e.strings(body.Attributes["values"]),
	}
}

func (e *evaluator) strings(a *hclsyntax.Attribute) []string {
	e.t.Helper()
	if a == nil {
		return nil
	}
	v := e.mustEval(a.Expr)
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, s := it.Element()
		out = append(out, s.AsString())
	}
	return out
}

// iamMatch is IAM's wildcard match of a resource or action pattern: '*' any run of
// characters ('/' included), '?' any one character.
func iamMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if iamMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && iamMatch(pattern[1:], s[1:])
	}
	return s != "" && pattern[0] == s[0] && iamMatch(pattern[1:], s[1:])
}

// allows evaluates a policy for one action on one resource as IAM does without
// conditions: an explicit Deny that matches wins, else any matching Allow.
func allows(policy []stmt, action, resource string) bool {
	allowed := false
	for _, s := range policy {
		am, rm := false, false
		for _, a := range s.Actions {
			am = am || iamMatch(a, action)
		}
		for _, r := range s.Resources {
			rm = rm || iamMatch(r, resource)
		}
		if !am || !rm {
			continue
		}
		if s.Effect == "Deny" {
			return false
		}
		allowed = true
	}
	return allowed
}

// jsonValue decodes a rendered JSON document (jsonencode's output) for assertions.
func jsonValue(t *testing.T, v cty.Value) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(v.AsString()), &out); err != nil {
		t.Fatalf("not JSON: %v: %s", err, v.AsString())
	}
	return out
}

// TestMaintainSchedulePerTable (issue 15 item 2): the module deploys the maintain function
// by default with a schedule of its own (hourly, a 15-minute flexible window, {} as the
// event, the alias when there is one) that the scheduler role may invoke; the expression
// and the state are the caller's; without functions.maintain there is neither.
func TestMaintainSchedulePerTable(t *testing.T) {
	e := tableEvaluator(t, nil).withResources()
	const s = "aws_scheduler_schedule.maintain"
	if n := num(t, e.attr(s, "count")); n != 1 {
		t.Fatalf("maintain schedule count %d by default", n)
	}
	if got := str(t, e.attr(s, "name")); got != "t-maintain" {
		t.Errorf("name %q", got)
	}
	if got := str(t, e.attr(s, "schedule_expression")); got != "rate(1 hour)" {
		t.Errorf("default expression %q", got)
	}
	if got := str(t, e.attr(s, "state")); got != "ENABLED" {
		t.Errorf("state %q", got)
	}
	if got := str(t, e.attr(s, "flexible_time_window", "mode")); got != "FLEXIBLE" || num(t, e.attr(s, "flexible_time_window", "maximum_window_in_minutes")) != 15 {
		t.Errorf("flexible window %q", got)
	}
	if got := str(t, e.attr(s, "target", "arn")); !strings.HasSuffix(got, ":function:t-maintain") {
		t.Errorf("target %q", got)
	}
	if got := str(t, e.attr(s, "target", "input")); got != "{}" {
		t.Errorf("input %q", got)
	}
	if got := str(t, e.attr(s, "target", "role_arn")); !strings.HasSuffix(got, ":role/t-scheduler") {
		t.Errorf("role %q", got)
	}
	sched := e.policy("scheduler")
	for _, fn := range []string{"t-stream", "t-maintain"} {
		if !allows(sched, "lambda:InvokeFunction", "arn:aws:lambda:eu-west-1:123456789012:function:"+fn) {
			t.Errorf("the scheduler role may not invoke %s", fn)
		}
	}

	daily := tableEvaluator(t, map[string]cty.Value{
		"maintain_schedule_expression": cty.StringVal("cron(15 3 * * ? *)"),
		"maintain_schedule_enabled":    cty.False,
		"alias_name":                   cty.StringVal("live"),
		"publish":                      cty.True,
	}).withResources()
	if got := str(t, daily.attr(s, "schedule_expression")); got != "cron(15 3 * * ? *)" {
		t.Errorf("expression %q", got)
	}
	if got := str(t, daily.attr(s, "state")); got != "DISABLED" {
		t.Errorf("state %q", got)
	}
	if got := str(t, daily.attr(s, "target", "arn")); !strings.HasSuffix(got, ":function:t-maintain:live") {
		t.Errorf("target with alias %q", got)
	}
	if failed := tableEvaluator(t, map[string]cty.Value{"maintain_schedule_expression": cty.StringVal("hourly")}).failedValidations("maintain_schedule_expression"); len(failed) == 0 {
		t.Error("maintain_schedule_expression \"hourly\" accepted")
	}

	without := tableEvaluator(t, map[string]cty.Value{"functions": hclValue(t, `{stream = {}, snapshot = {}}`)}).withResources()
	if n := num(t, without.attr(s, "count")); n != 0 {
		t.Errorf("maintain schedule count %d without functions.maintain", n)
	}
	if allows(without.policy("scheduler"), "lambda:InvokeFunction", "arn:aws:lambda:eu-west-1:123456789012:function:t-maintain") {
		t.Error("the scheduler role may invoke a maintain function not deployed")
	}
}
