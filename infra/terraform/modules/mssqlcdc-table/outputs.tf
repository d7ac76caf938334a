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

output "state_machine_arns" {
  description = "State machine ARNs by machine (bootstrap, ...), for `aws stepfunctions start-execution`."
  value       = { for k, m in aws_sfn_state_machine.this : k => m.arn }
}

output "stream_schedule_arn" {
  description = "ARN of the EventBridge Scheduler schedule running the stream."
  value       = aws_scheduler_schedule.stream.arn
}

output "lambda_role_arn" {
  description = "The functions' IAM role: grant it on a KMS key or bucket policy when those live elsewhere."
  value       = aws_iam_role.lambda.arn
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
    aws_cloudwatch_metric_alarm.retention_headroom[*].alarm_name,
    [for a in aws_cloudwatch_metric_alarm.state_machine_failed : a.alarm_name],
  )
}
