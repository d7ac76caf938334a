package terraform_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
)

// reconcileSpec is silverSpec with a reconcile section (null attributes as Terraform's
// optional() leaves them).
func reconcileSpec(t *testing.T, report string) cty.Value {
	t.Helper()
	return with(silverSpec(t, "s3://lake/silver/orders"), "reconcile", hclValue(t, `{report_table = "`+report+`", bucket_rows = null, sample = 0.05}`))
}

// TestReconcileDeployedOnlyWithSpecReconcile (issue 16 item 4): without spec.reconcile the
// module deploys no reconcile function, role, schedule or alarm; with it, the function
// (1024 MB, 900 s) on its own role, a daily schedule passing its scheduled time as the
// run, the scheduler allowed to invoke it, alarms on its mismatches metric and its errors,
// and the spec document carrying the section as core/config parses it.
func TestReconcileDeployedOnlyWithSpecReconcile(t *testing.T) {
	const sched = "aws_scheduler_schedule.reconcile"
	const alarm = "aws_cloudwatch_metric_alarm.reconcile_mismatches"
	without := tableEvaluator(t, map[string]cty.Value{"spec": silverSpec(t, "s3://lake/silver/orders")}).withResources()
	if without.local("functions").Type().HasAttribute("reconcile") {
		t.Error("reconcile deployed without spec.reconcile")
	}
	for _, r := range []string{sched, "aws_iam_role.reconcile", alarm, "aws_cloudwatch_metric_alarm.reconcile_errors"} {
		if n := num(t, without.attr(r, "count")); n != 0 {
			t.Errorf("%s count %d without spec.reconcile", r, n)
		}
	}
	if allows(without.policy("scheduler"), "lambda:InvokeFunction", "arn:aws:lambda:eu-west-1:123456789012:function:t-reconcile") {
		t.Error("the scheduler role may invoke a reconcile function not deployed")
	}

	e := tableEvaluator(t, map[string]cty.Value{"spec": reconcileSpec(t, "s3://lake/reports/orders")}).withResources()
	fn := e.local("functions").GetAttr("reconcile")
	if num(t, fn.GetAttr("memory_size")) != 1024 || num(t, fn.GetAttr("timeout")) != 900 || str(t, fn.GetAttr("function_name")) != "t-reconcile" {
		t.Errorf("reconcile function %#v", fn)
	}
	if got := e.local("function_role_arns").GetAttr("reconcile").AsString(); !strings.HasSuffix(got, ":role/t-reconcile") {
		t.Errorf("reconcile runs as %s", got)
	}
	if n := num(t, e.attr(sched, "count")); n != 1 {
		t.Fatalf("reconcile schedule count %d", n)
	}
	if got := str(t, e.attr(sched, "schedule_expression")); got != "rate(1 day)" {
		t.Errorf("default expression %q", got)
	}
	if got := str(t, e.attr(sched, "target", "arn")); !strings.HasSuffix(got, ":function:t-reconcile") {
		t.Errorf("target %q", got)
	}
	if got := str(t, e.attr(sched, "target", "input")); got != `{"run": "<aws.scheduler.scheduled-time>"}` {
		t.Errorf("input %q", got)
	}
	if !allows(e.policy("scheduler"), "lambda:InvokeFunction", "arn:aws:lambda:eu-west-1:123456789012:function:t-reconcile") {
		t.Error("the scheduler role may not invoke t-reconcile")
	}
	if n := num(t, e.attr(alarm, "count")); n != 1 {
		t.Fatalf("mismatch alarm count %d", n)
	}
	if str(t, e.attr(alarm, "namespace")) != "mssqlcdc" || str(t, e.attr(alarm, "metric_name")) != "ReconcileMismatches" ||
		e.attr(alarm, "dimensions").GetAttr("app_id").AsString() != "orders-v1" || num(t, e.attr(alarm, "threshold")) != 1 {
		t.Errorf("mismatch alarm on %s/%s", str(t, e.attr(alarm, "namespace")), str(t, e.attr(alarm, "metric_name")))
	}
	doc := e.local("spec_json").AsString()
	spec, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("config.Parse(%s): %v", doc, err)
	}
	if spec.Reconcile == nil || spec.Reconcile.ReportTable != "s3://lake/reports/orders" || spec.Reconcile.Sample == nil || *spec.Reconcile.Sample != 0.05 {
		t.Errorf("spec document %s: reconcile %+v", doc, spec.Reconcile)
	}
}

// TestReconcileRoleReadsAndWritesOnlyTheReport: the reconcile role reads the secret, silver,
// bronze, the facts and plans tables, and writes (and deletes failed writes of) only the
// report table, never its Delta log; its DynamoDB items are the report's (written) and the
// read tables' (completion only, no PutItem). The other roles get nothing of the report.
func TestReconcileRoleReadsAndWritesOnlyTheReport(t *testing.T) {
	spec := with(reconcileSpec(t, "s3://lake/reports/orders"), "storage.dynamo_table", cty.StringVal("delta_log"))
	e := tableEvaluator(t, map[string]cty.Value{"spec": spec}).withResources()
	rec := e.policy("reconcile")
	obj := func(key string) string { return "arn:aws:s3:::lake/" + key }
	for _, c := range []struct {
		action, key string
		want        bool
	}{
		{"s3:GetObject", "silver/orders/part-0.parquet", true},
		{"s3:PutObject", "silver/orders/part-0.parquet", false},
		{"s3:GetObject", "bronze/orders/part-0.parquet", true},
		{"s3:PutObject", "bronze/orders/part-0.parquet", false},
		{"s3:DeleteObject", "bronze/orders/part-0.parquet", false},
		{"s3:GetObject", "bronze/orders_snapshot_plans/part-0.parquet", true},
		{"s3:GetObject", "ops/ingestion_facts/part-0.parquet", true},
		{"s3:PutObject", "ops/ingestion_facts/part-0.parquet", false},
		{"s3:GetObject", "checkpoints/orders/offsets/12", false},
		{"s3:GetObject", "reports/orders/part-0.parquet", true},
		{"s3:PutObject", "reports/orders/part-0.parquet", true},
		{"s3:PutObject", "reports/orders/_delta_log/00000000000000000001.json", true},
		{"s3:DeleteObject", "reports/orders/part-0.parquet", true},
		{"s3:DeleteObject", "reports/orders/_delta_log/00000000000000000001.json", false},
		{"s3:GetObject", "reports/ordersx/part-0.parquet", false},
	} {
		if got := allows(rec, c.action, obj(c.key)); got != c.want {
			t.Errorf("reconcile role %s %s: %v, want %v", c.action, c.key, got, c.want)
		}
	}
	if !allows(rec, "secretsmanager:GetSecretValue", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:shop-reader") {
		t.Error("the reconcile role may not read the source's password")
	}
	if !allows(rec, "s3:ListBucket", "arn:aws:s3:::lake") {
		t.Error("the reconcile role may not list the bucket")
	}
	for _, other := range []string{"lambda", "apply", "maintain"} {
		if allows(e.policy(other), "s3:PutObject", obj("reports/orders/part-0.parquet")) {
			t.Errorf("the %s role may write the report", other)
		}
	}
	reportPath, _ := dynamo.TablePath("s3://lake/reports/orders", "")
	silverPath, _ := dynamo.TablePath("s3://lake/silver/orders", "")
	items := map[string][]string{}
	for _, s := range rec {
		if len(s.Conditions) == 1 && s.Conditions[0].Variable == "dynamodb:LeadingKeys" {
			for _, k := range s.Conditions[0].Values {
				items[k] = append(items[k], s.Actions...)
			}
		}
	}
	if got := items[reportPath]; !slices.Contains(got, "dynamodb:PutItem") {
		t.Errorf("report items: %q", got)
	}
	if got := items[silverPath]; slices.Contains(got, "dynamodb:PutItem") || !slices.Contains(got, "dynamodb:GetItem") {
		t.Errorf("silver items: %q", got)
	}
	if len(items) != 5 {
		t.Errorf("reconcile DynamoDB items under %d tablePaths, want report, silver, bronze, facts, plans: %v", len(items), items)
	}
}

// TestReconcileValidations: a reconcile section without silver, a report table that is no
// S3 prefix or shares a location, or a sample outside 0..1 fail at plan time;
// functions.reconcile without spec.reconcile fails its precondition.
func TestReconcileValidations(t *testing.T) {
	noSilver := with(hclValue(t, minimalSpec), "reconcile", hclValue(t, `{report_table = "s3://lake/reports/orders", bucket_rows = null, sample = null}`))
	for _, c := range []struct {
		spec cty.Value
		want string
	}{
		{noSilver, "set spec.silver too"},
		{reconcileSpec(t, "/reports"), "report_table must be an s3://bucket/prefix URL"},
		{reconcileSpec(t, "s3://lake/silver/orders/report"), "report_table must be a location of its own"},
		{reconcileSpec(t, "s3://lake/bronze/orders"), "report_table must be a location of its own"},
		{with(reconcileSpec(t, "s3://lake/reports/orders"), "reconcile.sample", cty.NumberFloatVal(1.5)), "sample must be a fraction"},
	} {
		failed := tableEvaluator(t, map[string]cty.Value{"spec": c.spec}).failedValidations("spec")
		if !slices.ContainsFunc(failed, func(m string) bool { return strings.Contains(m, c.want) }) {
			t.Errorf("%s: failed %q, want %q", c.want, failed, c.want)
		}
	}
	ok := tableEvaluator(t, map[string]cty.Value{"spec": reconcileSpec(t, "s3://lake/reports/orders")})
	if failed := ok.failedValidations("spec"); len(failed) > 0 {
		t.Errorf("a valid reconcile section fails: %q", failed)
	}
	asked := tableEvaluator(t, map[string]cty.Value{"functions": hclValue(t, `{stream = {}, reconcile = {}}`)})
	if failed := asked.failedPreconditions("aws_lambda_function.this", "reconcile", asked.local("functions").GetAttr("reconcile")); !slices.ContainsFunc(failed, func(m string) bool { return strings.Contains(m, "set spec.reconcile") }) {
		t.Errorf("functions.reconcile without spec.reconcile: %q", failed)
	}
}
