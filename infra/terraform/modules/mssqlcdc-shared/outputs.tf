output "delta_log_table_name" {
  description = "The commit table's name, for spec.storage.dynamo_table of every table module."
  value       = var.create_delta_log_table ? aws_dynamodb_table.delta_log[0].name : var.delta_log_table_name
}

output "delta_log_table_arn" {
  description = "The commit table's ARN (null when the table is not created here)."
  value       = var.create_delta_log_table ? aws_dynamodb_table.delta_log[0].arn : null
}

output "dashboard_name" {
  description = "The lake-wide dashboard (null when dashboard_name is null)."
  value       = try(aws_cloudwatch_dashboard.lake[0].dashboard_name, null)
}
