variable "create_delta_log_table" {
  description = "Whether to create the DynamoDB table of Delta's S3DynamoDBLogStore. Set false when Spark or EMR jobs already created it (then only the name is output)."
  type        = bool
  default     = true
}

variable "delta_log_table_name" {
  description = "Name of the DynamoDB commit table. Every writer of a Delta table (these functions, Spark with io.delta.storage.S3DynamoDBLogStore, delta-rs) must use the same table and region; \"delta_log\" is their common default."
  type        = string
  default     = "delta_log"

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]{3,255}$", var.delta_log_table_name))
    error_message = "delta_log_table_name must be 3 to 255 letters, digits, '_', '-' or '.'."
  }
}

variable "delta_log_point_in_time_recovery" {
  description = "Point-in-time recovery of the commit table. Its items only decide who owns the newest versions and expire a day after each commit, so it is off by default."
  type        = bool
  default     = false
}

variable "delta_log_deletion_protection" {
  description = "Deletion protection of the commit table: a deleted table lets a second writer claim a version that is being published."
  type        = bool
  default     = false
}

variable "lake_bucket" {
  description = "The bucket holding the Delta tables whose _delta_log/.tmp/ files expire (null: no lifecycle rule). WARNING: aws_s3_bucket_lifecycle_configuration owns the bucket's whole lifecycle configuration; put the bucket's other rules in extra_lifecycle_rules, or leave this null and add the rule where the bucket is managed."
  type        = string
  default     = null

  validation {
    condition     = var.lake_bucket == null ? true : can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.lake_bucket))
    error_message = "lake_bucket must be a bucket name (not an s3:// URL)."
  }
}

variable "delta_tmp_prefixes" {
  description = "Keys \"<table prefix>/_delta_log/.tmp/\" in lake_bucket to expire (the mssqlcdc-table module's delta_tmp_prefixes output). The DynamoDB log store keeps temp commit files, as Spark does, because a recovering writer may still copy the newest one."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for p in var.delta_tmp_prefixes : can(regex("^[^/].*/_delta_log/\\.tmp/$", p))])
    error_message = "delta_tmp_prefixes must be keys ending in /_delta_log/.tmp/ without a leading '/'."
  }
}

variable "tmp_expiration_days" {
  description = "Days after which _delta_log/.tmp/ files expire. Delta's S3DynamoDBLogStore documentation suggests 30; it must stay well above the commit table's one-day TTL."
  type        = number
  default     = 30

  validation {
    condition     = var.tmp_expiration_days >= 2 && floor(var.tmp_expiration_days) == var.tmp_expiration_days
    error_message = "tmp_expiration_days must be a whole number of days, at least 2 (above the one-day TTL of complete commit entries)."
  }
}

variable "extra_lifecycle_rules" {
  description = "Other lifecycle rules of lake_bucket, kept alongside the .tmp rules (the lifecycle configuration is one resource per bucket): id, prefix, and expiration_days and/or abort_incomplete_multipart_days."
  type = list(object({
    id                              = string
    prefix                          = optional(string, "")
    expiration_days                 = optional(number)
    abort_incomplete_multipart_days = optional(number)
  }))
  default = []

  validation {
    condition     = alltrue([for r in var.extra_lifecycle_rules : r.expiration_days != null || r.abort_incomplete_multipart_days != null])
    error_message = "Each extra_lifecycle_rules entry needs expiration_days or abort_incomplete_multipart_days."
  }
}

variable "dashboard_name" {
  description = "Create one CloudWatch dashboard of this name for every table of the lake (lag, headroom, errors, dropped events of all tables, found by SEARCH): $3 a month in all, against $3 per table for the table module's dashboards. Null: none."
  type        = string
  default     = null

  validation {
    condition     = var.dashboard_name == null ? true : can(regex("^[A-Za-z0-9_-]{1,255}$", var.dashboard_name))
    error_message = "dashboard_name must be 1 to 255 letters, digits, '-' or '_'."
  }
}

variable "dashboard_function_search" {
  description = "The lake dashboard shows the Lambda functions whose names hold this word (CloudWatch SEARCH matches words of dimension values: \"mssqlcdc\" finds mssqlcdc-orders-stream)."
  type        = string
  default     = "mssqlcdc"

  validation {
    condition     = can(regex("^[A-Za-z0-9]+$", var.dashboard_function_search))
    error_message = "dashboard_function_search must be one word of letters and digits."
  }
}

variable "tags" {
  description = "Tags for the resources that take them."
  type        = map(string)
  default     = {}
}
