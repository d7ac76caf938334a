output "function_names" {
  description = "Lambda function names by function (stream, snapshot, ...)."
  value       = { for k, f in aws_lambda_function.this : k => f.function_name }
}

output "function_arns" {
  description = "Lambda function ARNs by function."
  value       = { for k, f in aws_lambda_function.this : k => f.arn }
}

output "stream_function_name" {
  description = "The stream function's name, for `aws lambda invoke` (docs/deploy.md)."
  value       = aws_lambda_function.this["stream"].function_name
}

output "facts_table" {
  description = "The facts table's URL: spec.facts_table when set (shared), else this table's own \"<bronze>_facts\" (docs/facts.md)."
  value       = local.facts_table
}

output "state_machine_arns" {
  description = "State machine ARNs by machine (bootstrap, ...), for `aws stepfunctions start-execution`."
  value       = { for k, m in aws_sfn_state_machine.this : k => m.arn }
}

output "stream_schedule_arn" {
  description = "ARN of the EventBridge Scheduler schedule running the stream."
  value       = aws_scheduler_schedule.stream.arn
}

output "lambda_role_arn" {
  description = "The role of stream, snapshot and the other SQL-reading functions (created, or role_arns.lambda): grant it on a KMS key or bucket policy when those live elsewhere."
  value       = local.lambda_role_arn
}

output "maintain_role_arn" {
  description = "The maintain function's role (created, or role_arns.maintain); null while maintain is not deployed."
  value       = local.deploys_maintain ? local.maintain_role_arn : null
}

output "apply_role_arn" {
  description = "The apply function's role (created, or role_arns.apply); null without spec.silver."
  value       = local.deploys_apply ? local.apply_role_arn : null
}

output "reconcile_role_arn" {
  description = "The reconcile function's role (created, or role_arns.reconcile); null without spec.reconcile."
  value       = local.deploys_reconcile ? local.reconcile_role_arn : null
}

output "states_role_arn" {
  description = "The state machines' role (created, or role_arns.states)."
  value       = local.states_role_arn
}

output "scheduler_role_arn" {
  description = "EventBridge Scheduler's role for the stream's schedule (created, or role_arns.scheduler)."
  value       = local.scheduler_role_arn
}

output "role_arns" {
  description = "Every role by its key in role_arns: lambda, maintain, apply and reconcile (when deployed), states, scheduler."
  value = merge(
    { lambda = local.lambda_role_arn, states = local.states_role_arn, scheduler = local.scheduler_role_arn },
    local.deploys_maintain ? { maintain = local.maintain_role_arn } : {},
    local.deploys_apply ? { apply = local.apply_role_arn } : {},
    local.deploys_reconcile ? { reconcile = local.reconcile_role_arn } : {},
  )
}

output "policy_documents" {
  description = "The inline policy each role gets (JSON), also what a role brought through role_arns needs."
  value = {
    lambda    = data.aws_iam_policy_document.lambda.json
    maintain  = data.aws_iam_policy_document.maintain.json
    apply     = data.aws_iam_policy_document.apply.json
    reconcile = data.aws_iam_policy_document.reconcile.json
    states    = data.aws_iam_policy_document.states.json
    scheduler = data.aws_iam_policy_document.scheduler.json
  }
}

output "function_invoke_arns" {
  description = "What the schedule and the state machines invoke, by function: the alias ARN with alias_name, else the function ARN."
  value       = local.invoke_arns
}

output "stream_failure_destination_arn" {
  description = "The on-failure destination of the stream's asynchronous invocations (the module's queue, stream_failure_destination_arn, or null)."
  value       = local.stream_failure_destination
}

output "dashboard_name" {
  description = "The table's CloudWatch dashboard (null with dashboard_enabled = false)."
  value       = try(aws_cloudwatch_dashboard.this[0].dashboard_name, null)
}

output "log_group_names" {
  description = "CloudWatch log groups by function and by state machine (\"<name>\" and \"states/<name>\")."
  value = merge(
    { for k, g in aws_cloudwatch_log_group.function : k => g.name },
    { for k, g in aws_cloudwatch_log_group.state_machine : "states/${k}" => g.name },
  )
}

output "spec_json" {
  description = "The table spec as the functions read it (MSSQLCDC_SPEC); also what `mssqlcdc` CLI commands take as a spec file."
  value       = local.spec_json
}

output "delta_tmp_prefixes" {
  description = "The S3 prefixes <table>/_delta_log/.tmp/ of this table's Delta tables (bronze, facts) by bucket, for the lifecycle rule that expires them (modules/mssqlcdc-shared)."
  value = {
    for b in local.s3_buckets : b => [
      for k in ["bronze", "facts"] : "${local.s3_paths[k].prefix}/_delta_log/.tmp/" if local.s3_paths[k].bucket == b
    ]
  }
}

output "alarm_names" {
  description = "The CloudWatch alarms created (empty with alarms_enabled = false)."
  value = concat(
    aws_cloudwatch_metric_alarm.stream_errors[*].alarm_name,
    aws_cloudwatch_metric_alarm.ingestion_lag[*].alarm_name,
    aws_cloudwatch_metric_alarm.stream_events_dropped[*].alarm_name,
    aws_cloudwatch_metric_alarm.retention_headroom[*].alarm_name,
    aws_cloudwatch_metric_alarm.reconcile_mismatches[*].alarm_name,
    aws_cloudwatch_metric_alarm.reconcile_errors[*].alarm_name,
    [for a in aws_cloudwatch_metric_alarm.state_machine_failed : a.alarm_name],
  )
}
