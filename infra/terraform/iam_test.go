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
// Manager and DynamoDB, and the ENI management Lambda does with the role inside a VPC.
var lambdaPolicyExtras = []string{
	"logs:CreateLogStream", "logs:PutLogEvents",
	"kms:Decrypt", "kms:GenerateDataKey",
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
	doc, ok := m.data["aws_iam_policy_document.lambda"]
	if !ok {
		t.Fatal("no data.aws_iam_policy_document.lambda")
	}
	have := policyActions(t, doc)
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
var specLocations = map[string]string{"Bronze": "bronze", "FactsTable": "facts", "Checkpoint": "checkpoint"}

// TestS3LocationsAreWhatTheFunctionsOpen: the S3 grant covers exactly the spec URLs
// internal/connect opens (Table / location.Open with spec.<Field>), no more and no fewer.
func TestS3LocationsAreWhatTheFunctionsOpen(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot, "internal/connect/open.go"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range regexp.MustCompile(`\(ctx, spec\.([A-Za-z]+), cfg\)`).FindAllStringSubmatch(string(src), -1) {
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
