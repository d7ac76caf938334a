# Recovery after data loss without a person (docs/stream.md "Data loss"): with
# spec.on_data_loss = "resnapshot" and full snapshots, a stream invocation that finds its
# start purged records an attempt to open the next generation and returns
# {"outcome": "resnapshot_required", ...}. The stream's asynchronous invocations send their
# result to EventBridge's default bus (the on-success destination, main.tf); this rule
# starts the recover machine (statemachine/recover.asl.json) on that outcome, so the whole
# table is read by the snapshot steps, never by a stream invocation. The stream asks again
# on every run until an execution claims the attempt (a lost event is asked for again; a
# second execution finds the claim and ends). An alarm fires on every committed
# re-snapshot (the Resnapshots metric the recover_commit step writes, one per generation).
# With spec.snapshot_on_switch and full snapshots the same machine and rule take the whole
# snapshot the stream asks for after switching to a newer capture instance ({"outcome":
# "switch_snapshot_required"}), claimed and asked for again the same way. With chunked
# snapshots the stream opens the switch snapshot itself and the backfill machine reads it.

locals {
  resnapshots = var.spec.on_data_loss == "resnapshot"
  # snapshot_on_switch with full snapshots: the switch snapshot is taken by the same
  # machine, on outcome switch_snapshot_required (docs/stream.md "Schema changes"); with
  # chunked ones the stream opens it and the backfill machine reads it.
  recovers = local.resnapshots || (coalesce(var.spec.snapshot_on_switch, false) && var.spec.snapshot != "chunked")
  # The recover machine is deployed with on_data_loss = "resnapshot" (both snapshot modes:
  # a chunked re-snapshot needs no machine, but one left open from full mode still does).
  # backfill runs a chunked snapshot's waves; seed appends a copy (seed_copies).
  state_machines = toset(concat([for m in var.state_machines : m],
    local.recovers ? ["recover"] : [],
    local.deploys_backfill ? ["backfill"] : [],
  local.deploys_seed ? ["seed"] : []))
  default_bus_arn = "arn:${local.partition}:events:${local.region}:${local.account}:event-bus/default"
  recover_machine = "arn:${local.partition}:states:${local.region}:${local.account}:stateMachine:${var.name}-recover"
}

resource "aws_cloudwatch_event_rule" "resnapshot_required" {
  count = local.recovers ? 1 : 0

  name        = "${var.name}-resnapshot-required"
  description = "mssqlcdc stream of ${var.spec.app_id} needs a full re-snapshot after data loss, or a snapshot after a capture-instance switch: start the recover machine"
  # Lambda's on-success destination event: detail.responsePayload is the stream's output.
  event_pattern = jsonencode({
    source        = ["lambda"]
    "detail-type" = ["Lambda Function Invocation Result - Success"]
    detail = {
      requestContext  = { functionArn = [{ prefix = aws_lambda_function.this["stream"].arn }] }
      responsePayload = { outcome = ["resnapshot_required", "switch_snapshot_required"] }
    }
  })
  tags = var.tags
}

resource "aws_cloudwatch_event_target" "resnapshot_required" {
  count = local.recovers ? 1 : 0

  rule     = aws_cloudwatch_event_rule.resnapshot_required[0].name
  arn      = aws_sfn_state_machine.this["recover"].arn
  role_arn = local.scheduler_role_arn
  # The machine's input: the stream's output (generation, attempt, gap), no row values.
  input_path = "$.detail.responsePayload"
}

resource "aws_cloudwatch_metric_alarm" "resnapshot" {
  count = var.alarms_enabled && local.resnapshots ? 1 : 0

  alarm_name        = "${var.name}-resnapshot"
  alarm_description = "The mssqlcdc stream of ${var.spec.app_id} lost changes to CDC cleanup and re-snapshotted into a new generation: changes in the gap (the resnapshot facts row's lost_from_ts .. lost_to_ts) are gone for good; rebuild downstream from the newest snapshot (docs/operations.md)."

  namespace   = "mssqlcdc"
  metric_name = "Resnapshots"
  dimensions = {
    app_id = var.spec.app_id
  }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"

  alarm_actions = var.alarm_actions
  tags          = var.tags
}
