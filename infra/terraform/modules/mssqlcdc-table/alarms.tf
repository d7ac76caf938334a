# CloudWatch alarms on what needs a person, silence included: the stream failing, the
# stream falling behind or not reporting at all (ingestion lag, missing data breaching),
# scheduled invocations dropped, the stream falling behind SQL Server's CDC cleanup (changes
# about to be purged unread: DataLossError next), and a state machine execution failing.
# Off with alarms_enabled = false. Also the stream's on-failure destination: a record of
# every asynchronous invocation that failed or was dropped.

locals {
  # Several schedule intervals, at least 5 minutes, at most an hour per period.
  alarm_period = min(3600, 60 * max(5, var.schedule_every_minutes))
  # The lag alarm's period holds at least one scheduled invocation, so a period without
  # any run (and without a batch of a longer one) means the stream did not run. CloudWatch
  # allows 3 periods of up to a day here (a total of at most one day below one-hour periods,
  # seven days above).
  lag_period              = 60 * max(5, var.schedule_every_minutes)
  alarm_max_ingestion_lag = coalesce(var.alarm_max_ingestion_lag_seconds, max(900, 3 * 60 * var.schedule_every_minutes))

  # The stream's on-failure destination: the module's queue, or the caller's SQS queue or
  # SNS topic, or none.
  stream_failure_destination = (
    var.stream_failure_destination_arn != null ? var.stream_failure_destination_arn :
    var.stream_failure_queue_enabled ? aws_sqs_queue.stream_failures[0].arn : null
  )
  stream_failure_destination_service = local.stream_failure_destination == null ? null : split(":", local.stream_failure_destination)[2]
}

# Records of the stream's failed and dropped asynchronous invocations (the event, the
# error type and message, the attempt count), kept 14 days. Nothing reads them
# automatically: they are what to look at when the errors or dropped-events alarm fires
# (docs/operations.md). Idle, a queue costs nothing.
resource "aws_sqs_queue" "stream_failures" {
  count = var.stream_failure_queue_enabled && var.stream_failure_destination_arn == null ? 1 : 0

  name                      = "${var.name}-stream-failures"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
  tags                      = var.tags
}

resource "aws_cloudwatch_metric_alarm" "stream_errors" {
  count = var.alarms_enabled ? 1 : 0

  alarm_name        = "${var.name}-stream-errors"
  alarm_description = "The mssqlcdc stream of ${var.spec.app_id} failed in 2 of the last 3 periods; its log group ${aws_cloudwatch_log_group.function["stream"].name} names the error type."

  namespace   = "AWS/Lambda"
  metric_name = "Errors"
  dimensions = {
    FunctionName = aws_lambda_function.this["stream"].function_name
  }
  statistic           = "Sum"
  period              = local.alarm_period
  evaluation_periods  = 3
  datapoints_to_alarm = 2
  threshold           = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"

  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = var.tags
}

# The apply function (with spec.silver) failed in 2 of the last 3 hours: silver stops
# moving (a BronzeChangedError, a refused key, a storage failure). Hourly periods, since it
# runs every 15 minutes by default and one failed run the next one retries.
resource "aws_cloudwatch_metric_alarm" "apply_errors" {
  count = var.alarms_enabled && local.deploys_apply ? 1 : 0

  alarm_name        = "${var.name}-apply-errors"
  alarm_description = "The mssqlcdc silver apply of ${var.spec.app_id} failed in 2 of the last 3 hours, so silver is not kept up; its log group ${aws_cloudwatch_log_group.function["apply"].name} names the error type (docs/handlers.md, apply errors)."

  namespace   = "AWS/Lambda"
  metric_name = "Errors"
  dimensions = {
    FunctionName = aws_lambda_function.this["apply"].function_name
  }
  statistic           = "Sum"
  period              = 3600
  evaluation_periods  = 3
  datapoints_to_alarm = 2
  threshold           = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"

  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = var.tags
}

# A reconcile run (with spec.reconcile) found silver differing from the source: a
# mismatching bucket, a missing or extra or changed row, or a chunk check failing
# (ReconcileMismatches, written by functions/reconcile as an EMF line per run). The report
# table's newest run says where (docs/reconcile.md). Also when the reconcile itself fails.
resource "aws_cloudwatch_metric_alarm" "reconcile_mismatches" {
  count = var.alarms_enabled && local.deploys_reconcile ? 1 : 0

  alarm_name        = "${var.name}-reconcile-mismatches"
  alarm_description = "The mssqlcdc reconcile of ${var.spec.app_id} found silver differing from the source; the newest run in ${var.spec.reconcile.report_table} says where (docs/reconcile.md)."

  namespace   = "mssqlcdc"
  metric_name = "ReconcileMismatches"
  dimensions = {
    app_id = var.spec.app_id
  }
  statistic           = "Maximum"
  period              = 3600
  evaluation_periods  = 1
  threshold           = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"

  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = var.tags
}

resource "aws_cloudwatch_metric_alarm" "reconcile_errors" {
  count = var.alarms_enabled && local.deploys_reconcile ? 1 : 0

  alarm_name        = "${var.name}-reconcile-errors"
  alarm_description = "The mssqlcdc reconcile of ${var.spec.app_id} failed; its log group ${aws_cloudwatch_log_group.function["reconcile"].name} names the error type (docs/handlers.md, reconcile errors)."

  namespace   = "AWS/Lambda"
  metric_name = "Errors"
  dimensions = {
    FunctionName = aws_lambda_function.this["reconcile"].function_name
  }
  statistic           = "Sum"
  period              = 3600
  evaluation_periods  = 1
  threshold           = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"

  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = var.tags
}

# RetentionHeadroomHours is written by the stream per batch (CloudWatch Embedded Metric
# Format, namespace mssqlcdc, dimension app_id): how long before the capture job's cleanup
# reaches the oldest change the stream has not read.
resource "aws_cloudwatch_metric_alarm" "retention_headroom" {
  count = var.alarms_enabled ? 1 : 0

  alarm_name        = "${var.name}-retention-headroom"
  alarm_description = "The mssqlcdc stream of ${var.spec.app_id} is less than ${var.alarm_min_retention_headroom_hours} h ahead of SQL Server's CDC cleanup: catch up (raise memory, maxCommitsPerBatch, the schedule) or extend the retention of the capture job."

  namespace   = "mssqlcdc"
  metric_name = "RetentionHeadroomHours"
  dimensions = {
    app_id = var.spec.app_id
  }
  statistic           = "Minimum"
  period              = local.alarm_period
  evaluation_periods  = 1
  threshold           = var.alarm_min_retention_headroom_hours
  comparison_operator = "LessThanThreshold"
  treat_missing_data  = "missing"

  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = var.tags
}

# IngestionLagSeconds is written by the stream once per batch: how far bronze is behind
# the newest commit SQL Server had captured. Missing data breaches: a stream that stopped
# running is as late as a slow one. A period with invocations of the stream
# (AWS/Lambda Invocations, a free metric) but no lag reported ran and found nothing new:
# it counts as a lag of 0, so an idle table does not alarm; a period with neither counts
# as far behind. An invocation that fails is the errors alarm's.
resource "aws_cloudwatch_metric_alarm" "ingestion_lag" {
  count = var.alarms_enabled ? 1 : 0

  alarm_name        = "${var.name}-ingestion-lag"
  alarm_description = "The mssqlcdc stream of ${var.spec.app_id} is more than ${local.alarm_max_ingestion_lag} s behind SQL Server, or did not run, in 2 of the last 3 periods of ${local.lag_period} s: check ${aws_cloudwatch_log_group.function["stream"].name}, the schedule and the errors alarm (docs/operations.md)."

  metric_query {
    id          = "lag"
    label       = "ingestion lag (s); no run at all counts as 1e9"
    expression  = "IF(FILL(runs, 0) > 0, FILL(reported, 0), FILL(reported, 1000000000))"
    return_data = true
  }
  metric_query {
    id = "reported"
    metric {
      namespace   = "mssqlcdc"
      metric_name = "IngestionLagSeconds"
      dimensions = {
        app_id = var.spec.app_id
      }
      stat   = "Maximum"
      period = local.lag_period
    }
  }
  metric_query {
    id = "runs"
    metric {
      namespace   = "AWS/Lambda"
      metric_name = "Invocations"
      dimensions = {
        FunctionName = aws_lambda_function.this["stream"].function_name
      }
      stat   = "Sum"
      period = local.lag_period
    }
  }
  evaluation_periods  = 3
  datapoints_to_alarm = 2
  threshold           = local.alarm_max_ingestion_lag
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "breaching"

  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = var.tags
}

# A scheduled event dropped: it waited longer than one interval behind a running
# invocation (reserved concurrency 1), or Lambda could not run it. An invocation that
# overruns its interval (a catch-up at a one-minute schedule) drops the events meanwhile;
# only drops in every one of 3 periods alarm, when every interval is overrun or nothing
# runs at all.
resource "aws_cloudwatch_metric_alarm" "stream_events_dropped" {
  count = var.alarms_enabled ? 1 : 0

  alarm_name        = "${var.name}-stream-events-dropped"
  alarm_description = "Scheduled invocations of the mssqlcdc stream of ${var.spec.app_id} were dropped in each of the last 3 periods: invocations overrun the ${var.schedule_every_minutes}-minute schedule, or the function is throttled. Records are in the on-failure destination (docs/operations.md)."

  namespace   = "AWS/Lambda"
  metric_name = "AsyncEventsDropped"
  dimensions = {
    FunctionName = aws_lambda_function.this["stream"].function_name
  }
  statistic           = "Sum"
  period              = local.alarm_period
  evaluation_periods  = 3
  datapoints_to_alarm = 3
  threshold           = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"

  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = var.tags
}

resource "aws_cloudwatch_metric_alarm" "state_machine_failed" {
  for_each = { for k, m in aws_sfn_state_machine.this : k => m if var.alarms_enabled }

  alarm_name        = "${var.name}-${each.key}-failed"
  alarm_description = "An execution of ${each.value.name} failed; its output names failure.failed_step and the error (docs/deploy.md)."

  namespace   = "AWS/States"
  metric_name = "ExecutionsFailed"
  dimensions = {
    StateMachineArn = each.value.arn
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
