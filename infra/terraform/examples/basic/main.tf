# Two tables of database shop (the sample of localstack/mssql/01-sample-cdc.sql) into one
# lake: bronze per table, one facts table, one checkpoint per table, one DynamoDB commit
# table. Build the zips first: `make build` at the repository root.

locals {
  lake  = "s3://${var.lake_bucket}"
  facts = "${local.lake}/ops/ingestion_facts"

  # Per table: the capture instance and what differs from the defaults.
  tables = {
    orders = {
      capture_instance = "dbo_orders"
      snapshot_keys    = ["id"]
      num_partitions   = 8
    }
    customers = {
      capture_instance = "dbo_customers"
      snapshot_keys    = null
      num_partitions   = 2
    }
  }
}

module "shared" {
  source = "../../modules/mssqlcdc-shared"

  delta_log_table_name = "delta_log"
  lake_bucket          = var.manage_bucket_lifecycle ? var.lake_bucket : null
  delta_tmp_prefixes   = distinct(flatten([for t in module.table : try(t.delta_tmp_prefixes[var.lake_bucket], [])]))
  extra_lifecycle_rules = [
    { id = "abort-incomplete-uploads", abort_incomplete_multipart_days = 7 },
  ]
}

module "table" {
  source   = "../../modules/mssqlcdc-table"
  for_each = local.tables

  name = "mssqlcdc-${each.key}"

  spec = {
    app_id = "${each.key}-v1"
    source = {
      dsn                 = "sqlserver://${var.sql_user}@${var.sql_server_host}:${var.sql_server_port}?database=${var.database}"
      password_secret_arn = var.password_secret_arn
      captureInstance     = each.value.capture_instance
    }
    options = {
      numPartitions      = each.value.num_partitions
      maxCommitsPerBatch = 5000
      snapshotKeys       = each.value.snapshot_keys
      lockTimeoutMs      = 10000
    }
    bronze      = "${local.lake}/bronze/${each.key}"
    checkpoint  = "${local.lake}/checkpoints/${each.key}"
    facts_table = local.facts
    bootstrap   = true
    storage = {
      region       = var.region
      dynamo_table = module.shared.delta_log_table_name
    }
  }

  schedule_every_minutes = 5
  schedule_enabled       = var.streams_enabled
  vpc_config             = var.vpc_config
  log_retention_days     = 30

  tags = {
    project = "mssqlcdc"
    table   = each.key
  }
}
