# Three roles, each allowed only what its principal does:
#   <name>-lambda     the functions: this table's S3 prefixes, the delta_log items, the
#                     password secret, their own log groups (and ENIs inside a VPC);
#   <name>-states     the state machines: invoke this table's functions, deliver logs;
#   <name>-scheduler  EventBridge Scheduler: invoke the stream.

locals {
  # Where the functions read and write, from the spec's URLs (validated as
  # s3://bucket/prefix without a trailing '/'): the three locations internal/connect opens. The
  # snapshot's staging area (plans, manifests) is under the checkpoint. docs/design.md §4.4's
  # "<bronze>_snapshot_plans" table belongs to the chunked snapshot, which is not built
  # (core/config refuses it), so nothing is granted there.
  s3_locations = {
    bronze     = var.spec.bronze
    checkpoint = var.spec.checkpoint
    facts      = var.spec.facts_table
  }
  s3_paths = {
    for k, u in local.s3_locations : k => {
      bucket = regex("^s3://([^/]+)/(.+)$", u)[0]
      prefix = regex("^s3://([^/]+)/(.+)$", u)[1]
    }
  }
  s3_buckets = toset([for p in values(local.s3_paths) : p.bucket])

  # The Delta log table's items, in the region the spec names for it (dynamo_region, else
  # region, else the provider's), as internal/connect opens it.
  dynamo_table     = coalesce(var.spec.storage.dynamo_table, "-")
  dynamo_table_arn = "arn:${local.partition}:dynamodb:${coalesce(var.spec.storage.dynamo_region, var.spec.storage.region, local.region)}:${local.account}:table/${local.dynamo_table}"
  uses_dynamo      = var.spec.storage.dynamo_table != null

  # Secrets Manager ARNs end in "-" and six random characters; a spec may give the ARN with
  # or without them (GetSecretValue accepts both), so the policy matches both forms.
  secret_arns = var.spec.source.password_secret_arn == null ? [] : [
    var.spec.source.password_secret_arn,
    "${var.spec.source.password_secret_arn}-??????",
  ]
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

resource "aws_iam_role" "lambda" {
  name                 = "${var.name}-lambda"
  description          = "mssqlcdc functions of ${var.spec.app_id}"
  assume_role_policy   = data.aws_iam_policy_document.lambda_assume.json
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags
}

data "aws_iam_policy_document" "lambda" {
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = [for g in aws_cloudwatch_log_group.function : "${g.arn}:*"]
  }

  # deltalog/storage/s3store: GetObject (also HeadObject and the source of CopyObject),
  # PutObject (also conditional puts and the target of CopyObject), DeleteObject.
  statement {
    sid       = "TableObjects"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
    resources = [for p in values(local.s3_paths) : "arn:${local.partition}:s3:::${p.bucket}/${p.prefix}/*"]
  }

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

  # deltalog/logstore/dynamo: the S3DynamoDBLogStore item per commit.
  dynamic "statement" {
    for_each = local.uses_dynamo ? [local.dynamo_table_arn] : []
    content {
      sid       = "DeltaLogItems"
      actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = length(local.secret_arns) > 0 ? [local.secret_arns] : []
    content {
      sid       = "SourcePassword"
      actions   = ["secretsmanager:GetSecretValue"]
      resources = statement.value
    }
  }

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
}

resource "aws_iam_role_policy" "lambda" {
  name   = "mssqlcdc"
  role   = aws_iam_role.lambda.id
  policy = data.aws_iam_policy_document.lambda.json
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
}

resource "aws_iam_role_policy" "states" {
  name   = "mssqlcdc"
  role   = aws_iam_role.states.id
  policy = data.aws_iam_policy_document.states.json
}

data "aws_iam_policy_document" "scheduler_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}

resource "aws_iam_role" "scheduler" {
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
}

resource "aws_iam_role_policy" "scheduler" {
  name   = "mssqlcdc"
  role   = aws_iam_role.scheduler.id
  policy = data.aws_iam_policy_document.scheduler.json
}
