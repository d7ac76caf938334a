# Up to four roles, each allowed only what its principal does:
#   <name>-lambda     stream, snapshot (and the other SQL-reading functions): this table's S3
#                     prefixes, the delta_log items of its Delta tables (bronze, facts, the plans table), the password
#                     secret, their own log groups (and ENIs inside a VPC). It may not
#                     delete Delta log files (commits, checkpoints, _last_checkpoint): only
#                     the maintain function's clean-up does that.
#   <name>-maintain   maintain (compaction, checkpoints, log clean-up, VACUUM), once that
#                     function is deployed: bronze and facts only, deletes included, no
#                     secret (it never talks to SQL Server).
#   <name>-apply      apply (silver, with spec.silver): reads bronze, writes silver; no
#                     checkpoint, no facts, no secret, no Delta log deletes.
#   <name>-reconcile  reconcile (with spec.reconcile): reads SQL Server (the secret), silver,
#                     bronze, facts and plans; writes only the report table.
#   <name>-states     the state machines: invoke this table's functions, deliver logs;
#   <name>-scheduler  EventBridge Scheduler: invoke the stream, maintain, apply, reconcile.
# Any of them may be brought instead (role_arns): the module then creates no role and
# attaches nothing; the policy_documents output is what such a role needs.

locals {
  # Where the functions read and write, from the spec's URLs (validated as
  # s3://bucket/prefix without a trailing '/'): the four locations internal/connect opens.
  # The snapshot's staging area (plans, manifests) is under the checkpoint; the plans table
  # of a chunked snapshot is bronze's URL + "_snapshot_plans" (core/config PlansTable), a
  # sibling of bronze's prefix that bronze's grant does not cover.
  s3_locations = {
    bronze     = var.spec.bronze
    checkpoint = var.spec.checkpoint
    facts      = local.facts_table
    plans      = "${trimsuffix(var.spec.bronze, "/")}_snapshot_plans"
  }
  s3_paths = {
    for k, u in local.s3_locations : k => {
      bucket = regex("^s3://([^/]+)/(.+)$", u)[0]
      prefix = regex("^s3://([^/]+)/(.+)$", u)[1]
    }
  }
  s3_buckets = toset([for p in values(local.s3_paths) : p.bucket])
  # The copies a seed reads (seed_copies, validated as s3://bucket/prefix).
  seed_copy_paths = [for u in var.seed_copies : {
    bucket = regex("^s3://([^/]+)/(.+)$", u)[0]
    prefix = regex("^s3://([^/]+)/(.+)$", u)[1]
  }]
  seed_copy_buckets = toset([for p in local.seed_copy_paths : p.bucket])
  # The Delta tables (the checkpoint is not one); maintain compacts and cleans up bronze
  # and facts only (the plans table holds a few rows per chunked snapshot).
  delta_tables      = ["bronze", "facts", "plans"]
  maintained_tables = ["bronze", "facts"]

  # The Delta log table's items, in the region the spec names for it (dynamo_region, else
  # region, else the provider's), as internal/connect opens it.
  dynamo_table     = coalesce(var.spec.storage.dynamo_table, "-")
  dynamo_table_arn = "arn:${local.partition}:dynamodb:${coalesce(var.spec.storage.dynamo_region, var.spec.storage.region, local.region)}:${local.account}:table/${local.dynamo_table}"
  uses_dynamo      = var.spec.storage.dynamo_table != null
  # The tablePath hash keys of this table's items, built as deltalog/logstore/dynamo
  # TablePath builds them (Spark's S3DynamoDBLogStore key): the scheme, the bucket, the
  # prefix without empty segments. The policy allows no other key (dynamodb:LeadingKeys).
  delta_table_paths = [
    for k in local.delta_tables :
    "${coalesce(var.spec.storage.table_path_scheme, "s3")}://${local.s3_paths[k].bucket}/${join("/", compact(split("/", local.s3_paths[k].prefix)))}"
  ]

  # Secrets Manager ARNs end in "-" and six random characters; a spec may give the ARN with
  # or without them (GetSecretValue accepts both), so the policy matches both forms.
  secret_arns = var.spec.source.password_secret_arn == null ? [] : [
    var.spec.source.password_secret_arn,
    "${var.spec.source.password_secret_arn}-??????",
  ]

  # The functions on each role; maintain has its own.
  deploys_maintain   = contains(keys(var.functions), "maintain")
  lambda_functions   = [for k in keys(local.function_requests) : k if !contains(["maintain", "apply", "reconcile"], k)]
  create_lambda_role = var.role_arns.lambda == null
  create_maintain    = local.deploys_maintain && var.role_arns.maintain == null
  lambda_role_arn    = local.create_lambda_role ? aws_iam_role.lambda[0].arn : var.role_arns.lambda
  maintain_role_arn  = local.create_maintain ? aws_iam_role.maintain[0].arn : var.role_arns.maintain
  create_apply       = local.deploys_apply && var.role_arns.apply == null
  apply_role_arn     = local.create_apply ? aws_iam_role.apply[0].arn : var.role_arns.apply
  create_reconcile   = local.deploys_reconcile && var.role_arns.reconcile == null
  reconcile_role_arn = local.create_reconcile ? aws_iam_role.reconcile[0].arn : var.role_arns.reconcile
  function_role_arns = { for k in keys(local.function_requests) : k => k == "maintain" ? local.maintain_role_arn : (k == "apply" ? local.apply_role_arn : (k == "reconcile" ? local.reconcile_role_arn : local.lambda_role_arn)) }

  # The reconcile function's locations: silver, bronze, facts and the plans table next to
  # bronze (read; with the DynamoDB log store also the completion of a half-done commit, as
  # every reader does) and the report table (read and write).
  reconcile_reads = local.deploys_reconcile ? {
    silver = local.apply_paths.silver
    bronze = local.s3_paths.bronze
    facts  = local.s3_paths.facts
    plans  = local.s3_paths.plans
  } : {}
  reconcile_paths = local.deploys_reconcile ? merge(local.reconcile_reads, {
    report = {
      bucket = regex("^s3://([^/]+)/(.+)$", var.spec.reconcile.report_table)[0]
      prefix = regex("^s3://([^/]+)/(.+)$", var.spec.reconcile.report_table)[1]
    }
  }) : {}
  reconcile_buckets = toset([for p in values(local.reconcile_paths) : p.bucket])
  reconcile_table_paths = {
    for k, p in local.reconcile_paths : k => "${coalesce(var.spec.storage.table_path_scheme, "s3")}://${p.bucket}/${join("/", compact(split("/", p.prefix)))}"
  }

  # The apply function's locations: bronze (read; with the DynamoDB log store also the
  # completion of a half-done commit, as every reader does) and silver (read and write).
  apply_paths = local.deploys_apply ? {
    bronze = local.s3_paths.bronze
    silver = {
      bucket = regex("^s3://([^/]+)/(.+)$", var.spec.silver.table)[0]
      prefix = regex("^s3://([^/]+)/(.+)$", var.spec.silver.table)[1]
    }
  } : {}
  apply_buckets = toset([for p in values(local.apply_paths) : p.bucket])
  apply_table_paths = {
    for k, p in local.apply_paths : k => "${coalesce(var.spec.storage.table_path_scheme, "s3")}://${p.bucket}/${join("/", compact(split("/", p.prefix)))}"
  }
  states_role_arn    = var.role_arns.states == null ? aws_iam_role.states[0].arn : var.role_arns.states
  scheduler_role_arn = var.role_arns.scheduler == null ? aws_iam_role.scheduler[0].arn : var.role_arns.scheduler

  # Delta log files no function but maintain may delete: every versioned file (commits,
  # checkpoints, .crc, compacted commits: 20-digit versions, so they start with 0) and the
  # files starting with '_' (_last_checkpoint, _sidecars/). Temporary commit files
  # (_delta_log/.tmp/, which the DynamoDB log store deletes when it loses a claim) stay
  # deletable.
  delta_log_files = flatten([
    for k in local.delta_tables : [
      "arn:${local.partition}:s3:::${local.s3_paths[k].bucket}/${local.s3_paths[k].prefix}/_delta_log/0*",
      "arn:${local.partition}:s3:::${local.s3_paths[k].bucket}/${local.s3_paths[k].prefix}/_delta_log/_*",
    ]
  ])
}

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

# What the stream's, snapshot's and maintain's roles need whatever they do: list the
# table's prefixes, the delta_log items of its Delta tables, and function_runtime's.
data "aws_iam_policy_document" "function_common" {
  source_policy_documents = [data.aws_iam_policy_document.function_runtime.json]

  # ListObjectsV2, only under this table's prefixes (or, with s3_list_whole_bucket, the
  # bucket's key names).
  dynamic "statement" {
    for_each = local.s3_buckets
    content {
      actions   = ["s3:ListBucket"]
      resources = ["arn:${local.partition}:s3:::${statement.value}"]
      dynamic "condition" {
        for_each = var.s3_list_whole_bucket ? [] : [statement.value]
        content {
          test     = "StringLike"
          variable = "s3:prefix"
          values   = flatten([for p in values(local.s3_paths) : [p.prefix, "${p.prefix}/*"] if p.bucket == condition.value])
        }
      }
    }
  }

  # deltalog/logstore/dynamo: the S3DynamoDBLogStore item per commit, only under this
  # table's tablePath keys (ForAllValues: every key a request touches must be one of them).
  dynamic "statement" {
    for_each = local.uses_dynamo ? [local.dynamo_table_arn] : []
    content {
      sid       = "DeltaLogItems"
      actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"]
      resources = [statement.value]
      condition {
        test     = "ForAllValues:StringEquals"
        variable = "dynamodb:LeadingKeys"
        values   = local.delta_table_paths
      }
    }
  }
}

# What any function's role needs to run at all: customer managed keys, VPC interfaces,
# tracing.
data "aws_iam_policy_document" "function_runtime" {
  dynamic "statement" {
    for_each = length(var.kms_key_arns) > 0 ? [var.kms_key_arns] : []
    content {
      sid       = "Keys"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = statement.value
    }
  }

  # What Lambda needs to attach the functions to the VPC (the EC2 actions of the managed
  # AWSLambdaVPCAccessExecutionRole); these actions take no resource-level scoping.
  dynamic "statement" {
    for_each = var.vpc_config == null ? [] : [1]
    content {
      sid = "VpcNetworkInterfaces"
      actions = [
        "ec2:CreateNetworkInterface",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSubnets",
        "ec2:DeleteNetworkInterface",
        "ec2:AssignPrivateIpAddresses",
        "ec2:UnassignPrivateIpAddresses",
      ]
      resources = ["*"]
    }
  }

  # Active tracing: the X-Ray daemon's writes (AWSXRayDaemonWriteAccess); no resource-level
  # scoping.
  dynamic "statement" {
    for_each = var.tracing_mode == "Active" ? [1] : []
    content {
      sid       = "Tracing"
      actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
      resources = ["*"]
    }
  }
}

data "aws_iam_policy_document" "lambda" {
  source_policy_documents = [data.aws_iam_policy_document.function_common.json]

  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = [for k in local.lambda_functions : "${aws_cloudwatch_log_group.function[k].arn}:*"]
  }

  # deltalog/storage/s3store: GetObject (also HeadObject and the source of CopyObject),
  # PutObject (also conditional puts and the target of CopyObject), DeleteObject (a failed
  # write's data files, a lost claim's temporary commit file, the checkpoint's old offsets).
  statement {
    sid       = "TableObjects"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
    resources = [for p in values(local.s3_paths) : "arn:${local.partition}:s3:::${p.bucket}/${p.prefix}/*"]
  }

  # An explicit deny wins over any allow, this role's or another policy's: a bug or a wrong
  # key in these functions cannot delete a table's history.
  statement {
    sid       = "NoDeltaLogDeletes"
    effect    = "Deny"
    actions   = ["s3:DeleteObject"]
    resources = local.delta_log_files
  }

  dynamic "statement" {
    for_each = length(local.secret_arns) > 0 ? [local.secret_arns] : []
    content {
      sid       = "SourcePassword"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = statement.value
    }
  }

  # Lambda sends the record of a failed or dropped asynchronous stream invocation to the
  # on-failure destination with the function's role.
  dynamic "statement" {
    for_each = local.stream_failure_destination_service == "sqs" ? [local.stream_failure_destination] : []
    content {
      sid       = "StreamFailureQueue"
      actions   = ["sqs:SendMessage"]
      resources = [statement.value]
    }
  }
  # Lambda sends the stream's results to EventBridge (on_data_loss = "resnapshot",
  # recover.tf) with the function's role.
  dynamic "statement" {
    for_each = local.recovers ? [local.default_bus_arn] : []
    content {
      sid       = "StreamResultEvents"
      actions   = ["events:PutEvents"]
      resources = [statement.value]
    }
  }
  # The seed reads the copies seed_copies names (docs/seed.md): list and get, nothing else.
  dynamic "statement" {
    for_each = local.seed_copy_buckets
    content {
      actions   = ["s3:ListBucket"]
      resources = ["arn:${local.partition}:s3:::${statement.value}"]
      condition {
        test     = "StringLike"
        variable = "s3:prefix"
        values   = flatten([for p in local.seed_copy_paths : [p.prefix, "${p.prefix}/*"] if p.bucket == statement.value])
      }
    }
  }
  dynamic "statement" {
    for_each = length(local.seed_copy_paths) > 0 ? [local.seed_copy_paths] : []
    content {
      sid       = "SeedCopyRead"
      actions   = ["s3:GetObject"]
      resources = [for p in statement.value : "arn:${local.partition}:s3:::${p.bucket}/${p.prefix}/*"]
    }
  }
  dynamic "statement" {
    for_each = local.stream_failure_destination_service == "sns" ? [local.stream_failure_destination] : []
    content {
      sid       = "StreamFailureTopic"
      actions   = ["sns:Publish"]
      resources = [statement.value]
    }
  }
}

resource "aws_iam_role" "lambda" {
  count = local.create_lambda_role ? 1 : 0

  name                 = "${var.name}-lambda"
  description          = "mssqlcdc functions of ${var.spec.app_id}"
  assume_role_policy   = data.aws_iam_policy_document.lambda_assume.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

resource "aws_iam_role_policy" "lambda" {
  count = local.create_lambda_role ? 1 : 0

  name   = "mssqlcdc"
  role   = aws_iam_role.lambda[0].id
  policy = data.aws_iam_policy_document.lambda.json
}

# maintain rewrites and deletes files of bronze and facts, the log's old commits and
# checkpoints included (log clean-up, VACUUM): the only role allowed to.
data "aws_iam_policy_document" "maintain" {
  source_policy_documents = [data.aws_iam_policy_document.function_common.json]

  dynamic "statement" {
    for_each = local.deploys_maintain ? [aws_cloudwatch_log_group.function["maintain"].arn] : []
    content {
      sid       = "Logs"
      actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
      resources = ["${statement.value}:*"]
    }
  }

  statement {
    sid       = "TableObjects"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
    resources = [for k in local.maintained_tables : "arn:${local.partition}:s3:::${local.s3_paths[k].bucket}/${local.s3_paths[k].prefix}/*"]
  }
}

resource "aws_iam_role" "maintain" {
  count = local.create_maintain ? 1 : 0

  name                 = "${var.name}-maintain"
  description          = "mssqlcdc maintenance (compaction, log clean-up, VACUUM) of ${var.spec.app_id}"
  assume_role_policy   = data.aws_iam_policy_document.lambda_assume.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

resource "aws_iam_role_policy" "maintain" {
  count = local.create_maintain ? 1 : 0

  name   = "mssqlcdc"
  role   = aws_iam_role.maintain[0].id
  policy = data.aws_iam_policy_document.maintain.json
}

# apply (functions/apply) keeps silver from bronze: it lists and reads bronze, reads and
# writes silver, and may delete silver's failed writes and lost claims but no Delta log
# file. With the DynamoDB log store it may complete a half-done bronze commit, as every
# Delta reader of such a table does (copy the temporary commit file to its version, mark
# the item complete); it writes nothing else of bronze.
data "aws_iam_policy_document" "apply" {
  source_policy_documents = [data.aws_iam_policy_document.function_runtime.json]

  dynamic "statement" {
    for_each = local.deploys_apply ? [aws_cloudwatch_log_group.function["apply"].arn] : []
    content {
      sid       = "Logs"
      actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
      resources = ["${statement.value}:*"]
    }
  }

  dynamic "statement" {
    for_each = local.apply_buckets
    content {
      actions   = ["s3:ListBucket"]
      resources = ["arn:${local.partition}:s3:::${statement.value}"]
      dynamic "condition" {
        for_each = var.s3_list_whole_bucket ? [] : [statement.value]
        content {
          test     = "StringLike"
          variable = "s3:prefix"
          values   = flatten([for p in values(local.apply_paths) : [p.prefix, "${p.prefix}/*"] if p.bucket == condition.value])
        }
      }
    }
  }

  dynamic "statement" {
    for_each = local.deploys_apply ? [local.apply_paths] : []
    content {
      sid       = "BronzeRead"
      actions   = ["s3:GetObject"]
      resources = ["arn:${local.partition}:s3:::${statement.value.bronze.bucket}/${statement.value.bronze.prefix}/*"]
    }
  }

  dynamic "statement" {
    for_each = local.deploys_apply && local.uses_dynamo ? [local.apply_paths] : []
    content {
      sid       = "BronzeCommitCompletion"
      actions   = ["s3:PutObject"]
      resources = ["arn:${local.partition}:s3:::${statement.value.bronze.bucket}/${statement.value.bronze.prefix}/_delta_log/0*"]
    }
  }

  dynamic "statement" {
    for_each = local.deploys_apply ? [local.apply_paths] : []
    content {
      sid       = "SilverObjects"
      actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
      resources = ["arn:${local.partition}:s3:::${statement.value.silver.bucket}/${statement.value.silver.prefix}/*"]
    }
  }

  dynamic "statement" {
    for_each = local.deploys_apply ? [local.apply_paths] : []
    content {
      sid     = "NoDeltaLogDeletes"
      effect  = "Deny"
      actions = ["s3:DeleteObject"]
      resources = [
        "arn:${local.partition}:s3:::${statement.value.silver.bucket}/${statement.value.silver.prefix}/_delta_log/0*",
        "arn:${local.partition}:s3:::${statement.value.silver.bucket}/${statement.value.silver.prefix}/_delta_log/_*",
      ]
    }
  }

  dynamic "statement" {
    for_each = local.deploys_apply && local.uses_dynamo ? [local.apply_table_paths] : []
    content {
      sid       = "SilverLogItems"
      actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"]
      resources = [local.dynamo_table_arn]
      condition {
        test     = "ForAllValues:StringEquals"
        variable = "dynamodb:LeadingKeys"
        values   = [statement.value.silver]
      }
    }
  }

  dynamic "statement" {
    for_each = local.deploys_apply && local.uses_dynamo ? [local.apply_table_paths] : []
    content {
      sid       = "BronzeLogItems"
      actions   = ["dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query"]
      resources = [local.dynamo_table_arn]
      condition {
        test     = "ForAllValues:StringEquals"
        variable = "dynamodb:LeadingKeys"
        values   = [statement.value.bronze]
      }
    }
  }
}

resource "aws_iam_role" "apply" {
  count = local.create_apply ? 1 : 0

  name                 = "${var.name}-apply"
  description          = "mssqlcdc silver apply of ${var.spec.app_id}: reads bronze, writes silver"
  assume_role_policy   = data.aws_iam_policy_document.lambda_assume.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

resource "aws_iam_role_policy" "apply" {
  count = local.create_apply ? 1 : 0

  name   = "mssqlcdc"
  role   = aws_iam_role.apply[0].id
  policy = data.aws_iam_policy_document.apply.json
}

# reconcile (functions/reconcile) compares silver with SQL Server: it reads the password
# secret, silver, bronze, the facts and plans tables, and writes only the report table
# (never deleting its Delta log). With the DynamoDB log store it may complete a half-done
# commit of a table it reads, as every Delta reader of such a table does. What it may do
# on SQL Server is the login's (docs/permissions.md): it only reads.
data "aws_iam_policy_document" "reconcile" {
  source_policy_documents = [data.aws_iam_policy_document.function_runtime.json]

  dynamic "statement" {
    for_each = local.deploys_reconcile ? [aws_cloudwatch_log_group.function["reconcile"].arn] : []
    content {
      sid       = "Logs"
      actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
      resources = ["${statement.value}:*"]
    }
  }

  dynamic "statement" {
    for_each = local.reconcile_buckets
    content {
      actions   = ["s3:ListBucket"]
      resources = ["arn:${local.partition}:s3:::${statement.value}"]
      dynamic "condition" {
        for_each = var.s3_list_whole_bucket ? [] : [statement.value]
        content {
          test     = "StringLike"
          variable = "s3:prefix"
          values   = flatten([for p in values(local.reconcile_paths) : [p.prefix, "${p.prefix}/*"] if p.bucket == condition.value])
        }
      }
    }
  }

  dynamic "statement" {
    for_each = local.deploys_reconcile ? [local.reconcile_reads] : []
    content {
      sid       = "TablesRead"
      actions   = ["s3:GetObject"]
      resources = [for p in values(statement.value) : "arn:${local.partition}:s3:::${p.bucket}/${p.prefix}/*"]
    }
  }

  dynamic "statement" {
    for_each = local.deploys_reconcile && local.uses_dynamo ? [local.reconcile_reads] : []
    content {
      sid       = "CommitCompletion"
      actions   = ["s3:PutObject"]
      resources = [for p in values(statement.value) : "arn:${local.partition}:s3:::${p.bucket}/${p.prefix}/_delta_log/0*"]
    }
  }

  dynamic "statement" {
    for_each = local.deploys_reconcile ? [local.reconcile_paths] : []
    content {
      sid       = "ReportObjects"
      actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
      resources = ["arn:${local.partition}:s3:::${statement.value.report.bucket}/${statement.value.report.prefix}/*"]
    }
  }

  dynamic "statement" {
    for_each = local.deploys_reconcile ? [local.reconcile_paths] : []
    content {
      sid     = "NoDeltaLogDeletes"
      effect  = "Deny"
      actions = ["s3:DeleteObject"]
      resources = [
        "arn:${local.partition}:s3:::${statement.value.report.bucket}/${statement.value.report.prefix}/_delta_log/0*",
        "arn:${local.partition}:s3:::${statement.value.report.bucket}/${statement.value.report.prefix}/_delta_log/_*",
      ]
    }
  }

  dynamic "statement" {
    for_each = local.deploys_reconcile && length(local.secret_arns) > 0 ? [local.secret_arns] : []
    content {
      sid       = "SourcePassword"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = statement.value
    }
  }

  dynamic "statement" {
    for_each = local.deploys_reconcile && local.uses_dynamo ? [local.reconcile_table_paths] : []
    content {
      sid       = "ReportLogItems"
      actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"]
      resources = [local.dynamo_table_arn]
      condition {
        test     = "ForAllValues:StringEquals"
        variable = "dynamodb:LeadingKeys"
        values   = [statement.value.report]
      }
    }
  }

  dynamic "statement" {
    for_each = local.deploys_reconcile && local.uses_dynamo ? [local.reconcile_table_paths] : []
    content {
      sid       = "ReadLogItems"
      actions   = ["dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query"]
      resources = [local.dynamo_table_arn]
      condition {
        test     = "ForAllValues:StringEquals"
        variable = "dynamodb:LeadingKeys"
        values   = [for k, v in statement.value : v if k != "report"]
      }
    }
  }
}

resource "aws_iam_role" "reconcile" {
  count = local.create_reconcile ? 1 : 0

  name                 = "${var.name}-reconcile"
  description          = "mssqlcdc reconcile of ${var.spec.app_id}: reads SQL Server and the lake, writes the report table"
  assume_role_policy   = data.aws_iam_policy_document.lambda_assume.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

resource "aws_iam_role_policy" "reconcile" {
  count = local.create_reconcile ? 1 : 0

  name   = "mssqlcdc"
  role   = aws_iam_role.reconcile[0].id
  policy = data.aws_iam_policy_document.reconcile.json
}

data "aws_iam_policy_document" "states_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["states.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}

resource "aws_iam_role" "states" {
  count = var.role_arns.states == null ? 1 : 0

  name                 = "${var.name}-states"
  description          = "mssqlcdc state machines of ${var.spec.app_id}"
  assume_role_policy   = data.aws_iam_policy_document.states_assume.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

data "aws_iam_policy_document" "states" {
  statement {
    sid       = "InvokeFunctions"
    actions   = ["lambda:InvokeFunction"]
    resources = flatten([for f in aws_lambda_function.this : [f.arn, "${f.arn}:*"]])
  }

  # A machine that restarts itself before the 25,000-event history limit (the backfill
  # loop, docs/design.md §6.3) calls states:startExecution on its own ARN.
  dynamic "statement" {
    for_each = length(local.self_starting_machines) > 0 ? [local.self_starting_machines] : []
    content {
      sid       = "RestartSelf"
      actions   = ["states:StartExecution"]
      resources = [for m in statement.value : "arn:${local.partition}:states:${local.region}:${local.account}:stateMachine:${var.name}-${m}"]
    }
  }

  # Vended log delivery: these actions take no resource-level scoping (Step Functions
  # developer guide, "IAM policies for logging to CloudWatch Logs").
  statement {
    sid = "LogDelivery"
    actions = [
      "logs:CreateLogDelivery",
      "logs:GetLogDelivery",
      "logs:UpdateLogDelivery",
      "logs:DeleteLogDelivery",
      "logs:ListLogDeliveries",
      "logs:PutResourcePolicy",
      "logs:DescribeResourcePolicies",
      "logs:DescribeLogGroups",
    ]
    resources = ["*"]
  }

  # X-Ray tracing of executions (tracing_mode = "Active"): Step Functions developer guide,
  # "IAM policies for using AWS X-Ray".
  dynamic "statement" {
    for_each = var.tracing_mode == "Active" ? [1] : []
    content {
      sid       = "Tracing"
      actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"]
      resources = ["*"]
    }
  }
}

resource "aws_iam_role_policy" "states" {
  count = var.role_arns.states == null ? 1 : 0

  name   = "mssqlcdc"
  role   = aws_iam_role.states[0].id
  policy = data.aws_iam_policy_document.states.json
}

data "aws_iam_policy_document" "scheduler_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type = "Service"
      # EventBridge's rule starting the recover machine (recover.tf) uses this role too.
      identifiers = local.recovers ? ["scheduler.amazonaws.com", "events.amazonaws.com"] : ["scheduler.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}

resource "aws_iam_role" "scheduler" {
  count = var.role_arns.scheduler == null ? 1 : 0

  name                 = "${var.name}-scheduler"
  description          = "EventBridge Scheduler running the mssqlcdc stream of ${var.spec.app_id}"
  assume_role_policy   = data.aws_iam_policy_document.scheduler_assume.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

data "aws_iam_policy_document" "scheduler" {
  statement {
    sid       = "InvokeStream"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.this["stream"].arn, "${aws_lambda_function.this["stream"].arn}:*"]
  }

  dynamic "statement" {
    for_each = local.deploys_maintain ? [aws_lambda_function.this["maintain"].arn] : []
    content {
      sid       = "InvokeMaintain"
      actions   = ["lambda:InvokeFunction"]
      resources = [statement.value, "${statement.value}:*"]
    }
  }

  dynamic "statement" {
    for_each = local.recovers ? [local.recover_machine] : []
    content {
      sid       = "StartRecover"
      actions   = ["states:StartExecution"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = local.deploys_apply ? [aws_lambda_function.this["apply"].arn] : []
    content {
      sid       = "InvokeApply"
      actions   = ["lambda:InvokeFunction"]
      resources = [statement.value, "${statement.value}:*"]
    }
  }

  dynamic "statement" {
    for_each = local.deploys_reconcile ? [aws_lambda_function.this["reconcile"].arn] : []
    content {
      sid       = "InvokeReconcile"
      actions   = ["lambda:InvokeFunction"]
      resources = [statement.value, "${statement.value}:*"]
    }
  }
}

resource "aws_iam_role_policy" "scheduler" {
  count = var.role_arns.scheduler == null ? 1 : 0

  name   = "mssqlcdc"
  role   = aws_iam_role.scheduler[0].id
  policy = data.aws_iam_policy_document.scheduler.json
}
