# A CloudWatch dashboard per table: the pictures people look at instead of querying the facts
# table. Lag and headroom are the custom metrics the alarms use; rows per minute and MB/s
# are the metrics when custom_metrics has them, else Logs Insights over the stream's log
# lines (free until someone looks: $0.005 per GB scanned); errors are AWS/Lambda and
# AWS/States metrics; the last batch is the newest "batch committed" log line.

locals {
  stream_log_group = aws_cloudwatch_log_group.function["stream"].name
  app_dimension    = ["app_id", var.spec.app_id]

  # Rows per minute: the Rows metric summed per minute, or the batches' log lines. (Each
  # widget goes through JSON: the two arms of a conditional must have one type.)
  rows_widget = jsondecode(contains(var.custom_metrics, "Rows") ? jsonencode({
    type = "metric"
    properties = {
      title   = "Rows per minute"
      region  = local.region
      view    = "timeSeries"
      stat    = "Sum"
      period  = 60
      metrics = [concat(["mssqlcdc", "Rows"], local.app_dimension)]
      yAxis   = { left = { min = 0 } }
    }
    }) : jsonencode({
    type = "log"
    properties = {
      title  = "Rows per minute"
      region = local.region
      view   = "timeSeries"
      query  = "SOURCE '${local.stream_log_group}' | filter msg = \"batch committed\" | stats sum(rows) as rows by bin(1m)"
    }
  }))

  # MB/s of change data read (the Arrow size, docs/performance.md): Bytes per period over
  # the period's seconds.
  bytes_widget = jsondecode(contains(var.custom_metrics, "Bytes") ? jsonencode({
    type = "metric"
    properties = {
      title  = "Change data read, MB/s"
      region = local.region
      view   = "timeSeries"
      period = 60
      metrics = [
        [{ id = "mbps", expression = "m1 / PERIOD(m1) / 1000000", label = "MB/s" }],
        concat(["mssqlcdc", "Bytes"], local.app_dimension, [{ id = "m1", stat = "Sum", visible = false }]),
      ]
      yAxis = { left = { min = 0 } }
    }
    }) : jsonencode({
    type = "log"
    properties = {
      title  = "Change data read, MB/s"
      region = local.region
      view   = "timeSeries"
      query  = "SOURCE '${local.stream_log_group}' | filter ispresent(Bytes) | stats sum(Bytes) / 60 / 1000000 as MB_per_s by bin(1m)"
    }
  }))

  dashboard_widgets = [
    {
      type = "metric"
      properties = {
        title       = "Ingestion lag, s (max)"
        region      = local.region
        view        = "timeSeries"
        stat        = "Maximum"
        period      = local.lag_period
        metrics     = [concat(["mssqlcdc", "IngestionLagSeconds"], local.app_dimension)]
        annotations = { horizontal = [{ label = "alarm", value = local.alarm_max_ingestion_lag }] }
        yAxis       = { left = { min = 0 } }
      }
    },
    {
      type = "metric"
      properties = {
        title       = "Retention headroom, h (min)"
        region      = local.region
        view        = "timeSeries"
        stat        = "Minimum"
        period      = local.alarm_period
        metrics     = [concat(["mssqlcdc", "RetentionHeadroomHours"], local.app_dimension)]
        annotations = { horizontal = [{ label = "alarm", value = var.alarm_min_retention_headroom_hours }] }
        yAxis       = { left = { min = 0 } }
      }
    },
    local.rows_widget,
    local.bytes_widget,
    {
      type = "metric"
      properties = {
        title  = "Errors, throttles, dropped events"
        region = local.region
        view   = "timeSeries"
        stat   = "Sum"
        period = local.alarm_period
        metrics = concat(
          [for k, f in aws_lambda_function.this : ["AWS/Lambda", "Errors", "FunctionName", f.function_name, { label = "${k} errors" }]],
          [
            ["AWS/Lambda", "Throttles", "FunctionName", aws_lambda_function.this["stream"].function_name, { label = "stream throttles" }],
            ["AWS/Lambda", "AsyncEventsDropped", "FunctionName", aws_lambda_function.this["stream"].function_name, { label = "stream events dropped" }],
          ],
          [for k, m in aws_sfn_state_machine.this : ["AWS/States", "ExecutionsFailed", "StateMachineArn", m.arn, { label = "${k} executions failed" }]],
        )
        yAxis = { left = { min = 0 } }
      }
    },
    {
      type = "log"
      properties = {
        title  = "Last batch"
        region = local.region
        view   = "table"
        query  = "SOURCE '${local.stream_log_group}' | filter msg = \"batch committed\" | sort @timestamp desc | limit 1 | fields @timestamp as last_batch_at, batch, rows, ingestion_lag_seconds, retention_headroom_hours"
      }
    },
    {
      type = "log"
      properties = {
        title  = "Latest errors"
        region = local.region
        view   = "table"
        query  = "SOURCE '${local.stream_log_group}' | filter level = \"ERROR\" | sort @timestamp desc | limit 20 | fields @timestamp, msg, err"
      }
    },
  ]
}

resource "aws_cloudwatch_dashboard" "this" {
  count = var.dashboard_enabled ? 1 : 0

  dashboard_name = var.name
  # Two widgets per row, 12 of the grid's 24 columns each, 6 rows high.
  dashboard_body = jsonencode({
    widgets = [
      for i, w in local.dashboard_widgets : merge(w, { x = 12 * (i % 2), y = 6 * floor(i / 2), width = 12, height = 6 })
    ]
  })
}
