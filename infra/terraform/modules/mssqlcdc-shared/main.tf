# What the tables of one lake share: the DynamoDB commit table of Delta's
# S3DynamoDBLogStore (docs/design.md §7, deltalog/logstore/dynamo) and the lifecycle rule that
# expires its temporary commit files.

data "aws_region" "current" {}

locals {
  region = data.aws_region.current.id
}

# The item schema Spark, delta-rs and deltalog/logstore/dynamo share: tablePath (HASH) and
# fileName (RANGE) strings; expireTime (epoch seconds) is set once a commit is complete, so
# TTL removes complete entries a day later.
resource "aws_dynamodb_table" "delta_log" {
  count = var.create_delta_log_table ? 1 : 0

  name         = var.delta_log_table_name
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "tablePath"
  range_key    = "fileName"

  attribute {
    name = "tablePath"
    type = "S"
  }
  attribute {
    name = "fileName"
    type = "S"
  }

  ttl {
    attribute_name = "expireTime"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = var.delta_log_point_in_time_recovery
  }

  deletion_protection_enabled = var.delta_log_deletion_protection

  tags = var.tags
}

resource "aws_s3_bucket_lifecycle_configuration" "lake" {
  count = var.lake_bucket == null ? 0 : 1

  bucket = var.lake_bucket

  dynamic "rule" {
    for_each = toset(var.delta_tmp_prefixes)
    content {
      # Rule ids are at most 255 characters; the hash keeps long prefixes distinct.
      id     = "delta-tmp-${substr(sha1(rule.value), 0, 12)}"
      status = "Enabled"
      filter {
        prefix = rule.value
      }
      expiration {
        days = var.tmp_expiration_days
      }
    }
  }

  dynamic "rule" {
    for_each = var.extra_lifecycle_rules
    content {
      id     = rule.value.id
      status = "Enabled"
      filter {
        prefix = rule.value.prefix
      }
      dynamic "expiration" {
        for_each = rule.value.expiration_days == null ? [] : [rule.value.expiration_days]
        content {
          days = expiration.value
        }
      }
      dynamic "abort_incomplete_multipart_upload" {
        for_each = rule.value.abort_incomplete_multipart_days == null ? [] : [rule.value.abort_incomplete_multipart_days]
        content {
          days_after_initiation = abort_incomplete_multipart_upload.value
        }
      }
    }
  }

  lifecycle {
    precondition {
      condition     = length(var.delta_tmp_prefixes) + length(var.extra_lifecycle_rules) > 0
      error_message = "lake_bucket is set but there are no rules: a lifecycle configuration needs at least one (pass delta_tmp_prefixes)."
    }
  }
}

# One dashboard for every table of the lake, instead of (or beside) a dashboard per table
# ($3 a month each, docs/cost.md): SEARCH expressions find every app_id's metrics and every
# function whose name holds the word dashboard_function_search, so tables added later
# appear without a change here.
resource "aws_cloudwatch_dashboard" "lake" {
  count = var.dashboard_name == null ? 0 : 1

  dashboard_name = var.dashboard_name
  dashboard_body = jsonencode({
    widgets = [
      for i, w in [
        {
          title = "Ingestion lag, s (max), every table"
          expr  = "SEARCH('{mssqlcdc,app_id} MetricName=\"IngestionLagSeconds\"', 'Maximum', 300)"
        },
        {
          title = "Retention headroom, h (min), every table"
          expr  = "SEARCH('{mssqlcdc,app_id} MetricName=\"RetentionHeadroomHours\"', 'Minimum', 300)"
        },
        {
          title = "Function errors"
          expr  = "SEARCH('{AWS/Lambda,FunctionName} MetricName=\"Errors\" ${var.dashboard_function_search}', 'Sum', 300)"
        },
        {
          title = "Scheduled stream events dropped"
          expr  = "SEARCH('{AWS/Lambda,FunctionName} MetricName=\"AsyncEventsDropped\" ${var.dashboard_function_search}', 'Sum', 300)"
        },
        ] : {
        type   = "metric"
        x      = 12 * (i % 2)
        y      = 6 * floor(i / 2)
        width  = 12
        height = 6
        properties = {
          title   = w.title
          region  = local.region
          view    = "timeSeries"
          metrics = [[{ id = "e${i}", expression = w.expr }]]
          yAxis   = { left = { min = 0 } }
        }
      }
    ]
  })
}
