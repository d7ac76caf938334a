package terraform_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func tableEvaluator(t *testing.T, inputs map[string]cty.Value) *evaluator {
	t.Helper()
	all := map[string]cty.Value{"name": cty.StringVal("t"), "spec": hclValue(t, minimalSpec)}
	for k, v := range inputs {
		all[k] = v
	}
	return newEvaluator(t, loadModule(t, tableModule), all).withAWS()
}

// TestDefaultPathsReachTheRepository: from a checkout, the module finds dist/<fn>.zip
// (make build) and statemachine/*.asl.json at the repository root.
func TestDefaultPathsReachTheRepository(t *testing.T) {
	e := tableEvaluator(t, nil)
	fns := e.local("functions")
	for _, fn := range []string{"stream", "snapshot"} {
		f := fns.GetAttr(fn)
		if got, want := filepath.Clean(f.GetAttr("zip").AsString()), filepath.Join(repoRoot, "dist", fn+".zip"); got != want {
			t.Errorf("functions.%s.zip = %s, want %s", fn, got, want)
		}
		if got := f.GetAttr("function_name").AsString(); got != "t-"+fn {
			t.Errorf("function name %s", got)
		}
	}
	stream := fns.GetAttr("stream")
	for attr, want := range map[string]int64{"timeout": 300, "memory_size": 2048, "ephemeral_storage": 2048} {
		if got, _ := stream.GetAttr(attr).AsBigFloat().Int64(); got != want {
			t.Errorf("stream %s %d, want the default %d", attr, got, want)
		}
	}
	if got, want := filepath.Clean(e.local("machine_files").GetAttr("bootstrap").AsString()), filepath.Join(repoRoot, "statemachine", "bootstrap.asl.json"); got != want {
		t.Errorf("machine_files.bootstrap = %s, want %s", got, want)
	}
	var ph []string
	for it := e.local("machine_placeholders").GetAttr("bootstrap").ElementIterator(); it.Next(); {
		_, v := it.Element()
		ph = append(ph, v.AsString())
	}
	slices.Sort(ph)
	if !slices.Equal(ph, []string{"snapshot_function_arn", "stream_function_arn"}) {
		t.Errorf("bootstrap placeholders %q", ph)
	}
	if n := e.local("self_starting_machines").LengthInt(); n != 0 {
		t.Errorf("%d self-starting machines; bootstrap does not restart itself", n)
	}
}

func TestStateMachinePreconditions(t *testing.T) {
	path := cty.StringVal(filepath.Join(tableModule, "../../../../statemachine/bootstrap.asl.json"))
	if failed := tableEvaluator(t, nil).failedPreconditions("aws_sfn_state_machine.this", "bootstrap", path); len(failed) > 0 {
		t.Errorf("defaults: %q", failed)
	}
	e := tableEvaluator(t, map[string]cty.Value{"functions": hclValue(t, `{stream = {}}`)})
	failed := e.failedPreconditions("aws_sfn_state_machine.this", "bootstrap", path)
	if len(failed) != 1 || !strings.Contains(failed[0], "does not deploy (add them to var.functions): snapshot.") {
		t.Errorf("without snapshot: %q", failed)
	}
	missing := cty.StringVal(filepath.Join(tableModule, "../../../../statemachine/nope.asl.json"))
	failed = tableEvaluator(t, map[string]cty.Value{"state_machines": hclValue(t, `["nope"]`)}).failedPreconditions("aws_sfn_state_machine.this", "nope", missing)
	if len(failed) != 1 || !strings.Contains(failed[0], "No state machine definition") {
		t.Errorf("missing file: %q", failed)
	}
}

func TestLambdaPreconditions(t *testing.T) {
	spec := hclValue(t, minimalSpec)
	cases := []struct {
		name   string
		inputs map[string]cty.Value
		want   []string // substrings of the failing messages, zip aside
	}{
		{"defaults", nil, nil},
		{"max_seconds within", map[string]cty.Value{"spec": with(spec, "max_seconds", cty.NumberIntVal(240))}, nil},
		{"max_seconds past the margin", map[string]cty.Value{"spec": with(spec, "max_seconds", cty.NumberIntVal(280))}, []string{"less than the stream's timeout minus its 30 s margin (270 s)"}},
		{"numPartitions 14 fits", map[string]cty.Value{"spec": with(spec, "options.numPartitions", cty.NumberIntVal(14))}, nil},
		{"numPartitions 16 overflows /tmp", map[string]cty.Value{"spec": with(spec, "options.numPartitions", cty.NumberIntVal(16))}, []string{"at least 2304 MB of ephemeral_storage"}},
		{"numPartitions 16 with more /tmp", map[string]cty.Value{
			"spec":      with(spec, "options.numPartitions", cty.NumberIntVal(16)),
			"functions": hclValue(t, `{stream = {ephemeral_storage = 4096}, snapshot = {}}`),
		}, nil},
		{"password_env unset", map[string]cty.Value{"spec": with(with(spec, "source.password_secret_arn", cty.NullVal(cty.String)), "source.password_env", cty.StringVal("PW"))}, []string{"password_env names a variable"}},
		{"environment over 4 KB", map[string]cty.Value{
			"extra_environment": cty.ObjectVal(map[string]cty.Value{"BIG": cty.StringVal(strings.Repeat("x", 3900))}),
		}, []string{"Lambda allows 4 KB for all their names and values together"}},
		{"password_env set", map[string]cty.Value{
			"spec":              with(with(spec, "source.password_secret_arn", cty.NullVal(cty.String)), "source.password_env", cty.StringVal("PW")),
			"extra_environment": hclValue(t, `{PW = "x"}`),
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := tableEvaluator(t, c.inputs)
			var failed []string
			for _, m := range e.failedPreconditions("aws_lambda_function.this", "stream", e.local("functions").GetAttr("stream")) {
				if !strings.Contains(m, "run make build") {
					failed = append(failed, m)
				}
			}
			if len(failed) != len(c.want) {
				t.Fatalf("failed %q, want %q", failed, c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(failed[i], w) {
					t.Errorf("failed %q, want %q", failed[i], w)
				}
			}
		})
	}
}

// TestPolicyScopes: the ARNs the functions' policy is built from.
func TestPolicyScopes(t *testing.T) {
	e := tableEvaluator(t, map[string]cty.Value{"spec": with(hclValue(t, minimalSpec), "storage.dynamo_table", cty.StringVal("delta_log"))})
	if got := e.local("dynamo_table_arn").AsString(); got != "arn:aws:dynamodb:eu-west-1:123456789012:table/delta_log" {
		t.Errorf("dynamo_table_arn %s", got)
	}
	if !e.local("uses_dynamo").True() {
		t.Error("uses_dynamo false with storage.dynamo_table set")
	}
	// storage.dynamo_region (Spark's us-east-1 log table) is where the grant points.
	spark := with(with(hclValue(t, minimalSpec), "storage.dynamo_table", cty.StringVal("delta_log")), "storage.dynamo_region", cty.StringVal("us-east-1"))
	if got := tableEvaluator(t, map[string]cty.Value{"spec": spark}).local("dynamo_table_arn").AsString(); got != "arn:aws:dynamodb:us-east-1:123456789012:table/delta_log" {
		t.Errorf("dynamo_table_arn with storage.dynamo_region: %s", got)
	}
	var secrets []string
	for it := e.local("secret_arns").ElementIterator(); it.Next(); {
		_, v := it.Element()
		secrets = append(secrets, v.AsString())
	}
	arn := "arn:aws:secretsmanager:eu-west-1:123456789012:secret:shop-reader"
	if !slices.Equal(secrets, []string{arn, arn + "-??????"}) {
		t.Errorf("secret_arns %q", secrets)
	}

	plain := tableEvaluator(t, nil)
	if plain.local("uses_dynamo").True() {
		t.Error("uses_dynamo true without storage.dynamo_table (S3 conditional puts need no DynamoDB)")
	}
	if got := plain.local("s3_buckets").LengthInt(); got != 1 {
		t.Errorf("%d buckets, want 1", got)
	}
}
