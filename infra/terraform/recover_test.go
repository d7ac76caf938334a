package terraform_test

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// Issue 14 item 4: with spec.on_data_loss = "resnapshot" the module deploys the recover
// machine, sends the stream's results to EventBridge, starts the machine on outcome
// resnapshot_required with a role allowed to, and alarms on every re-snapshot; without it,
// none of that exists.
func TestResnapshotWiring(t *testing.T) {
	spec := strings.Replace(minimalSpec, `app_id = "orders-v1"`, `app_id = "orders-v1"
  on_data_loss = "resnapshot"`, 1)
	bus := "arn:aws:events:eu-west-1:123456789012:event-bus/default"
	for _, on := range []bool{true, false} {
		inputs := map[string]cty.Value{}
		if on {
			inputs["spec"] = hclValue(t, spec)
		}
		e := tableEvaluator(t, inputs).withResources()
		machines := e.local("state_machines")
		if got := machines.HasElement(cty.StringVal("recover")).True(); got != on {
			t.Errorf("on_data_loss resnapshot %v: recover machine deployed %v", on, got)
		}
		if !machines.HasElement(cty.StringVal("bootstrap")).True() {
			t.Errorf("bootstrap machine missing")
		}
		dest := e.attr("aws_lambda_function_event_invoke_config.stream", "destination_config", "on_success", "destination")
		if on && (dest.IsNull() || dest.AsString() != bus) {
			t.Errorf("on-success destination %#v, want %s", dest, bus)
		}
		if !on && !dest.IsNull() {
			t.Errorf("on-success destination %#v without on_data_loss resnapshot", dest)
		}
		want := int64(0)
		if on {
			want = 1
		}
		for _, r := range []string{"aws_cloudwatch_event_rule.resnapshot_required", "aws_cloudwatch_event_target.resnapshot_required", "aws_cloudwatch_metric_alarm.resnapshot"} {
			if n := num(t, e.attr(r, "count")); n != want {
				t.Errorf("on %v: %s count %d, want %d", on, r, n, want)
			}
		}
		if got := allows(e.policy("lambda"), "events:PutEvents", bus); got != on {
			t.Errorf("on %v: lambda role may put events %v", on, got)
		}
		recoverARN := "arn:aws:states:eu-west-1:123456789012:stateMachine:t-recover"
		if got := allows(e.policy("scheduler"), "states:StartExecution", recoverARN); got != on {
			t.Errorf("on %v: the rule's role may start the recover machine %v", on, got)
		}
		if !on {
			continue
		}
		pattern := str(t, e.attr("aws_cloudwatch_event_rule.resnapshot_required", "event_pattern"))
		for _, w := range []string{`"resnapshot_required"`, `"Lambda Function Invocation Result - Success"`, `t-stream`} {
			if !strings.Contains(pattern, w) {
				t.Errorf("event pattern %s lacks %s", pattern, w)
			}
		}
		if got := str(t, e.attr("aws_cloudwatch_event_target.resnapshot_required", "arn")); got != recoverARN {
			t.Errorf("rule target %s", got)
		}
		if got := str(t, e.attr("aws_cloudwatch_metric_alarm.resnapshot", "metric_name")); got != "Resnapshots" {
			t.Errorf("alarm metric %s", got)
		}
		if n := num(t, e.attr("aws_cloudwatch_metric_alarm.resnapshot", "threshold")); n != 1 {
			t.Errorf("alarm threshold %d: it must fire on every re-snapshot", n)
		}
	}
}

// Issue 14 item 5: with spec.snapshot_on_switch the module deploys the recover machine and
// starts it on outcome switch_snapshot_required too, but adds no re-snapshot alarm (a
// switch snapshot loses nothing).
func TestSwitchSnapshotWiring(t *testing.T) {
	spec := strings.Replace(minimalSpec, `app_id = "orders-v1"`, `app_id = "orders-v1"
  snapshot_on_switch = true`, 1)
	e := tableEvaluator(t, map[string]cty.Value{"spec": hclValue(t, spec)}).withResources()
	if !e.local("state_machines").HasElement(cty.StringVal("recover")).True() {
		t.Errorf("snapshot_on_switch: recover machine not deployed")
	}
	for r, want := range map[string]int64{"aws_cloudwatch_event_rule.resnapshot_required": 1, "aws_cloudwatch_event_target.resnapshot_required": 1,
		"aws_cloudwatch_metric_alarm.resnapshot": 0} {
		if n := num(t, e.attr(r, "count")); n != want {
			t.Errorf("%s count %d, want %d", r, n, want)
		}
	}
	pattern := str(t, e.attr("aws_cloudwatch_event_rule.resnapshot_required", "event_pattern"))
	if !strings.Contains(pattern, `"switch_snapshot_required"`) {
		t.Errorf("event pattern %s lacks switch_snapshot_required", pattern)
	}
	recoverARN := "arn:aws:states:eu-west-1:123456789012:stateMachine:t-recover"
	if !allows(e.policy("scheduler"), "states:StartExecution", recoverARN) {
		t.Errorf("the rule's role may not start the recover machine")
	}
}

// snapshot_on_switch with chunked snapshots is accepted, and deploys no recover machine
// and no rule: the stream opens the chunked switch snapshot itself, the backfill machine
// reads it.
func TestChunkedSwitchSnapshotWiring(t *testing.T) {
	spec := with(hclValue(t, minimalSpec), "snapshot", cty.StringVal("chunked"))
	spec = with(spec, "snapshot_on_switch", cty.True)
	e := tableEvaluator(t, map[string]cty.Value{"spec": spec}).withResources()
	if failed := e.failedValidations("spec"); len(failed) > 0 {
		t.Fatalf("chunked spec with snapshot_on_switch refused: %q", failed)
	}
	if e.local("state_machines").HasElement(cty.StringVal("recover")).True() || !e.local("state_machines").HasElement(cty.StringVal("backfill")).True() {
		t.Errorf("state machines %#v, want backfill and no recover", e.local("state_machines"))
	}
	if n := num(t, e.attr("aws_cloudwatch_event_rule.resnapshot_required", "count")); n != 0 {
		t.Errorf("resnapshot_required rule count %d, want 0", n)
	}
}
