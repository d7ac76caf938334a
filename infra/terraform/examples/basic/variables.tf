variable "region" {
  description = "AWS region of the lake bucket, the functions and the commit table."
  type        = string
  default     = "eu-west-1"
}

variable "lake_bucket" {
  description = "Existing S3 bucket for the Delta tables and checkpoints (this example does not create it)."
  type        = string
}

variable "sql_server_host" {
  description = "SQL Server host name or address, as the functions reach it (inside the VPC when vpc_config is set)."
  type        = string
}

variable "sql_server_port" {
  description = "SQL Server TCP port."
  type        = number
  default     = 1433
}

variable "database" {
  description = "Database holding the CDC-enabled tables."
  type        = string
  default     = "shop"
}

variable "sql_user" {
  description = "Least-privilege SQL login (docs/permissions.md)."
  type        = string
  default     = "cdc_reader"
}

variable "password_secret_arn" {
  description = "Secrets Manager secret holding the login's password (plain text, or JSON with a \"password\" key as RDS writes it)."
  type        = string
}

variable "vpc_config" {
  description = "Subnets and security groups of the functions when SQL Server is private; null runs them outside a VPC."
  type = object({
    subnet_ids         = list(string)
    security_group_ids = list(string)
  })
  default = null
}

variable "streams_enabled" {
  description = "Whether the schedules run the streams. Apply with false, run each table's bootstrap machine, then apply with true (docs/deploy.md)."
  type        = bool
  default     = false
}

variable "manage_bucket_lifecycle" {
  description = "Whether this root owns the lake bucket's lifecycle configuration (the rule expiring _delta_log/.tmp/). It replaces any rules set elsewhere."
  type        = bool
  default     = true
}
