output "bootstrap_state_machine" {
  description = "The bootstrap machine deploy.sh starts."
  value       = module.orders.state_machine_arns["bootstrap"]
}

output "stream_function" {
  description = "The stream function deploy.sh invokes (LocalStack's scheduler does not)."
  value       = module.orders.stream_function_name
}
