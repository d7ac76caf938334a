# What the tables of one lake share: the DynamoDB commit table of Delta's
# S3DynamoDBLogStore (docs/design.md §7, deltalog/logstore/dynamo) and the lifecycle rule that
# expires its temporary commit files.

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
