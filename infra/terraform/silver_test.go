package terraform_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
)

// silverSpec is minimalSpec with a silver section (null attributes as Terraform's
// optional() leaves them).
func silverSpec(t *testing.T, table string) cty.Value {
	t.Helper()
	return with(hclValue(t, minimalSpec), "silver", hclValue(t, `{table = "`+table+`", keys = ["id"], max_seconds = null, memory_mb = null, copy_on_write = null}`))
}

// TestApplyDeployedOnlyWithSilver (issue 16 item 3): without spec.silver the module
// deploys no apply function, role or schedule; with it, the apply function (2048 MB,
// 900 s), its own role, and a schedule of its own (every 15 minutes by default, {} as the
// event, the alias when there is one) that the scheduler role may invoke, and an alarm on
// its errors; the spec document carries the silver section as core/config parses it.
func TestApplyDeployedOnlyWithSilver(t *testing.T) {
	const sched = "aws_scheduler_schedule.apply"
	without := tableEvaluator(t, nil).withResources()
	if without.local("functions").Type().HasAttribute("apply") {
		t.Error("apply deployed without spec.silver")
	}
	if n := num(t, without.attr(sched, "count")); n != 0 {
		t.Errorf("apply schedule count %d without spec.silver", n)
	}
	if n := num(t, without.attr("aws_iam_role.apply", "count")); n != 0 {
		t.Errorf("apply role count %d without spec.silver", n)
	}
	if allows(without.policy("scheduler"), "lambda:InvokeFunction", "arn:aws:lambda:eu-west-1:123456789012:function:t-apply") {
		t.Error("the scheduler role may invoke an apply function not deployed")
	}
	if strings.Contains(without.local("spec_json").AsString(), "silver") {
		t.Errorf("spec document names silver: %s", without.local("spec_json").AsString())
	}

	e := tableEvaluator(t, map[string]cty.Value{"spec": silverSpec(t, "s3://lake/silver/orders")}).withResources()
	fn := e.local("functions").GetAttr("apply")
	if num(t, fn.GetAttr("memory_size")) != 2048 || num(t, fn.GetAttr("timeout")) != 900 || str(t, fn.GetAttr("function_name")) != "t-apply" {
		t.Errorf("apply function %#v", fn)
	}
	if got := e.local("function_role_arns").GetAttr("apply").AsString(); !strings.HasSuffix(got, ":role/t-apply") {
		t.Errorf("apply runs as %s", got)
	}
	if n := num(t, e.attr("aws_iam_role.apply", "count")); n != 1 {
		t.Errorf("apply role count %d", n)
	}
	if n := num(t, e.attr(sched, "count")); n != 1 {
		t.Fatalf("apply schedule count %d", n)
	}
	if got := str(t, e.attr(sched, "schedule_expression")); got != "rate(15 minutes)" {
		t.Errorf("default expression %q", got)
	}
	if got := str(t, e.attr(sched, "state")); got != "ENABLED" {
		t.Errorf("state %q", got)
	}
	if got := str(t, e.attr(sched, "target", "arn")); !strings.HasSuffix(got, ":function:t-apply") {
		t.Errorf("target %q", got)
	}
	if got := str(t, e.attr(sched, "target", "input")); got != "{}" {
		t.Errorf("input %q", got)
	}
	if !allows(e.policy("scheduler"), "lambda:InvokeFunction", "arn:aws:lambda:eu-west-1:123456789012:function:t-apply") {
		t.Error("the scheduler role may not invoke t-apply")
	}
	doc := e.local("spec_json").AsString()
	spec, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("config.Parse(%s): %v", doc, err)
	}
	if spec.Silver == nil || spec.Silver.Table != "s3://lake/silver/orders" || strings.Join(spec.SilverKeys(), ",") != "id" || !strings.Contains(doc, `"silver":{"keys":["id"],"table":"s3://lake/silver/orders"}`) {
		t.Errorf("spec document %s: silver %+v", doc, spec.Silver)
	}

	const alarm = "aws_cloudwatch_metric_alarm.apply_errors"
	if n := num(t, e.attr(alarm, "count")); n != 1 {
		t.Errorf("apply errors alarm count %d", n)
	}
	if got := e.attr(alarm, "dimensions").GetAttr("FunctionName").AsString(); got != "t-apply" || str(t, e.attr(alarm, "metric_name")) != "Errors" {
		t.Errorf("apply errors alarm on %q", got)
	}
	if n := num(t, without.attr(alarm, "count")); n != 0 {
		t.Errorf("apply errors alarm count %d without spec.silver", n)
	}

	hourly := tableEvaluator(t, map[string]cty.Value{
		"spec":                      silverSpec(t, "s3://lake/silver/orders"),
		"apply_schedule_expression": cty.StringVal("rate(1 hour)"),
		"apply_schedule_enabled":    cty.False,
		"alias_name":                cty.StringVal("live"),
		"publish":                   cty.True,
	}).withResources()
	if got := str(t, hourly.attr(sched, "schedule_expression")); got != "rate(1 hour)" {
		t.Errorf("expression %q", got)
	}
	if got := str(t, hourly.attr(sched, "state")); got != "DISABLED" {
		t.Errorf("state %q", got)
	}
	if got := str(t, hourly.attr(sched, "target", "arn")); !strings.HasSuffix(got, ":function:t-apply:live") {
		t.Errorf("target with alias %q", got)
	}
}

// TestApplyRoleOpensExactlyBronzeAndSilver (issue 16 item 3): the apply role lists and
// reads bronze, may write only bronze's commit files (completing a half-done commit, with
// the DynamoDB log store), reads and writes silver without deleting its Delta log, and
// reaches neither the checkpoint, the facts table nor the secret; its DynamoDB items are
// silver's tablePath (read and write) and bronze's (no PutItem). The other functions' role
// gets no access to silver.
func TestApplyRoleOpensExactlyBronzeAndSilver(t *testing.T) {
	spec := with(silverSpec(t, "s3://lake/silver/orders"), "storage.dynamo_table", cty.StringVal("delta_log"))
	e := tableEvaluator(t, map[string]cty.Value{"spec": spec}).withResources()
	apply, lambda := e.policy("apply"), e.policy("lambda")
	obj := func(key string) string { return "arn:aws:s3:::lake/" + key }
	for _, c := range []struct {
		action, key string
		want        bool
	}{
		{"s3:GetObject", "bronze/orders/part-00000.parquet", true},
		{"s3:GetObject", "bronze/orders/_delta_log/00000000000000000003.json", true},
		{"s3:PutObject", "bronze/orders/_delta_log/00000000000000000003.json", true},
		{"s3:PutObject", "bronze/orders/part-00000.parquet", false},
		{"s3:DeleteObject", "bronze/orders/part-00000.parquet", false},
		{"s3:GetObject", "silver/orders/part-00000.parquet", true},
		{"s3:PutObject", "silver/orders/part-00000.parquet", true},
		{"s3:PutObject", "silver/orders/deletion_vector_0b1c.bin", true},
		{"s3:DeleteObject", "silver/orders/part-00000.parquet", true},
		{"s3:DeleteObject", "silver/orders/_delta_log/.tmp/00000000000000000003.json.0b1c", true},
		{"s3:DeleteObject", "silver/orders/_delta_log/00000000000000000003.json", false},
		{"s3:DeleteObject", "silver/orders/_delta_log/_last_checkpoint", false},
		{"s3:GetObject", "checkpoints/orders/offsets/12", false},
		{"s3:GetObject", "ops/ingestion_facts/part-0.parquet", false},
		{"s3:GetObject", "silver/ordersx/part-0.parquet", false},
	} {
		if got := allows(apply, c.action, obj(c.key)); got != c.want {
			t.Errorf("apply role %s %s: %v, want %v", c.action, c.key, got, c.want)
		}
	}
	if !allows(apply, "s3:ListBucket", "arn:aws:s3:::lake") {
		t.Error("the apply role may not list the bucket")
	}
	for _, s := range apply {
		if slices.Contains(s.Actions, "secretsmanager:GetSecretValue") {
			t.Errorf("apply statement reads the secret: %+v", s)
		}
		for _, c := range s.Conditions {
			if c.Variable == "s3:prefix" && !slices.Equal(c.Values, []string{"bronze/orders", "bronze/orders/*", "silver/orders", "silver/orders/*"}) {
				t.Errorf("apply list prefixes %q", c.Values)
			}
		}
	}
	for _, a := range []string{"s3:GetObject", "s3:PutObject"} {
		if allows(lambda, a, obj("silver/orders/part-0.parquet")) {
			t.Errorf("the stream's role may %s silver", a)
		}
	}
	bronzePath, _ := dynamo.TablePath("s3://lake/bronze/orders", "")
	silverPath, _ := dynamo.TablePath("s3://lake/silver/orders", "")
	items := map[string][]string{}
	for _, s := range apply {
		if len(s.Conditions) == 1 && s.Conditions[0].Variable == "dynamodb:LeadingKeys" {
			for _, k := range s.Conditions[0].Values {
				items[k] = append(items[k], s.Actions...)
			}
		}
	}
	if got := items[silverPath]; !slices.Contains(got, "dynamodb:PutItem") || !slices.Contains(got, "dynamodb:Query") {
		t.Errorf("silver items: %q", got)
	}
	if got := items[bronzePath]; slices.Contains(got, "dynamodb:PutItem") || !slices.Contains(got, "dynamodb:UpdateItem") || !slices.Contains(got, "dynamodb:GetItem") {
		t.Errorf("bronze items: %q", got)
	}
	if len(items) != 2 {
		t.Errorf("apply DynamoDB items under %d tablePaths, want bronze's and silver's: %v", len(items), items)
	}

	// With conditional puts (no DynamoDB log store) no bronze commit is ever half done:
	// bronze is read only.
	plain := tableEvaluator(t, map[string]cty.Value{"spec": silverSpec(t, "s3://lake/silver/orders")}).withResources()
	if allows(plain.policy("apply"), "s3:PutObject", obj("bronze/orders/_delta_log/00000000000000000003.json")) {
		t.Error("without the DynamoDB log store the apply role may still write bronze's log")
	}
}

// TestSilverValidations: a silver table that is no S3 prefix, or shares or nests in
// another location, and a memory_mb out of range fail at plan time; functions.apply
// without spec.silver, or with less memory than silver.memory_mb needs, fails its
// precondition.
func TestSilverValidations(t *testing.T) {
	for _, c := range []struct{ table, want string }{
		{"/lake/silver", "spec.silver.table must be an s3://bucket/prefix URL"},
		{"s3://lake/silver/", "spec.silver.table must be an s3://bucket/prefix URL"},
		{"s3://lake/bronze/orders", "spec.silver.table must be a location of its own"},
		{"s3://lake/bronze/orders/silver", "spec.silver.table must be a location of its own"},
		{"s3://lake/ops", "spec.silver.table must be a location of its own"},
	} {
		failed := tableEvaluator(t, map[string]cty.Value{"spec": silverSpec(t, c.table)}).failedValidations("spec")
		if !slices.ContainsFunc(failed, func(m string) bool { return strings.Contains(m, c.want) }) {
			t.Errorf("silver.table %q: failed %q, want %q", c.table, failed, c.want)
		}
	}
	ok := tableEvaluator(t, map[string]cty.Value{"spec": silverSpec(t, "s3://lake/silver/orders")})
	if failed := ok.failedValidations("spec"); len(failed) > 0 {
		t.Errorf("a valid silver section fails: %q", failed)
	}
	big := with(silverSpec(t, "s3://lake/silver/orders"), "silver.memory_mb", cty.NumberIntVal(9000))
	if failed := tableEvaluator(t, map[string]cty.Value{"spec": big}).failedValidations("spec"); !slices.ContainsFunc(failed, func(m string) bool { return strings.Contains(m, "memory_mb") }) {
		t.Errorf("memory_mb 9000: %q", failed)
	}

	asked := tableEvaluator(t, map[string]cty.Value{"functions": hclValue(t, `{stream = {}, snapshot = {}, apply = {}}`)})
	if failed := asked.failedPreconditions("aws_lambda_function.this", "apply", asked.local("functions").GetAttr("apply")); !slices.ContainsFunc(failed, func(m string) bool { return strings.Contains(m, "set spec.silver") }) {
		t.Errorf("functions.apply without spec.silver: %q", failed)
	}
	small := tableEvaluator(t, map[string]cty.Value{
		"spec":      with(silverSpec(t, "s3://lake/silver/orders"), "silver.memory_mb", cty.NumberIntVal(1024)),
		"functions": hclValue(t, `{stream = {}, apply = {memory_size = 2048}}`),
	})
	if failed := small.failedPreconditions("aws_lambda_function.this", "apply", small.local("functions").GetAttr("apply")); !slices.ContainsFunc(failed, func(m string) bool { return strings.Contains(m, "at least 2304 MB") }) {
		t.Errorf("apply with 2048 MB for 1024 MiB ranges: %q", failed)
	}
	for _, m := range ok.failedPreconditions("aws_lambda_function.this", "apply", ok.local("functions").GetAttr("apply")) {
		if !strings.Contains(m, "run make build") { // dist/apply.zip exists only after make build
			t.Errorf("the default apply function fails: %q", m)
		}
	}
}
