# EventBridge Scheduler runs the stream every N minutes (docs/design.md §6.1). An invocation
# resumes from the checkpoint and works until caught up or out of time; reserved
# concurrency 1 (main.tf) keeps one per table.

resource "aws_scheduler_schedule" "stream" {
  name        = "${var.name}-stream"
  group_name  = var.schedule_group_name
  description = "mssqlcdc stream of ${var.spec.app_id} every ${var.schedule_every_minutes} min"

  schedule_expression = var.schedule_every_minutes == 1 ? "rate(1 minute)" : "rate(${var.schedule_every_minutes} minutes)"
  state               = var.schedule_enabled ? "ENABLED" : "DISABLED"

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = local.invoke_arns["stream"]
    role_arn = local.scheduler_role_arn
    # functions/stream Event: {} runs one invocation with the spec's settings.
    input = jsonencode({})

    # Retries cover a failed delivery to Lambda, not a failed invocation. An event older than
    # one interval is superseded by the next one.
    retry_policy {
      maximum_event_age_in_seconds = max(60, min(86400, var.schedule_every_minutes * 60))
      maximum_retry_attempts       = 3
    }
  }

  depends_on = [aws_iam_role_policy.scheduler]
}

# The maintain function (functions/maintain) on a schedule of its own: compaction of bronze
# and facts into target-size files, a checkpoint of the newest version, log clean-up,
# VACUUM with each table's retention and orphaned temporary files (docs/operations.md
# § Maintenance). Hourly by default, so a table streamed every minute has at most about
# sixty small files between runs. The flexible window spreads the runs of many tables over
# a quarter of an hour instead of starting them all on the hour.
resource "aws_scheduler_schedule" "maintain" {
  count = local.deploys_maintain ? 1 : 0

  name        = "${var.name}-maintain"
  group_name  = var.schedule_group_name
  description = "mssqlcdc maintenance of ${var.spec.app_id}: ${var.maintain_schedule_expression}"

  schedule_expression = var.maintain_schedule_expression
  state               = var.maintain_schedule_enabled ? "ENABLED" : "DISABLED"

  flexible_time_window {
    mode                      = "FLEXIBLE"
    maximum_window_in_minutes = 15
  }

  target {
    arn      = local.invoke_arns["maintain"]
    role_arn = local.scheduler_role_arn
    # functions/maintain Event: {} maintains bronze and facts with every operation.
    input = jsonencode({})

    # A run that could not be delivered within the hour is superseded by the next one.
    retry_policy {
      maximum_event_age_in_seconds = 3600
      maximum_retry_attempts       = 3
    }
  }

  depends_on = [aws_iam_role_policy.scheduler]
}

# The apply function (functions/apply) on a schedule of its own, only when the spec names a
# silver table: each run brings silver up to what bronze holds (docs/silver.md). Every 15
# minutes by default; an invocation cut short by its budget goes on at the next one.
# The reconcile function (functions/reconcile) on a schedule of its own, only when the spec
# has a reconcile section: each run compares silver with the source and appends a report
# (docs/reconcile.md). Daily by default. The scheduled time keys the run, so a delivery
# retried after a run that wrote its report returns that report.
resource "aws_scheduler_schedule" "reconcile" {
  count = local.deploys_reconcile ? 1 : 0

  name        = "${var.name}-reconcile"
  group_name  = var.schedule_group_name
  description = "mssqlcdc reconcile of ${var.spec.app_id}: ${var.reconcile_schedule_expression}"

  schedule_expression = var.reconcile_schedule_expression
  state               = var.reconcile_schedule_enabled ? "ENABLED" : "DISABLED"

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = local.invoke_arns["reconcile"]
    role_arn = local.scheduler_role_arn
    # functions/reconcile Event: the run is the scheduled time, a context attribute the
    # Scheduler substitutes in the input's text (written literally: jsonencode would
    # escape its angle brackets as \u003c and \u003e, which the Scheduler does not match).
    input = "{\"run\": \"<aws.scheduler.scheduled-time>\"}"

    retry_policy {
      maximum_event_age_in_seconds = 3600
      maximum_retry_attempts       = 3
    }
  }

  depends_on = [aws_iam_role_policy.scheduler]
}

resource "aws_scheduler_schedule" "apply" {
  count = local.deploys_apply ? 1 : 0

  name        = "${var.name}-apply"
  group_name  = var.schedule_group_name
  description = "mssqlcdc silver apply of ${var.spec.app_id}: ${var.apply_schedule_expression}"

  schedule_expression = var.apply_schedule_expression
  state               = var.apply_schedule_enabled ? "ENABLED" : "DISABLED"

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = local.invoke_arns["apply"]
    role_arn = local.scheduler_role_arn
    # functions/apply Event: {} applies with the spec's silver settings.
    input = jsonencode({})

    # Retries cover a failed delivery to Lambda; a run not delivered within the hour is
    # superseded by a later one.
    retry_policy {
      maximum_event_age_in_seconds = 3600
      maximum_retry_attempts       = 3
    }
  }

  depends_on = [aws_iam_role_policy.scheduler]
}
