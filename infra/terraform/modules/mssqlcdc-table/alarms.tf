# CloudWatch alarms on what needs a person: the stream failing, the stream falling behind
# SQL Server's CDC cleanup (changes about to be purged unread: DataLossError next), and a
# state machine execution failing. Off with alarms_enabled = false.

locals {
  # Several schedule intervals, at least 5 minutes, at most an hour per period.
  alarm_period = min(3600, 60 * max(5, var.schedule_every_minutes))
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
