package terraform_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// Issue 15 item 3: alarms that catch silence, an on-failure destination, a dashboard, and
// only the custom metrics the alarms need.

func num(t *testing.T, v cty.Value) int64 {
	t.Helper()
	if v.IsNull() || v.Type() != cty.Number {
		t.Fatalf("not a number: %#v", v)
	}
	n, _ := v.AsBigFloat().Int64()
	return n
}

func str(t *testing.T, v cty.Value) string {
	t.Helper()
	if v.IsNull() || v.Type() != cty.String {
		t.Fatalf("not a string: %#v", v)
	}
	return v.AsString()
}

// metricQueries evaluates the metric_query blocks of an alarm by id: the expression or the
// metric's namespace, name, stat, period and dimensions.
func metricQueries(t *testing.T, e *evaluator, alarm string) map[string]map[string]cty.Value {
	t.Helper()
	out := map[string]map[string]cty.Value{}
	for _, b := range e.block(alarm).Body.Blocks {
		if b.Type != "metric_query" {
			continue
		}
		q := map[string]cty.Value{}
		for name, a := range b.Body.Attributes {
			q[name] = e.mustEval(a.Expr)
		}
		for _, mb := range b.Body.Blocks {
			if mb.Type == "metric" {
				for name, a := range mb.Body.Attributes {
					q[name] = e.mustEval(a.Expr)
				}
			}
		}
		out[q["id"].AsString()] = q
	}
	return out
}

// TestIngestionLagAlarmCatchesSilence: the lag alarm breaches on missing data, and a
// period with no run of the stream counts as far behind while a period with runs but no
// lag reported (nothing new) counts as 0; its period always holds a scheduled run, within
// CloudWatch's limits on period × evaluation periods, for schedules from 1 minute to a day.
func TestIngestionLagAlarmCatchesSilence(t *testing.T) {
	const a = "aws_cloudwatch_metric_alarm.ingestion_lag"
	for _, every := range []int64{1, 5, 15, 60, 1440} {
		e := tableEvaluator(t, map[string]cty.Value{"schedule_every_minutes": cty.NumberIntVal(every)}).withResources()
		if got := str(t, e.attr(a, "treat_missing_data")); got != "breaching" {
			t.Errorf("every %d min: treat_missing_data %q, want breaching (silence is lag)", every, got)
		}
		if got := str(t, e.attr(a, "comparison_operator")); got != "GreaterThanThreshold" {
			t.Errorf("comparison_operator %q", got)
		}
		qs := metricQueries(t, e, a)
		lag, reported, runs := qs["lag"], qs["reported"], qs["runs"]
		if lag == nil || reported == nil || runs == nil || len(qs) != 3 {
			t.Fatalf("metric queries %v, want lag, reported and runs", qs)
		}
		// No run: far behind (1e9 s, above any threshold); runs but nothing reported: 0.
		if got := str(t, lag["expression"]); got != "IF(FILL(runs, 0) > 0, FILL(reported, 0), FILL(reported, 1000000000))" {
			t.Errorf("expression %q", got)
		}
		if !lag["return_data"].True() {
			t.Error("the expression is not what the alarm compares")
		}
		for q, want := range map[string][4]string{
			"reported": {"mssqlcdc", "IngestionLagSeconds", "Maximum", "app_id=orders-v1"},
			"runs":     {"AWS/Lambda", "Invocations", "Sum", "FunctionName=t-stream"},
		} {
			m := qs[q]
			dims := m["dimensions"].AsValueMap()
			var dim string
			for k, v := range dims {
				dim = k + "=" + v.AsString()
			}
			got := [4]string{str(t, m["namespace"]), str(t, m["metric_name"]), str(t, m["stat"]), dim}
			if got != want || len(dims) != 1 {
				t.Errorf("query %s = %v, want %v", q, got, want)
			}
			if r, ok := m["return_data"]; ok && r.True() {
				t.Errorf("query %s returns data", q)
			}
		}
		period := num(t, reported["period"])
		if num(t, runs["period"]) != period {
			t.Errorf("the two metrics' periods differ")
		}
		evals, points := num(t, e.attr(a, "evaluation_periods")), num(t, e.attr(a, "datapoints_to_alarm"))
		if period < every*60 || period%60 != 0 {
			t.Errorf("every %d min: period %d s must be a whole number of minutes holding one interval", every, period)
		}
		limit := int64(604800)
		if period < 3600 {
			limit = 86400
		}
		if period*evals > limit {
			t.Errorf("every %d min: period %d × %d evaluation periods exceeds CloudWatch's %d s", every, period, evals, limit)
		}
		if points < 1 || points > evals {
			t.Errorf("datapoints_to_alarm %d of %d", points, evals)
		}
		if got, want := num(t, e.attr(a, "threshold")), max(900, 3*60*every); got != want {
			t.Errorf("every %d min: default threshold %d, want %d", every, got, want)
		}
		if got := num(t, e.attr(a, "threshold")); got >= 1000000000 {
			t.Errorf("threshold %d does not catch the no-run value", got)
		}
	}
	e := tableEvaluator(t, map[string]cty.Value{"alarm_max_ingestion_lag_seconds": cty.NumberIntVal(120)}).withResources()
	if got := num(t, e.attr(a, "threshold")); got != 120 {
		t.Errorf("threshold %d, want the variable's 120", got)
	}
}

// TestStreamEventsDroppedAlarm: AsyncEventsDropped of the stream function.
func TestStreamEventsDroppedAlarm(t *testing.T) {
	e := tableEvaluator(t, nil).withResources()
	const a = "aws_cloudwatch_metric_alarm.stream_events_dropped"
	if got := str(t, e.attr(a, "metric_name")); got != "AsyncEventsDropped" {
		t.Errorf("metric %q", got)
	}
	if got := str(t, e.attr(a, "namespace")); got != "AWS/Lambda" {
		t.Errorf("namespace %q", got)
	}
	if got := e.attr(a, "dimensions").GetAttr("FunctionName").AsString(); got != "t-stream" {
		t.Errorf("FunctionName %q", got)
	}
	if n := num(t, e.attr(a, "count")); n != 1 {
		t.Errorf("count %d", n)
	}
	off := tableEvaluator(t, map[string]cty.Value{"alarms_enabled": cty.False}).withResources()
	for _, alarm := range []string{"ingestion_lag", "stream_events_dropped", "stream_errors", "retention_headroom"} {
		if n := num(t, off.attr("aws_cloudwatch_metric_alarm."+alarm, "count")); n != 0 {
			t.Errorf("alarms_enabled = false: %s count %d", alarm, n)
		}
	}
}

// TestStreamOnFailureDestination: the stream's asynchronous invocations send failure and
// drop records to the module's SQS queue by default, to the caller's queue or topic when
// given, nowhere when turned off; the functions' role may send exactly there.
func TestStreamOnFailureDestination(t *testing.T) {
	const cfg = "aws_lambda_function_event_invoke_config.stream"
	queue := "arn:aws:sqs:eu-west-1:123456789012:t-stream-failures"
	topic := "arn:aws:sns:eu-west-1:123456789012:ops"
	cases := []struct {
		name   string
		inputs map[string]cty.Value
		dest   string // "" for none
		action string
		queues int64
	}{
		{"default queue", nil, queue, "sqs:SendMessage", 1},
		{"own topic", map[string]cty.Value{"stream_failure_destination_arn": cty.StringVal(topic)}, topic, "sns:Publish", 0},
		{"off", map[string]cty.Value{"stream_failure_queue_enabled": cty.False}, "", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := tableEvaluator(t, c.inputs).withResources()
			got := e.attr(cfg, "destination_config", "on_failure", "destination")
			if c.dest == "" {
				if !got.IsNull() {
					t.Errorf("destination %#v, want none", got)
				}
			} else if got.IsNull() || got.AsString() != c.dest {
				t.Errorf("destination %#v, want %s", got, c.dest)
			}
			if n := num(t, e.attr("aws_sqs_queue.stream_failures", "count")); n != c.queues {
				t.Errorf("queues %d, want %d", n, c.queues)
			}
			pol := e.policy("lambda")
			for _, action := range []string{"sqs:SendMessage", "sns:Publish"} {
				want := action == c.action
				if got := allows(pol, action, c.dest); got != want && c.dest != "" {
					t.Errorf("%s on %s allowed %v, want %v", action, c.dest, got, want)
				}
				if allows(pol, action, "arn:aws:sqs:eu-west-1:123456789012:other") || allows(pol, action, "arn:aws:sns:eu-west-1:123456789012:other") {
					t.Errorf("%s allowed on another queue or topic", action)
				}
			}
		})
	}
	e := tableEvaluator(t, nil).withResources()
	if got := num(t, e.attr(cfg, "maximum_retry_attempts")); got != 0 {
		t.Errorf("maximum_retry_attempts %d", got)
	}
	if got := num(t, e.attr("aws_sqs_queue.stream_failures", "message_retention_seconds")); got != 14*24*3600 {
		t.Errorf("queue retention %d s, want 14 days", got)
	}
}

// TestDashboard: one dashboard per table with lag, headroom, rows per minute, MB/s,
// errors and the last batch, laid out on CloudWatch's 24-column grid, reading this
// table's metrics and log group; rows and MB/s come from the metrics when published, else
// from the log lines.
func TestDashboard(t *testing.T) {
	for _, metrics := range []string{`["IngestionLagSeconds", "RetentionHeadroomHours"]`, `["IngestionLagSeconds", "RetentionHeadroomHours", "Rows", "Bytes"]`} {
		e := tableEvaluator(t, map[string]cty.Value{"custom_metrics": hclValue(t, metrics)}).withResources()
		body := jsonValue(t, e.attr("aws_cloudwatch_dashboard.this", "dashboard_body")).(map[string]any)
		widgets := body["widgets"].([]any)
		byTitle := map[string]map[string]any{}
		for _, w := range widgets {
			wm := w.(map[string]any)
			p := wm["properties"].(map[string]any)
			byTitle[p["title"].(string)] = wm
			x, width := wm["x"].(float64), wm["width"].(float64)
			if x < 0 || x+width > 24 || wm["height"].(float64) <= 0 {
				t.Errorf("%s: x %v width %v off the 24-column grid", p["title"], x, width)
			}
			if p["region"] != "eu-west-1" {
				t.Errorf("%s: region %v", p["title"], p["region"])
			}
			if q, ok := p["query"].(string); ok && !strings.HasPrefix(q, "SOURCE '/aws/lambda/t-stream' |") {
				t.Errorf("%s: query %q does not read the stream's log group", p["title"], q)
			}
		}
		for _, want := range []string{"Ingestion lag, s (max)", "Retention headroom, h (min)", "Rows per minute", "Change data read, MB/s", "Errors, throttles, dropped events", "Last batch"} {
			if byTitle[want] == nil {
				t.Errorf("custom_metrics %s: no widget %q (have %d widgets)", metrics, want, len(widgets))
			}
		}
		published := strings.Contains(metrics, "Rows")
		for _, title := range []string{"Rows per minute", "Change data read, MB/s"} {
			w := byTitle[title]
			if w == nil {
				continue
			}
			if want := map[bool]string{true: "metric", false: "log"}[published]; w["type"] != want {
				t.Errorf("custom_metrics %s: %q is a %v widget, want %s", metrics, title, w["type"], want)
			}
		}
		lag := byTitle["Ingestion lag, s (max)"]["properties"].(map[string]any)
		if got := lag["metrics"].([]any)[0].([]any); !slices.Equal(toStrings(got), []string{"mssqlcdc", "IngestionLagSeconds", "app_id", "orders-v1"}) {
			t.Errorf("lag widget metric %v", got)
		}
		errs := byTitle["Errors, throttles, dropped events"]["properties"].(map[string]any)
		var seen []string
		for _, m := range errs["metrics"].([]any) {
			seen = append(seen, strings.Join(toStrings(m.([]any))[:4], " "))
		}
		for _, want := range []string{
			"AWS/Lambda Errors FunctionName t-stream", "AWS/Lambda Errors FunctionName t-snapshot",
			"AWS/Lambda AsyncEventsDropped FunctionName t-stream",
			"AWS/States ExecutionsFailed StateMachineArn arn:aws:states:eu-west-1:123456789012:stateMachine:t-bootstrap",
		} {
			if !slices.Contains(seen, want) {
				t.Errorf("errors widget lacks %s (has %q)", want, seen)
			}
		}
	}
	off := tableEvaluator(t, map[string]cty.Value{"dashboard_enabled": cty.False}).withResources()
	if n := num(t, off.attr("aws_cloudwatch_dashboard.this", "count")); n != 0 {
		t.Errorf("dashboard_enabled = false: count %d", n)
	}
}

// toStrings keeps the string elements of a widget's metric array (its options object
// aside).
func toStrings(a []any) []string {
	var out []string
	for _, v := range a {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// TestCustomMetrics: by default only the two metrics the alarms need are published (the
// rest stay in the log line); MSSQLCDC_METRICS tells the stream which; every name the
// module accepts is one the stream's handler emits; removing an alarm's metric while the
// alarms are on is refused.
func TestCustomMetrics(t *testing.T) {
	e := tableEvaluator(t, nil)
	if got := e.local("environment").GetAttr("MSSQLCDC_METRICS").AsString(); got != "IngestionLagSeconds,RetentionHeadroomHours" {
		t.Errorf("MSSQLCDC_METRICS = %q", got)
	}
	handler, err := os.ReadFile(filepath.Join(repoRoot, "functions/stream/handler.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"IngestionLagSeconds", "RetentionHeadroomHours", "Rows", "Bytes", "DurationMs", "CaptureLagSeconds"} {
		if !strings.Contains(string(handler), `"`+m+`"`) {
			t.Errorf("functions/stream/handler.go emits no metric %q, which custom_metrics accepts", m)
		}
		ok := newEvaluator(t, loadModule(t, tableModule), map[string]cty.Value{
			"name": cty.StringVal("t"), "spec": hclValue(t, minimalSpec), "custom_metrics": cty.ListVal([]cty.Value{cty.StringVal(m)}),
		}).failedValidations("custom_metrics")
		if len(ok) > 0 {
			t.Errorf("custom_metrics [%s] refused: %q", m, ok)
		}
	}
	bad := newEvaluator(t, loadModule(t, tableModule), map[string]cty.Value{
		"name": cty.StringVal("t"), "spec": hclValue(t, minimalSpec), "custom_metrics": hclValue(t, `["Latency"]`),
	}).failedValidations("custom_metrics")
	if len(bad) != 1 {
		t.Errorf("custom_metrics [Latency]: failed %q, want one", bad)
	}

	only := tableEvaluator(t, map[string]cty.Value{"custom_metrics": hclValue(t, `["Rows"]`)})
	failed := only.failedPreconditions("aws_lambda_function.this", "stream", only.local("functions").GetAttr("stream"))
	if !slices.ContainsFunc(failed, func(m string) bool { return strings.Contains(m, "keep both in custom_metrics") }) {
		t.Errorf("alarms on without their metrics: %q", failed)
	}
	quiet := tableEvaluator(t, map[string]cty.Value{"custom_metrics": hclValue(t, `[]`), "alarms_enabled": cty.False})
	for _, m := range quiet.failedPreconditions("aws_lambda_function.this", "stream", quiet.local("functions").GetAttr("stream")) {
		if strings.Contains(m, "custom_metrics") {
			t.Errorf("no metrics and no alarms refused: %s", m)
		}
	}
}

// TestLakeDashboard: the shared module's one dashboard for every table (off by default)
// finds every app_id's lag and headroom and the functions' errors by SEARCH.
func TestLakeDashboard(t *testing.T) {
	shared := loadModule(t, "modules/mssqlcdc-shared")
	if n := num(t, newEvaluator(t, shared, nil).withAWS().attr("aws_cloudwatch_dashboard.lake", "count")); n != 0 {
		t.Errorf("lake dashboard count %d by default", n)
	}
	e := newEvaluator(t, shared, map[string]cty.Value{"dashboard_name": cty.StringVal("lake")}).withAWS()
	body := jsonValue(t, e.attr("aws_cloudwatch_dashboard.lake", "dashboard_body")).(map[string]any)
	var exprs []string
	for _, w := range body["widgets"].([]any) {
		p := w.(map[string]any)["properties"].(map[string]any)
		for _, m := range p["metrics"].([]any) {
			for _, o := range m.([]any) {
				if om, ok := o.(map[string]any); ok {
					exprs = append(exprs, om["expression"].(string))
				}
			}
		}
	}
	for _, want := range []string{
		`SEARCH('{mssqlcdc,app_id} MetricName="IngestionLagSeconds"', 'Maximum', 300)`,
		`SEARCH('{mssqlcdc,app_id} MetricName="RetentionHeadroomHours"', 'Minimum', 300)`,
		`SEARCH('{AWS/Lambda,FunctionName} MetricName="Errors" mssqlcdc', 'Sum', 300)`,
	} {
		if !slices.Contains(exprs, want) {
			t.Errorf("lake dashboard lacks %s (has %q)", want, exprs)
		}
	}
}
