package terraform_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
)

// functionSDKCalls are the files whose AWS SDK calls the functions make at run time (the
// clients deltalog/location and internal/connect build), and how each file names its client.
// deltalog/logstore/dynamo/setup.go (CreateTable) is left out: tables are Terraform's
// (modules/mssqlcdc-shared), never the functions'.
var functionSDKCalls = []struct{ glob, client string }{
	{"deltalog/storage/s3store/*.go", `s\.client`},
	{"deltalog/logstore/dynamo/*.go", `l\.ddb`},
	{"internal/connect/secrets.go", `s\.Client`},
}

// sdkActions is the IAM authorization each SDK operation needs (Service Authorization
// Reference; S3 API reference "Permissions" of each operation): HeadObject is authorized as
// s3:GetObject, ListObjectsV2 as s3:ListBucket, CopyObject as s3:GetObject on the source
// and s3:PutObject on the target, and a conditional PutObject (If-None-Match) needs only
// s3:PutObject.
var sdkActions = map[string][]string{
	"GetObject":      {"s3:GetObject"},
	"HeadObject":     {"s3:GetObject"},
	"PutObject":      {"s3:PutObject"},
	"CopyObject":     {"s3:GetObject", "s3:PutObject"},
	"DeleteObject":   {"s3:DeleteObject"},
	"DeleteObjects":  {"s3:DeleteObject"}, // DeleteObjects needs s3:DeleteObject on each key
	"ListObjectsV2":  {"s3:ListBucket"},
	"GetItem":        {"dynamodb:GetItem"},
	"PutItem":        {"dynamodb:PutItem"},
	"UpdateItem":     {"dynamodb:UpdateItem"},
	"DeleteItem":     {"dynamodb:DeleteItem"},
	"Query":          {"dynamodb:Query"},
	"GetSecretValue": {"secretsmanager:GetSecretValue"},
}

// lambdaPolicyExtras are the actions of the functions' policy that no SDK call of ours
// makes: Lambda's own log delivery, KMS for customer managed keys behind S3, Secrets
// Manager and DynamoDB, the ENI management Lambda does with the role inside a VPC, the
// record Lambda sends to the stream's on-failure destination, the result it sends to
// EventBridge (on_data_loss "resnapshot"), and X-Ray's trace writes.
var lambdaPolicyExtras = []string{
	"logs:CreateLogStream", "logs:PutLogEvents",
	"kms:Decrypt", "kms:GenerateDataKey",
	"sqs:SendMessage", "sns:Publish", "events:PutEvents",
	"xray:PutTraceSegments", "xray:PutTelemetryRecords",
	"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
	"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses",
}

// requiredActions scans the functions' SDK call sites and returns the IAM actions they
// need, failing on an operation sdkActions does not know.
func requiredActions(t *testing.T) []string {
	t.Helper()
	var need []string
	ops := map[string]bool{}
	for _, c := range functionSDKCalls {
		files, err := filepath.Glob(filepath.Join(repoRoot, c.glob))
		if err != nil || len(files) == 0 {
			t.Fatalf("no files for %s (%v)", c.glob, err)
		}
		call := regexp.MustCompile(c.client + `\.([A-Z][A-Za-z0-9]*)\(`)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == "setup.go" {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range call.FindAllStringSubmatch(string(src), -1) {
				acts, ok := sdkActions[m[1]]
				if !ok {
					t.Errorf("%s calls %s: add its IAM action to sdkActions and to the functions' policy", f, m[1])
					continue
				}
				ops[m[1]] = true
				need = append(need, acts...)
			}
		}
	}
	// The scan must see the calls it exists for; an empty scan would pass any policy.
	for _, op := range []string{"GetObject", "PutObject", "ListObjectsV2", "PutItem", "GetSecretValue"} {
		if !ops[op] {
			t.Errorf("found no %s call: functionSDKCalls no longer matches the code", op)
		}
	}
	slices.Sort(need)
	return slices.Compact(need)
}

// policyActions are the literal actions of every statement (static or dynamic) of a
// aws_iam_policy_document block.
func policyActions(t *testing.T, b *hclsyntax.Block) []string {
	t.Helper()
	var out []string
	var walk func(body *hclsyntax.Body)
	walk = func(body *hclsyntax.Body) {
		if a, ok := body.Attributes["actions"]; ok {
			v, diags := a.Expr.Value(nil)
			if diags.HasErrors() || !v.Type().IsTupleType() && !v.Type().IsListType() {
				t.Fatalf("%s: actions must be a literal list", a.Range())
			}
			for it := v.ElementIterator(); it.Next(); {
				_, e := it.Element()
				if e.Type() != cty.String {
					t.Fatalf("%s: actions must be strings", a.Range())
				}
				out = append(out, e.AsString())
			}
		}
		for _, sub := range body.Blocks {
			walk(sub.Body)
		}
	}
	walk(b.Body)
	return out
}

// TestLambdaPolicyActions: the functions' role allows every action the functions' SDK
// calls need, and nothing else beyond lambdaPolicyExtras.
func TestLambdaPolicyActions(t *testing.T) {
	m := loadModule(t, tableModule)
	var have []string
	for _, name := range []string{"lambda", "function_common"} {
		doc, ok := m.data["aws_iam_policy_document."+name]
		if !ok {
			t.Fatalf("no data.aws_iam_policy_document.%s", name)
		}
		have = append(have, policyActions(t, doc)...)
	}
	need := requiredActions(t)
	for _, a := range need {
		if !slices.Contains(have, a) {
			t.Errorf("the functions call the SDK for %s, which the policy does not allow", a)
		}
	}
	for _, a := range have {
		if !slices.Contains(need, a) && !slices.Contains(lambdaPolicyExtras, a) {
			t.Errorf("the policy allows %s, which no function needs", a)
		}
	}
}

// specLocations maps the config.Spec fields internal/connect opens as table or store locations
// to the key of local.s3_locations granting them.
var specLocations = map[string]string{"Bronze": "bronze", "FactsTable": "facts", "Checkpoint": "checkpoint", "PlansTable()": "plans"}

// TestS3LocationsAreWhatTheFunctionsOpen: the S3 grant covers exactly the spec URLs
// internal/connect opens (Table / location.Open with spec.<Field>), no more and no fewer.
func TestS3LocationsAreWhatTheFunctionsOpen(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot, "internal/connect/open.go"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	// A location is a field (spec.Bronze) or a method deriving one (spec.PlansTable()).
	for _, m := range regexp.MustCompile(`\(ctx, spec\.([A-Za-z]+(?:\(\))?), cfg\)`).FindAllStringSubmatch(string(src), -1) {
		k, ok := specLocations[m[1]]
		if !ok {
			t.Errorf("internal/connect opens spec.%s: grant it in local.s3_locations and add it to specLocations", m[1])
			continue
		}
		want = append(want, k)
	}
	mod := loadModule(t, tableModule)
	got := sortedKeys(objectKeys(t, mod.locals["s3_locations"].Expr))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("local.s3_locations = %q, want the locations internal/connect opens %q", got, want)
	}
}

// TestDeltaLogItemsScopedToTablePaths (issue 15 item 5): the DynamoDB grant holds only the
// tablePath keys of this table's Delta tables (bronze, facts, the chunked snapshot's plans table), as deltalog/logstore/dynamo builds
// them (scheme, bucket, prefix without empty segments), for the default scheme and the
// Spark one, and the maintain role gets the same scope.
func TestDeltaLogItemsScopedToTablePaths(t *testing.T) {
	base := with(hclValue(t, minimalSpec), "storage.dynamo_table", cty.StringVal("delta_log"))
	cases := []struct {
		name   string
		spec   cty.Value
		scheme string
	}{
		{"default scheme", base, ""},
		{"s3a", with(base, "storage.table_path_scheme", cty.StringVal("s3a")), "s3a"},
		{"empty segments", with(with(base, "bronze", cty.StringVal("s3://lake/bronze//orders")), "facts_table", cty.StringVal("s3://lake/ops/facts")), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []string
			bronzeURL := c.spec.GetAttr("bronze").AsString()
			for _, u := range []string{bronzeURL, c.spec.GetAttr("facts_table").AsString(), bronzeURL + config.PlansSuffix} {
				p, err := dynamo.TablePath(u, c.scheme)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, p)
			}
			e := tableEvaluator(t, map[string]cty.Value{"spec": c.spec, "functions": hclValue(t, `{stream = {}, snapshot = {}, maintain = {}}`)}).withResources()
			for _, doc := range []string{"lambda", "maintain"} {
				var found bool
				for _, s := range e.policy(doc) {
					if !slices.Contains(s.Actions, "dynamodb:PutItem") {
						continue
					}
					found = true
					if len(s.Conditions) != 1 || s.Conditions[0].Test != "ForAllValues:StringEquals" || s.Conditions[0].Variable != "dynamodb:LeadingKeys" || !slices.Equal(s.Conditions[0].Values, want) {
						t.Errorf("%s: DynamoDB statement conditions %+v, want ForAllValues:StringEquals dynamodb:LeadingKeys %q", doc, s.Conditions, want)
					}
					if !slices.Equal(s.Resources, []string{"arn:aws:dynamodb:eu-west-1:123456789012:table/delta_log"}) {
						t.Errorf("%s: resources %q", doc, s.Resources)
					}
				}
				if !found {
					t.Errorf("%s: no DynamoDB statement", doc)
				}
			}
		})
	}
}

// TestOnlyMaintainDeletesDeltaLogFiles (issue 15 item 5): the stream's and snapshot's role
// may delete data files, temporary commit files and checkpoint files, but no Delta log
// file (commits, checkpoints, .crc, _last_checkpoint, sidecars) of either Delta table, by
// an explicit deny; the maintain role may, on bronze and facts only, and reads no secret.
func TestOnlyMaintainDeletesDeltaLogFiles(t *testing.T) {
	e := tableEvaluator(t, map[string]cty.Value{"functions": hclValue(t, `{stream = {}, snapshot = {}, maintain = {}}`)}).withResources()
	lambda, maintain := e.policy("lambda"), e.policy("maintain")
	obj := func(key string) string { return "arn:aws:s3:::lake/" + key }
	logFiles := []string{
		"_delta_log/00000000000000000012.json",
		"_delta_log/00000000000000000010.checkpoint.parquet",
		"_delta_log/00000000000000000010.checkpoint.0000000001.0000000002.parquet",
		"_delta_log/00000000000000000012.crc",
		"_delta_log/00000000000000000004.00000000000000000009.compacted.json",
		"_delta_log/_last_checkpoint",
		"_delta_log/_sidecars/3a0d65cd-4056-49b8-937b-95f9e3ee90e5.parquet",
	}
	others := []string{
		"part-00000-0b1c.c000.snappy.parquet",
		"_capture_instance=dbo_orders/part-00001.parquet",
		"_delta_log/.tmp/00000000000000000012.json.0b1c",
	}
	for _, table := range []string{"bronze/orders/", "ops/ingestion_facts/"} {
		for _, f := range logFiles {
			if allows(lambda, "s3:DeleteObject", obj(table+f)) {
				t.Errorf("the functions' role may delete %s%s", table, f)
			}
			if !allows(lambda, "s3:GetObject", obj(table+f)) || !allows(lambda, "s3:PutObject", obj(table+f)) {
				t.Errorf("the functions' role may not read or write %s%s", table, f)
			}
			if !allows(maintain, "s3:DeleteObject", obj(table+f)) {
				t.Errorf("the maintain role may not delete %s%s", table, f)
			}
		}
		for _, f := range others {
			if !allows(lambda, "s3:DeleteObject", obj(table+f)) {
				t.Errorf("the functions' role may not delete %s%s", table, f)
			}
		}
	}
	// The chunked snapshot's plans table, a sibling of bronze's prefix: the functions read
	// and write it but never delete its log; maintain does not touch it.
	for _, f := range logFiles {
		key := "bronze/orders_snapshot_plans/" + f
		if allows(lambda, "s3:DeleteObject", obj(key)) || !allows(lambda, "s3:GetObject", obj(key)) || !allows(lambda, "s3:PutObject", obj(key)) {
			t.Errorf("the functions' role on %s: get %v, put %v, delete %v; want get and put only", key,
				allows(lambda, "s3:GetObject", obj(key)), allows(lambda, "s3:PutObject", obj(key)), allows(lambda, "s3:DeleteObject", obj(key)))
		}
		if allows(maintain, "s3:DeleteObject", obj(key)) {
			t.Errorf("the maintain role may delete %s", key)
		}
	}
	for _, f := range []string{"checkpoints/orders/offsets/12", "checkpoints/orders/snapshot/plan.json"} {
		if !allows(lambda, "s3:DeleteObject", obj(f)) {
			t.Errorf("the functions' role may not delete %s", f)
		}
		if allows(maintain, "s3:GetObject", obj(f)) {
			t.Errorf("the maintain role reaches the checkpoint: %s", f)
		}
	}
	for _, s := range maintain {
		if slices.Contains(s.Actions, "secretsmanager:GetSecretValue") || s.Effect == "Deny" {
			t.Errorf("maintain statement %+v", s)
		}
	}
	if n := num(t, e.attr("aws_iam_role.maintain", "count")); n != 1 {
		t.Errorf("maintain role count %d with maintain deployed", n)
	}
	if got := e.local("function_role_arns").GetAttr("maintain").AsString(); !strings.HasSuffix(got, ":role/t-maintain") {
		t.Errorf("maintain runs as %s", got)
	}
	if got := e.local("function_role_arns").GetAttr("stream").AsString(); !strings.HasSuffix(got, ":role/t-lambda") {
		t.Errorf("stream runs as %s", got)
	}
	without := tableEvaluator(t, map[string]cty.Value{"functions": hclValue(t, `{stream = {}, snapshot = {}}`)}).withResources()
	if n := num(t, without.attr("aws_iam_role.maintain", "count")); n != 0 {
		t.Errorf("maintain role count %d without maintain", n)
	}
}

// TestExtraEnvironmentIsSensitive (issue 15 item 5): plans never print it.
func TestExtraEnvironmentIsSensitive(t *testing.T) {
	b := loadModule(t, tableModule).variables["extra_environment"]
	a, ok := b.Body.Attributes["sensitive"]
	if !ok {
		t.Fatal("extra_environment is not sensitive")
	}
	if v, diags := a.Expr.Value(nil); diags.HasErrors() || !v.True() {
		t.Errorf("extra_environment sensitive = %#v", v)
	}
}
