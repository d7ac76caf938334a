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
  description = "Whether this root owns the lake bucket's lifecycle configuration (the rule expiring _delta_log/.tmp/). Off by default: the configuration is one resource per bucket and replaces any rules set elsewhere; add the rule where the bucket is managed, or turn this on if nothing else manages it."
  type        = bool
  default     = false
}

variable "tables" {
  description = "The tables to capture, by short name (their bronze/<name> and checkpoints/<name> prefixes, app_id <name>-v1, functions mssqlcdc-<name>-*): capture_instance, and optionally snapshot_keys, num_partitions (4), schedule_every_minutes (5), snapshot (\"full\", or \"chunked\" for a table too big to read within the CDC retention: docs/snapshots.md) and seed_copies (s3:// URLs of copies the table may be seeded from: docs/seed.md)."
  type = map(object({
    capture_instance       = string
    snapshot               = optional(string, "full")
    seed_copies            = optional(list(string), [])
    snapshot_keys          = optional(list(string))
    num_partitions         = optional(number, 4)
    schedule_every_minutes = optional(number, 5)
  }))
  default = {
    orders = {
      capture_instance = "dbo_orders"
      snapshot_keys    = ["id"]
      num_partitions   = 8
    }
    customers = {
      capture_instance = "dbo_customers"
      num_partitions   = 2
    }
  }
}

variable "alarm_topic_arn" {
  description = "SNS topic the tables' alarms notify (null: the alarms only show in the console)."
  type        = string
  default     = null
}
