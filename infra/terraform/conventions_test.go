package terraform_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/mssqlcdc/mssqlcdc/core/config"
)

// Issue 15 item 6: the module conventions of terraform-aws-modules (the provider range is
// TestVersionsPinned's).

// TestBringYourOwnRoles: each role is created unless its ARN is given, and then it is used
// everywhere that role is, with nothing attached to it; every role has an output.
func TestBringYourOwnRoles(t *testing.T) {
	roles := []string{"lambda", "maintain", "states", "scheduler"}
	fns := hclValue(t, `{stream = {}, snapshot = {}, maintain = {}}`)
	own := map[string]cty.Value{}
	for _, r := range roles {
		own[r] = cty.StringVal("arn:aws:iam::123456789012:role/own-" + r)
	}
	created := tableEvaluator(t, map[string]cty.Value{"functions": fns}).withResources()
	brought := tableEvaluator(t, map[string]cty.Value{"functions": fns, "role_arns": cty.ObjectVal(own)}).withResources()
	for _, r := range roles {
		for _, res := range []string{"aws_iam_role." + r, "aws_iam_role_policy." + r} {
			if n := num(t, created.attr(res, "count")); n != 1 {
				t.Errorf("%s count %d by default", res, n)
			}
			if n := num(t, brought.attr(res, "count")); n != 0 {
				t.Errorf("%s count %d with role_arns.%s", res, n, r)
			}
		}
		if got := str(t, created.local(r+"_role_arn")); got != "arn:aws:iam::123456789012:role/t-"+r {
			t.Errorf("created %s role %s", r, got)
		}
		if got := str(t, brought.local(r+"_role_arn")); got != own[r].AsString() {
			t.Errorf("local.%s_role_arn = %s, want the given role", r, got)
		}
		out := loadModule(t, tableModule).outputs[r+"_role_arn"]
		if out == nil {
			t.Errorf("no output %s_role_arn", r)
		}
	}
	for fn, role := range map[string]string{"stream": "lambda", "snapshot": "lambda", "maintain": "maintain"} {
		if got := brought.local("function_role_arns").GetAttr(fn).AsString(); got != own[role].AsString() {
			t.Errorf("%s runs as %s, want role_arns.%s", fn, got, role)
		}
	}
	if got := str(t, brought.attr("aws_sfn_state_machine.this", "role_arn")); got != own["states"].AsString() {
		t.Errorf("state machines run as %s", got)
	}
	if got := str(t, brought.attr("aws_scheduler_schedule.stream", "target", "role_arn")); got != own["scheduler"].AsString() {
		t.Errorf("schedule runs as %s", got)
	}
}

// TestLoggingTracingAlias: logging_config sends each function to the log group the module
// creates, in the chosen format; tracing turns on for functions and machines with the
// roles' X-Ray actions; with publish and alias_name, everything that invokes a function
// invokes the alias.
func TestLoggingTracingAlias(t *testing.T) {
	e := tableEvaluator(t, map[string]cty.Value{"logging": hclValue(t, `{log_format = "JSON", application_log_level = "INFO", system_log_level = "WARN"}`)}).withResources()
	e.extra["each"] = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("stream"), "value": e.local("functions").GetAttr("stream")})
	for attr, want := range map[string]string{"log_format": "JSON", "application_log_level": "INFO", "system_log_level": "WARN", "log_group": "/aws/lambda/t-stream"} {
		if got := str(t, e.attr("aws_lambda_function.this", "logging_config", attr)); got != want {
			t.Errorf("logging_config.%s = %q, want %q", attr, got, want)
		}
	}
	if got := e.attr("aws_lambda_function.this", "tracing_config", "mode"); !got.IsNull() {
		t.Errorf("tracing by default: %#v", got)
	}
	if allows(e.policy("lambda"), "xray:PutTraceSegments", "*") {
		t.Error("X-Ray allowed without tracing")
	}

	tr := tableEvaluator(t, map[string]cty.Value{"tracing_mode": cty.StringVal("Active")}).withResources()
	tr.extra["each"] = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("stream"), "value": tr.local("functions").GetAttr("stream")})
	if got := str(t, tr.attr("aws_lambda_function.this", "tracing_config", "mode")); got != "Active" {
		t.Errorf("tracing_config.mode %q", got)
	}
	if !tr.attr("aws_sfn_state_machine.this", "tracing_configuration", "enabled").True() {
		t.Error("state machine tracing off with tracing_mode Active")
	}
	for _, doc := range []string{"lambda", "states"} {
		if !allows(tr.policy(doc), "xray:PutTraceSegments", "*") {
			t.Errorf("%s role may not write traces", doc)
		}
	}

	al := tableEvaluator(t, map[string]cty.Value{"publish": cty.True, "alias_name": cty.StringVal("live")}).withResources()
	alias := "arn:aws:lambda:eu-west-1:123456789012:function:t-stream:live"
	if got := al.local("invoke_arns").GetAttr("stream").AsString(); got != alias {
		t.Errorf("invoke_arns.stream %s", got)
	}
	if got := str(t, al.attr("aws_scheduler_schedule.stream", "target", "arn")); got != alias {
		t.Errorf("schedule target %s, want the alias", got)
	}
	if got := al.local("machine_template_vars").GetAttr("snapshot_function_arn").AsString(); !strings.HasSuffix(got, ":t-snapshot:live") {
		t.Errorf("state machines invoke %s, want the alias", got)
	}
	if got := str(t, al.attr("aws_lambda_function_event_invoke_config.stream", "qualifier")); got != "live" {
		t.Errorf("event invoke config qualifier %q", got)
	}
	if !al.attr("aws_lambda_function.this", "publish").True() {
		t.Error("publish not passed")
	}
	unpublished := tableEvaluator(t, map[string]cty.Value{"alias_name": cty.StringVal("live")}).withResources()
	failed := unpublished.failedPreconditions("aws_lambda_alias.this", "stream", unpublished.local("functions").GetAttr("stream"))
	if len(failed) != 1 || !strings.Contains(failed[0], "needs publish = true") {
		t.Errorf("alias without publish: %q", failed)
	}
	plain := tableEvaluator(t, nil).withResources()
	if got := plain.local("invoke_arns").GetAttr("stream").AsString(); got != "arn:aws:lambda:eu-west-1:123456789012:function:t-stream" {
		t.Errorf("without an alias, invoke_arns.stream %s", got)
	}
}

// TestCodeFromS3OrZip: code comes from dist/<fn>.zip with the zip's own hash, or from S3
// at <prefix><fn>.zip with the hash the caller gives; from S3 no local zip is needed.
func TestCodeFromS3OrZip(t *testing.T) {
	dir := t.TempDir()
	zip := filepath.Join(dir, "stream.zip")
	if err := os.WriteFile(zip, []byte("PK fake zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := tableEvaluator(t, map[string]cty.Value{"dist_dir": cty.StringVal(dir)}).withResources()
	local.extra["each"] = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("stream"), "value": local.local("functions").GetAttr("stream")})
	// base64(sha256("PK fake zip"))
	if got := str(t, local.attr("aws_lambda_function.this", "source_code_hash")); got != "Tzrql20R1KNlbo5F2MG70bjE9vO0Nj57ZEDeNF8qCUI=" {
		t.Errorf("source_code_hash %s", got)
	}
	if got := str(t, local.attr("aws_lambda_function.this", "filename")); got != zip {
		t.Errorf("filename %s", got)
	}
	if got := local.attr("aws_lambda_function.this", "s3_bucket"); !got.IsNull() {
		t.Errorf("s3_bucket %#v with a local zip", got)
	}

	s3 := tableEvaluator(t, map[string]cty.Value{
		"code_s3_bucket": cty.StringVal("artifacts"), "code_s3_key_prefix": cty.StringVal("mssqlcdc/1.4.0/"),
		"functions": hclValue(t, `{stream = {source_code_hash = "abc=", s3_object_version = "v7"}, snapshot = {s3_key = "other/snapshot.zip"}}`),
		"dist_dir":  cty.StringVal(filepath.Join(dir, "nothing-here")),
	}).withResources()
	for fn, want := range map[string][4]string{
		"stream":   {"artifacts", "mssqlcdc/1.4.0/stream.zip", "v7", "abc="},
		"snapshot": {"artifacts", "other/snapshot.zip", "", ""},
	} {
		s3.extra["each"] = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(fn), "value": s3.local("functions").GetAttr(fn)})
		for i, attr := range []string{"s3_bucket", "s3_key", "s3_object_version", "source_code_hash"} {
			got := s3.attr("aws_lambda_function.this", attr)
			if (want[i] == "" && !got.IsNull()) || (want[i] != "" && (got.IsNull() || got.AsString() != want[i])) {
				t.Errorf("%s.%s = %#v, want %q", fn, attr, got, want[i])
			}
		}
		if got := s3.attr("aws_lambda_function.this", "filename"); !got.IsNull() {
			t.Errorf("%s.filename %#v from S3", fn, got)
		}
		for _, m := range s3.failedPreconditions("aws_lambda_function.this", fn, s3.local("functions").GetAttr(fn)) {
			if strings.Contains(m, "does not exist") {
				t.Errorf("%s from S3 still wants a local zip: %s", fn, m)
			}
		}
	}
}

// TestExampleOneCallPerSpec: the example calls the table module once per table through
// for_each over a map of specs, and leaves the bucket's lifecycle alone by default.
func TestExampleOneCallPerSpec(t *testing.T) {
	ex := loadModule(t, exampleDir)
	call := ex.modules["table"]
	if !refersTo(call.Body.Attributes["for_each"].Expr, "local", "specs") {
		t.Errorf("module.table for_each is not local.specs")
	}
	if r := refs(call.Body.Attributes["spec"].Expr); len(r) != 1 || r[0].root != "each" || r[0].attr(0) != "value" {
		t.Errorf("module.table spec is not each.value")
	}
	tables := exampleTableInputs(t)
	if got := sortedKeys(tables); !slices.Equal(got, []string{"customers", "orders"}) {
		t.Errorf("tables %v", got)
	}

	e := newEvaluator(t, ex, exampleInputs)
	if v := e.mustEval(ex.modules["shared"].Body.Attributes["lake_bucket"].Expr); !v.IsNull() {
		t.Errorf("the example manages the bucket's lifecycle by default (lake_bucket %#v)", v)
	}
	shared := newEvaluator(t, loadModule(t, "modules/mssqlcdc-shared"), nil)
	if n := num(t, shared.attr("aws_s3_bucket_lifecycle_configuration.lake", "count")); n != 0 {
		t.Errorf("the shared module manages a lifecycle by default (count %d)", n)
	}
	on := newEvaluator(t, ex, map[string]cty.Value{
		"lake_bucket": exampleInputs["lake_bucket"], "sql_server_host": exampleInputs["sql_server_host"],
		"password_secret_arn": exampleInputs["password_secret_arn"], "manage_bucket_lifecycle": cty.True,
	})
	if v := on.mustEval(ex.modules["shared"].Body.Attributes["lake_bucket"].Expr); v.IsNull() || v.AsString() != "lake-bucket" {
		t.Errorf("manage_bucket_lifecycle = true: lake_bucket %#v", v)
	}
}

// TestLocalStackRootRenders (issue 15 item 8): the root localstack/deploy.sh applies passes
// the module's validations, and its spec is one the functions accept, pointing the
// functions at LocalStack by its compose service name.
func TestLocalStackRootRenders(t *testing.T) {
	root := loadModule(t, localStackRoot)
	e := newEvaluator(t, root, map[string]cty.Value{
		"dist_dir": cty.StringVal("/tmp/dist"), "reader_password": cty.StringVal("Reader_Passw0rd"),
	})
	e.extra["module"] = cty.ObjectVal(map[string]cty.Value{
		"shared": cty.ObjectVal(map[string]cty.Value{"delta_log_table_name": cty.StringVal("delta_log")}),
	})
	call := root.modules["orders"]
	args := map[string]cty.Value{}
	for name, a := range call.Body.Attributes {
		if name != "source" {
			args[name] = e.mustEval(a.Expr)
		}
	}
	mod := loadModule(t, tableModule)
	me := newEvaluator(t, mod, args).withAWS()
	for _, v := range sortedKeys(mod.variables) {
		if failed := me.failedValidations(v); len(failed) > 0 {
			t.Errorf("variable %s fails validation: %q", v, failed)
		}
	}
	spec, err := config.Parse([]byte(me.local("spec_json").AsString()))
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	if spec.Storage.S3Endpoint != "http://localstack:4566" || !spec.Storage.S3PathStyle || spec.Storage.DynamoTable != "delta_log" {
		t.Errorf("storage %+v", spec.Storage)
	}
	if spec.Source.PasswordEnv != "MSSQL_READER_PASSWORD" || !strings.Contains(spec.Source.DSN, "@mssql:1433") {
		t.Errorf("source %+v", spec.Source)
	}
	if args["schedule_enabled"].True() {
		t.Error("the schedule is enabled; LocalStack's scheduler would not run it anyway and deploy.sh invokes the stream")
	}
	if got := me.local("functions").GetAttr("stream").GetAttr("zip").AsString(); got != "/tmp/dist/stream.zip" {
		t.Errorf("stream zip %s", got)
	}
}
