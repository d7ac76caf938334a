package terraform_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/mssqlcdc/mssqlcdc/core/config"
)

// TestChunkedDeploysTheBackfill: spec.snapshot = "chunked" deploys the backfill-wave
// function (2048 MB, 900 s) and the backfill machine that calls it, which the states role
// may invoke and which may start a fresh execution of itself; the spec document carries
// the mode as core/config parses it. A full-mode table deploys neither.
func TestChunkedDeploysTheBackfill(t *testing.T) {
	full := tableEvaluator(t, nil).withResources()
	if full.local("functions").Type().HasAttribute("backfill-wave") || full.local("state_machines").HasElement(cty.StringVal("backfill")).True() {
		t.Error("backfill deployed for a full-mode table")
	}

	spec := with(hclValue(t, minimalSpec), "snapshot", cty.StringVal("chunked"))
	spec = with(spec, "chunk_rows", cty.NumberIntVal(500000))
	e := tableEvaluator(t, map[string]cty.Value{"spec": spec}).withResources()
	if failed := e.failedValidations("spec"); len(failed) > 0 {
		t.Fatalf("chunked spec refused: %q", failed)
	}
	fn := e.local("functions").GetAttr("backfill-wave")
	if num(t, fn.GetAttr("memory_size")) != 2048 || num(t, fn.GetAttr("timeout")) != 900 || str(t, fn.GetAttr("function_name")) != "t-backfill-wave" {
		t.Errorf("backfill-wave function %#v", fn)
	}
	if got := e.local("function_role_arns").GetAttr("backfill-wave").AsString(); !strings.HasSuffix(got, ":role/t-lambda") {
		t.Errorf("backfill-wave runs as %s", got)
	}
	if !e.local("state_machines").HasElement(cty.StringVal("backfill")).True() {
		t.Fatal("backfill machine not deployed")
	}
	if failed := e.failedPreconditions("aws_sfn_state_machine.this", "backfill", cty.StringVal(repoRoot+"/statemachine/backfill.asl.json")); len(failed) > 0 {
		t.Errorf("backfill machine preconditions: %q", failed)
	}
	states := e.policy("states")
	if !allows(states, "lambda:InvokeFunction", "arn:aws:lambda:eu-west-1:123456789012:function:t-backfill-wave") {
		t.Error("the states role may not invoke t-backfill-wave")
	}
	if !allows(states, "states:StartExecution", "arn:aws:states:eu-west-1:123456789012:stateMachine:t-backfill") {
		t.Error("the backfill machine may not restart itself as a new execution")
	}
	doc := e.local("spec_json").AsString()
	parsed, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("config.Parse(%s): %v", doc, err)
	}
	if parsed.Snapshot != "chunked" || parsed.ChunkRows == nil || *parsed.ChunkRows != 500000 {
		t.Errorf("spec document %s: snapshot %q chunk_rows %v", doc, parsed.Snapshot, parsed.ChunkRows)
	}
	// Overriding its size keeps the machine.
	big := tableEvaluator(t, map[string]cty.Value{"spec": spec,
		"functions": hclValue(t, `{stream = {}, snapshot = {}, "backfill-wave" = {memory_size = 4096}}`)}).withResources()
	if n := num(t, big.local("functions").GetAttr("backfill-wave").GetAttr("memory_size")); n != 4096 {
		t.Errorf("backfill-wave memory %d with an override of 4096", n)
	}
}

// TestSeedCopiesDeployTheSeed: seed_copies deploys the seed function and machine, and the
// functions' role may list and read exactly those prefixes — no write, no other prefix of
// the bucket. Without it neither is deployed. A URL that is not s3://bucket/prefix is
// refused.
func TestSeedCopiesDeployTheSeed(t *testing.T) {
	const copyObj = "arn:aws:s3:::exports/orders/2026-11-30/part-00000.parquet"
	none := tableEvaluator(t, nil).withResources()
	if none.local("functions").Type().HasAttribute("seed") || none.local("state_machines").HasElement(cty.StringVal("seed")).True() {
		t.Error("seed deployed without seed_copies")
	}
	if allows(none.policy("lambda"), "s3:GetObject", copyObj) {
		t.Error("the functions' role reads a copy without seed_copies")
	}

	e := tableEvaluator(t, map[string]cty.Value{"seed_copies": hclValue(t, `["s3://exports/orders/2026-11-30", "s3://lake/copies/orders"]`)}).withResources()
	if failed := e.failedValidations("seed_copies"); len(failed) > 0 {
		t.Fatalf("seed_copies refused: %q", failed)
	}
	fn := e.local("functions").GetAttr("seed")
	if num(t, fn.GetAttr("timeout")) != 900 || str(t, fn.GetAttr("function_name")) != "t-seed" {
		t.Errorf("seed function %#v", fn)
	}
	if !e.local("state_machines").HasElement(cty.StringVal("seed")).True() {
		t.Fatal("seed machine not deployed")
	}
	if failed := e.failedPreconditions("aws_sfn_state_machine.this", "seed", cty.StringVal(repoRoot+"/statemachine/seed.asl.json")); len(failed) > 0 {
		t.Errorf("seed machine preconditions: %q", failed)
	}
	if !allows(e.policy("states"), "lambda:InvokeFunction", "arn:aws:lambda:eu-west-1:123456789012:function:t-seed") {
		t.Error("the states role may not invoke t-seed")
	}
	lambda := e.policy("lambda")
	for _, c := range []struct {
		action, resource string
		want             bool
	}{
		{"s3:GetObject", copyObj, true},
		{"s3:GetObject", "arn:aws:s3:::lake/copies/orders/_delta_log/00000000000000000003.json", true},
		{"s3:PutObject", copyObj, false},
		{"s3:DeleteObject", copyObj, false},
		{"s3:GetObject", "arn:aws:s3:::exports/customers/part-00000.parquet", false},
		{"s3:GetObject", "arn:aws:s3:::exports/orders/2026-11-30-other/part-00000.parquet", false},
	} {
		if got := allows(lambda, c.action, c.resource); got != c.want {
			t.Errorf("%s on %s: allowed %v, want %v", c.action, c.resource, got, c.want)
		}
	}
	var prefixes []string
	for _, s := range lambda {
		if slices.Contains(s.Actions, "s3:ListBucket") && slices.Contains(s.Resources, "arn:aws:s3:::exports") {
			for _, c := range s.Conditions {
				prefixes = append(prefixes, c.Values...)
			}
		}
	}
	if !slices.Equal(prefixes, []string{"orders/2026-11-30", "orders/2026-11-30/*"}) {
		t.Errorf("list of the exports bucket limited to %q", prefixes)
	}

	for _, bad := range []string{`["exports/orders"]`, `["s3://exports/orders/"]`, `["s3://exports"]`, `["s3://exports/orders/*"]`} {
		e := tableEvaluator(t, map[string]cty.Value{"seed_copies": hclValue(t, bad)})
		if failed := e.failedValidations("seed_copies"); len(failed) == 0 {
			t.Errorf("seed_copies = %s accepted", bad)
		}
	}
}
