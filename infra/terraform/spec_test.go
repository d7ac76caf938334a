package terraform_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mssqlcdc/mssqlcdc/core/config"
)

const exampleDir = "examples/basic"

// The example root's required inputs.
var exampleInputs = map[string]cty.Value{
	"lake_bucket":         cty.StringVal("lake-bucket"),
	"sql_server_host":     cty.StringVal("db.internal"),
	"password_secret_arn": cty.StringVal("arn:aws:secretsmanager:eu-west-1:123456789012:secret:shop-reader-AbCdEf"),
}

// exampleTableInputs evaluates the example's module "table" arguments for each table, as
// Terraform would pass them to modules/mssqlcdc-table.
func exampleTableInputs(t *testing.T) map[string]map[string]cty.Value {
	t.Helper()
	ex := loadModule(t, exampleDir)
	call := ex.modules["table"]
	if call == nil {
		t.Fatal("the example has no module \"table\"")
	}
	e := newEvaluator(t, ex, exampleInputs)
	e.extra["module"] = cty.ObjectVal(map[string]cty.Value{
		"shared": cty.ObjectVal(map[string]cty.Value{"delta_log_table_name": cty.StringVal("delta_log")}),
	})
	forEach, diags := e.eval(call.Body.Attributes["for_each"].Expr)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	out := map[string]map[string]cty.Value{}
	for it := forEach.ElementIterator(); it.Next(); {
		k, v := it.Element()
		e.extra["each"] = cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})
		args := map[string]cty.Value{}
		for name, a := range call.Body.Attributes {
			if name == "source" || name == "for_each" {
				continue
			}
			if args[name], diags = e.eval(a.Expr); diags.HasErrors() {
				t.Fatalf("module.table[%q].%s: %s", k.AsString(), name, diags.Error())
			}
		}
		out[k.AsString()] = args
	}
	return out
}

// TestExampleSpecsRenderForConfigParse follows the example's two tables through the
// module: every variable validation passes, and the MSSQLCDC_SPEC document the functions
// receive is one core/config.Parse accepts, with the values the example set.
func TestExampleSpecsRenderForConfigParse(t *testing.T) {
	mod := loadModule(t, tableModule)
	tables := exampleTableInputs(t)
	if got := sortedKeys(tables); !slices.Equal(got, []string{"customers", "orders"}) {
		t.Fatalf("example tables %v, want customers and orders", got)
	}
	wantPartitions := map[string]int{"orders": 8, "customers": 2}
	for name, inputs := range tables {
		t.Run(name, func(t *testing.T) {
			e := newEvaluator(t, mod, inputs)
			for _, v := range sortedKeys(mod.variables) {
				if failed := e.failedValidations(v); len(failed) > 0 {
					t.Errorf("variable %s fails validation: %q", v, failed)
				}
			}
			doc := e.local("spec_json").AsString()
			if strings.Contains(doc, "null") {
				t.Errorf("spec document holds nulls: %s", doc)
			}
			spec, err := config.Parse([]byte(doc))
			if err != nil {
				t.Fatalf("config.Parse(%s): %v", doc, err)
			}
			if spec.AppID != name+"-v1" || spec.Bronze != "s3://lake-bucket/bronze/"+name ||
				spec.Checkpoint != "s3://lake-bucket/checkpoints/"+name || spec.FactsTable != "s3://lake-bucket/bronze/"+name+"_facts" {
				t.Errorf("locations: app_id %q, bronze %q, checkpoint %q, facts %q", spec.AppID, spec.Bronze, spec.Checkpoint, spec.FactsTable)
			}
			if !spec.Bootstrap || spec.Storage.DynamoTable != "delta_log" || spec.Storage.Region != "eu-west-1" {
				t.Errorf("bootstrap %v, dynamo_table %q, region %q", spec.Bootstrap, spec.Storage.DynamoTable, spec.Storage.Region)
			}
			if spec.Source.DSN != "sqlserver://cdc_reader@db.internal:1433?database=shop" || spec.Source.CaptureInstance != "dbo_"+name ||
				spec.Source.PasswordSecretARN != exampleInputs["password_secret_arn"].AsString() {
				t.Errorf("source %+v", spec.Source)
			}
			if spec.Options.NumPartitions != wantPartitions[name] || spec.Options.MaxCommitsPerBatch == nil || *spec.Options.MaxCommitsPerBatch != 5000 {
				t.Errorf("options %+v", spec.Options)
			}
			// Left out of the document, so the functions' defaults apply.
			if spec.Snapshot != config.DefaultSnapshot || spec.Options.IsolationLevel != config.DefaultIsolationLevel || !spec.FailsOnDataLoss() {
				t.Errorf("defaults: snapshot %q, isolation %q, failOnDataLoss %v", spec.Snapshot, spec.Options.IsolationLevel, spec.FailsOnDataLoss())
			}

			paths := e.local("s3_paths")
			for loc, want := range map[string]string{
				"bronze":     "bronze/" + name,
				"checkpoint": "checkpoints/" + name, "facts": "bronze/" + name + "_facts",
			} {
				p := paths.GetAttr(loc)
				if b, pre := p.GetAttr("bucket").AsString(), p.GetAttr("prefix").AsString(); b != "lake-bucket" || pre != want {
					t.Errorf("s3_paths.%s = %s/%s, want lake-bucket/%s", loc, b, pre, want)
				}
			}
		})
	}
}

// TestExampleLifecycleCoversEveryDeltaTable: the shared module receives the .tmp prefix of
// both bronze tables and their facts tables, and accepts them.
func TestExampleLifecycleCoversEveryDeltaTable(t *testing.T) {
	mod := loadModule(t, tableModule)
	outputs := map[string]cty.Value{}
	for name, inputs := range exampleTableInputs(t) {
		e := newEvaluator(t, mod, inputs)
		v, diags := e.eval(mod.outputs["delta_tmp_prefixes"].Body.Attributes["value"].Expr)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		outputs[name] = cty.ObjectVal(map[string]cty.Value{"delta_tmp_prefixes": v})
	}

	ex := loadModule(t, exampleDir)
	e := newEvaluator(t, ex, exampleInputs)
	e.extra["module"] = cty.ObjectVal(map[string]cty.Value{"table": cty.ObjectVal(outputs)})
	v, diags := e.eval(ex.modules["shared"].Body.Attributes["delta_tmp_prefixes"].Expr)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var got []string
	for it := v.ElementIterator(); it.Next(); {
		_, p := it.Element()
		got = append(got, p.AsString())
	}
	slices.Sort(got)
	want := []string{
		"bronze/customers/_delta_log/.tmp/",
		"bronze/customers_facts/_delta_log/.tmp/",
		"bronze/orders/_delta_log/.tmp/",
		"bronze/orders_facts/_delta_log/.tmp/",
	}
	if !slices.Equal(got, want) {
		t.Errorf("delta_tmp_prefixes = %q, want %q", got, want)
	}

	shared := loadModule(t, "modules/mssqlcdc-shared")
	se := newEvaluator(t, shared, map[string]cty.Value{
		"lake_bucket":        cty.StringVal("lake-bucket"),
		"delta_tmp_prefixes": v,
	})
	for _, name := range sortedKeys(shared.variables) {
		if failed := se.failedValidations(name); len(failed) > 0 {
			t.Errorf("shared variable %s fails validation: %q", name, failed)
		}
	}
}

// TestFactsTablePerSourceTable: a spec without facts_table gets a facts table of its own,
// "<bronze>_facts", in the functions' spec document, the IAM scopes (both roles' Delta
// tables) and the facts_table output; a spec naming one shares it; the validations check
// the default location as they check a given one.
func TestFactsTablePerSourceTable(t *testing.T) {
	mod := loadModule(t, tableModule)
	own := hclValue(t, minimalSpec).AsValueMap()
	delete(own, "facts_table")
	for _, c := range []struct {
		name      string
		spec      cty.Value
		url, path string
	}{
		{"own", cty.ObjectVal(own), "s3://lake/bronze/orders_facts", "bronze/orders_facts"},
		{"shared", hclValue(t, minimalSpec), "s3://lake/ops/ingestion_facts", "ops/ingestion_facts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEvaluator(t, mod, map[string]cty.Value{"name": cty.StringVal("t"), "spec": c.spec})
			if failed := e.failedValidations("spec"); len(failed) > 0 {
				t.Fatalf("spec fails validation: %q", failed)
			}
			spec, err := config.Parse([]byte(e.local("spec_json").AsString()))
			if err != nil {
				t.Fatal(err)
			}
			if spec.FactsTable != c.url {
				t.Errorf("spec document's facts_table %q, want %q", spec.FactsTable, c.url)
			}
			out, diags := e.eval(mod.outputs["facts_table"].Body.Attributes["value"].Expr)
			if diags.HasErrors() || out.AsString() != c.url {
				t.Errorf("output facts_table %#v %s, want %q", out, diags.Error(), c.url)
			}
			if p := e.local("s3_paths").GetAttr("facts").GetAttr("prefix").AsString(); p != c.path {
				t.Errorf("IAM scope of the facts table %q, want %q", p, c.path)
			}
		})
	}

	// The default location is validated like a given one: a checkpoint where the default
	// facts table would go, or inside it, is refused.
	for loc, want := range map[string]string{
		"s3://lake/bronze/orders_facts":     "three different",
		"s3://lake/bronze/orders_facts/_cp": "nested",
	} {
		spec := with(cty.ObjectVal(own), "checkpoint", cty.StringVal(loc))
		e := newEvaluator(t, mod, map[string]cty.Value{"name": cty.StringVal("t"), "spec": spec})
		failed := e.failedValidations("spec")
		if !slices.ContainsFunc(failed, func(m string) bool { return strings.Contains(m, want) }) {
			t.Errorf("checkpoint %s: failed validations %q, want one saying %q", loc, failed, want)
		}
	}
}

// hclValue evaluates a literal HCL expression.
func hclValue(t *testing.T, src string) cty.Value {
	t.Helper()
	expr, diags := hclsyntax.ParseExpression([]byte(src), "case", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", src, diags.Error())
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", src, diags.Error())
	}
	return v
}

// with returns obj with the attribute at a dotted path set to v (objects only).
func with(obj cty.Value, path string, v cty.Value) cty.Value {
	head, rest, nested := strings.Cut(path, ".")
	attrs := map[string]cty.Value{}
	if !obj.IsNull() {
		attrs = obj.AsValueMap()
	}
	if nested {
		inner, ok := attrs[head]
		if !ok {
			inner = cty.NullVal(cty.DynamicPseudoType)
		}
		v = with(inner, rest, v)
	}
	attrs[head] = v
	return cty.ObjectVal(attrs)
}

const minimalSpec = `{
  app_id = "orders-v1"
  source = {
    dsn                 = "sqlserver://cdc_reader@db.internal:1433?database=shop"
    password_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:shop-reader"
    captureInstance     = "dbo_orders"
  }
  bronze      = "s3://lake/bronze/orders"
  checkpoint  = "s3://lake/checkpoints/orders"
  facts_table = "s3://lake/ops/ingestion_facts"
}`

// TestMinimalSpecRenders: only the required attributes, and the functions' defaults fill
// the rest.
func TestMinimalSpecRenders(t *testing.T) {
	mod := loadModule(t, tableModule)
	e := newEvaluator(t, mod, map[string]cty.Value{"name": cty.StringVal("t"), "spec": hclValue(t, minimalSpec)})
	for _, v := range sortedKeys(mod.variables) {
		if failed := e.failedValidations(v); len(failed) > 0 {
			t.Errorf("variable %s fails validation: %q", v, failed)
		}
	}
	doc := e.local("spec_json").AsString()
	spec, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("config.Parse(%s): %v", doc, err)
	}
	if spec.Options.NumPartitions != config.DefaultNumPartitions || spec.Options.StartingLsn != config.DefaultStartingLsn || spec.Storage.DynamoTable != "" {
		t.Errorf("defaults not applied: %+v", spec)
	}
	want := `{"app_id":"orders-v1","bronze":"s3://lake/bronze/orders","checkpoint":"s3://lake/checkpoints/orders","facts_table":"s3://lake/ops/ingestion_facts","options":{},"source":{"captureInstance":"dbo_orders","dsn":"sqlserver://cdc_reader@db.internal:1433?database=shop","password_secret_arn":"arn:aws:secretsmanager:eu-west-1:123456789012:secret:shop-reader"},"storage":{}}`
	if doc != want {
		t.Errorf("spec document\n got %s\nwant %s", doc, want)
	}
}

// TestValidationsRefuse: each wrong value fails at plan time with the message naming it,
// where config.Validate or AWS would otherwise refuse it only at run time.
func TestValidationsRefuse(t *testing.T) {
	mod := loadModule(t, tableModule)
	base := hclValue(t, minimalSpec)
	cases := []struct {
		name     string
		variable string
		value    cty.Value
		want     string // a substring of the failing validation's message
	}{
		{"password in dsn", "spec", with(base, "source.dsn", cty.StringVal("sqlserver://u:secret@db:1433?database=shop")), "holds a password"},
		{"password= in dsn", "spec", with(base, "source.dsn", cty.StringVal("sqlserver://u@db:1433?database=shop&password=secret")), "password= or pwd="},
		{"PWD= in dsn", "spec", with(base, "source.dsn", cty.StringVal("sqlserver://u@db:1433?PWD=secret")), "password= or pwd="},
		{"dsn scheme", "spec", with(base, "source.dsn", cty.StringVal("mssql://db")), "go-mssqldb URL"},
		{"app_id #", "spec", with(base, "app_id", cty.StringVal("orders#1")), "spec.app_id"},
		{"secret not an ARN", "spec", with(base, "source.password_secret_arn", cty.StringVal("shop-reader")), "secret ARN"},
		{"secret and env", "spec", with(base, "source.password_env", cty.StringVal("PW")), "not both"},
		{"capture instance ]", "spec", with(base, "source.captureInstance", cty.StringVal("dbo]x")), "captureInstance"},
		{"bronze bucket only", "spec", with(base, "bronze", cty.StringVal("s3://lake")), "s3://bucket/prefix"},
		{"bronze trailing slash", "spec", with(base, "bronze", cty.StringVal("s3://lake/bronze/orders/")), "trailing"},
		{"bronze local path", "spec", with(base, "bronze", cty.StringVal("/data/bronze")), "s3://bucket/prefix"},
		{"checkpoint is bronze", "spec", with(base, "checkpoint", cty.StringVal("s3://lake/bronze/orders")), "three different"},
		{"checkpoint inside bronze", "spec", with(base, "checkpoint", cty.StringVal("s3://lake/bronze/orders/_cp")), "nested"},
		{"numPartitions 0", "spec", with(base, "options.numPartitions", cty.NumberIntVal(0)), "numPartitions"},
		{"numPartitions 1.5", "spec", with(base, "options.numPartitions", cty.NumberFloatVal(1.5)), "numPartitions"},
		{"maxCommitsPerBatch 0", "spec", with(base, "options.maxCommitsPerBatch", cty.NumberIntVal(0)), "maxCommitsPerBatch"},
		{"startingLsn short", "spec", with(base, "options.startingLsn", cty.StringVal("0x12")), "startingLsn must be"},
		{"startingLsn with bootstrap", "spec", with(with(base, "bootstrap", cty.True), "options.startingLsn", cty.StringVal("earliest")), "not allowed with spec.bootstrap"},
		{"isolation NOLOCK", "spec", with(base, "options.isolationLevel", cty.StringVal("readUncommitted")), "never NOLOCK"},
		{"snapshot mode", "spec", with(base, "snapshot", cty.StringVal("partial")), "full or chunked"},
		{"chunk_rows 0", "spec", with(base, "chunk_rows", cty.NumberIntVal(0)), "chunk_rows must be >= 1"},
		{"lockTimeoutMs negative", "spec", with(base, "options.lockTimeoutMs", cty.NumberIntVal(-1)), "lockTimeoutMs"},
		{"dynamo table name", "spec", with(base, "storage.dynamo_table", cty.StringVal("x")), "dynamo_table"},
		{"region", "spec", with(base, "storage.region", cty.StringVal("Ireland")), "region"},
		{"name too long", "name", cty.StringVal(strings.Repeat("n", 41)), "1 to 40"},
		{"no stream", "functions", hclValue(t, `{snapshot = {}}`), "must include stream"},
		{"unknown function", "functions", hclValue(t, `{stream = {}, export = {}}`), "keys must be among"},
		{"timeout over 15 min", "functions", hclValue(t, `{stream = {timeout = 901}}`), "60 to 900"},
		{"memory", "functions", hclValue(t, `{stream = {memory_size = 64}}`), "128 to 10240"},
		{"every 0 minutes", "schedule_every_minutes", cty.NumberIntVal(0), "from 1 to 1440"},
		{"every 1.5 minutes", "schedule_every_minutes", cty.NumberFloatVal(1.5), "whole number"},
		{"retention", "log_retention_days", cty.NumberIntVal(10), "CloudWatch Logs' values"},
		{"log level", "state_machine_log_level", cty.StringVal("DEBUG"), "ALL, ERROR"},
		{"vpc without groups", "vpc_config", hclValue(t, `{subnet_ids = ["subnet-0a"], security_group_ids = []}`), "at least one"},
		{"vpc ids", "vpc_config", hclValue(t, `{subnet_ids = ["sub-1"], security_group_ids = ["sg-0a"]}`), "subnet-..."},
		{"spec in extra env", "extra_environment", hclValue(t, `{MSSQLCDC_SPEC = "{}"}`), "must not set MSSQLCDC_SPEC"},
		{"metrics in extra env", "extra_environment", hclValue(t, `{MSSQLCDC_METRICS = ""}`), "must not set MSSQLCDC_SPEC or MSSQLCDC_METRICS"},
		{"log level drops metrics", "logging", hclValue(t, `{log_format = "JSON", application_log_level = "WARN"}`), "TRACE, DEBUG or INFO"},
		{"levels need JSON", "logging", hclValue(t, `{system_log_level = "WARN"}`), "need log_format"},
		{"log format", "logging", hclValue(t, `{log_format = "xml"}`), "Text or JSON"},
		{"tracing mode", "tracing_mode", cty.StringVal("On"), "Active, PassThrough"},
		{"alias name", "alias_name", cty.StringVal("1"), "alias_name must"},
		{"role arn", "role_arns", hclValue(t, `{lambda = "my-role"}`), "IAM role ARNs"},
		{"code bucket url", "code_s3_bucket", cty.StringVal("s3://artifacts"), "bucket name"},
		{"failure destination", "stream_failure_destination_arn", cty.StringVal("arn:aws:lambda:eu-west-1:123456789012:function:f"), "SQS queue or SNS topic"},
		{"lag threshold", "alarm_max_ingestion_lag_seconds", cty.NumberIntVal(0), "must be > 0"},
		{"kms key", "kms_key_arns", hclValue(t, `["alias/lake"]`), "KMS key ARNs"},
		{"alarm action", "alarm_actions", hclValue(t, `["ops-topic"]`), "must be ARNs"},
		{"headroom 0", "alarm_min_retention_headroom_hours", cty.NumberIntVal(0), "must be > 0"},
		{"machine name", "state_machines", hclValue(t, `["Bootstrap.asl.json"]`), "file names"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inputs := map[string]cty.Value{"name": cty.StringVal("t"), "spec": base, c.variable: c.value}
			failed := newEvaluator(t, mod, inputs).failedValidations(c.variable)
			if !slices.ContainsFunc(failed, func(m string) bool { return strings.Contains(m, c.want) }) {
				t.Errorf("%s = %#v: failed validations %q, want one saying %q", c.variable, c.value, failed, c.want)
			}
		})
	}
}
