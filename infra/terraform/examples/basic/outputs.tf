output "bootstrap_state_machines" {
  description = "The bootstrap machine of each table: start it once before enabling the streams."
  value       = { for k, t in module.table : k => t.state_machine_arns["bootstrap"] }
}

output "state_machines" {
  description = "Every state machine of each table, by machine: bootstrap, and backfill (snapshot = \"chunked\"), seed (seed_copies), recover (on_data_loss = \"resnapshot\") where deployed."
  value       = { for k, t in module.table : k => t.state_machine_arns }
}

output "stream_functions" {
  description = "The stream function of each table."
  value       = { for k, t in module.table : k => t.stream_function_name }
}

output "delta_log_table" {
  description = "The DynamoDB commit table the functions share with any Spark writer."
  value       = module.shared.delta_log_table_name
}

output "specs" {
  description = "Each table's spec as its functions read it; save one to a file for the mssqlcdc CLI (--spec)."
  value       = { for k, t in module.table : k => t.spec_json }
}
