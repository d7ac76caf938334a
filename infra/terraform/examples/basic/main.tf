# The tables of database shop (by default the two of localstack/mssql/01-sample-cdc.sql)
# into one lake: bronze, a checkpoint and a facts table per table (the module's default,
# bronze/<table>_facts), one DynamoDB commit table. Build the zips first: `make build` at
# the repository root.

locals {
  lake = "s3://${var.lake_bucket}"

  # One table spec (docs/spec.md) per entry of var.tables: the table module runs once per
  # spec (for_each below), so adding a table is adding an entry.
  specs = {
    for name, t in var.tables : name => {
      app_id = "${name}-v1"
      source = {
        dsn                 = "sqlserver://${var.sql_user}@${var.sql_server_host}:${var.sql_server_port}?database=${var.database}"
        password_secret_arn = var.password_secret_arn
        captureInstance     = t.capture_instance
      }
      options = {
        numPartitions      = t.num_partitions
        maxCommitsPerBatch = 5000
        snapshotKeys       = t.snapshot_keys
        lockTimeoutMs      = 10000
      }
      bronze     = "${local.lake}/bronze/${name}"
      checkpoint = "${local.lake}/checkpoints/${name}"
      # facts_table left out: each table gets its own, bronze/<table>_facts. Setting
      # facts_table = "${local.lake}/ops/ingestion_facts" here would share one among
      # the tables (docs/deploy.md § One facts table per source table).
      bootstrap = true
      snapshot  = t.snapshot
      storage = {
        region       = var.region
        dynamo_table = module.shared.delta_log_table_name
      }
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
  for_each = local.specs

  name = "mssqlcdc-${each.key}"
  spec = each.value

  schedule_every_minutes = var.tables[each.key].schedule_every_minutes
  seed_copies            = var.tables[each.key].seed_copies
  schedule_enabled       = var.streams_enabled
  vpc_config             = var.vpc_config
  log_retention_days     = 30
  alarm_actions          = var.alarm_topic_arn == null ? [] : [var.alarm_topic_arn]

  tags = {
    project = "mssqlcdc"
    table   = each.key
  }
}
