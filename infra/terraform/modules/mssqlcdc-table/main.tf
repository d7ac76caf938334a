# One SQL Server table captured into Delta Lake on S3 (docs/design.md §2): the Lambda functions
# built by `make build`, each reading this table's spec from MSSQLCDC_SPEC. The IAM roles are
# in iam.tf, the stream's schedule in schedule.tf, the state machines in stepfunctions.tf,
# the alarms, dashboard and failure queue in alarms.tf and dashboard.tf.

data "aws_partition" "current" {}
data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

locals {
  repo_root        = "${path.module}/../../../.."
  dist_dir         = coalesce(var.dist_dir, "${local.repo_root}/dist")
  statemachine_dir = coalesce(var.statemachine_dir, "${local.repo_root}/statemachine")

  partition = data.aws_partition.current.partition
  # .id is the region's name in provider 5 and 6 (6 deprecates .name in favour of .region).
  region  = data.aws_region.current.id
  account = data.aws_caller_identity.current.account_id

  # The facts table: the spec's when it names one (shared among tables), else one of this
  # table's own next to bronze (docs/decisions/0013-facts-rows-deferred.md: a facts table
  # per source table keeps 100 tables from contending on one Delta log). The variable's
  # validations apply the same rule.
  facts_table = coalesce(var.spec.facts_table, "${var.spec.bronze}_facts")

  # The spec as the functions read it (core/config.Parse): null attributes are left out so
  # the functions apply their own defaults, and unknown names never reach the document
  # (Parse refuses unknown fields).
  spec_document = merge(
    { for k, v in var.spec : k => v if v != null && !contains(["source", "options", "storage", "silver", "reconcile"], k) },
    {
      facts_table = local.facts_table
      source      = { for k, v in var.spec.source : k => v if v != null }
      options     = { for k, v in var.spec.options : k => v if v != null }
      storage     = { for k, v in var.spec.storage : k => v if v != null }
    },
    var.spec.silver == null ? {} : { silver = { for k, v in var.spec.silver : k => v if v != null } },
    var.spec.reconcile == null ? {} : { reconcile = { for k, v in var.spec.reconcile : k => v if v != null } },
  )
  spec_json = jsonencode(local.spec_document)

  # Per-function defaults. The stream stops 30 s before its deadline (core/stream
  # DefaultMargin) and is scheduled every few minutes, so 5 minutes keeps an invocation
  # short and its retries cheap. The snapshot steps read one key range each and may use all
  # of Lambda's 15 minutes (the bootstrap machine's Tasks time out at 960 s, above any
  # function timeout the module accepts, so a retry never overlaps a running invocation).
  # Memory above 1769 MB buys a second vCPU for Parquet encoding. /tmp holds the Parquet
  # files being written before upload, up to 128 MiB each (parquetio
  # DefaultTargetFileSize): one per snapshot read, one per stream reader (numPartitions of
  # them). maintain (functions/maintain, scheduled compaction and clean-up) rewrites up to
  # 128 MiB files in /tmp and stops starting compaction groups 3 minutes before its deadline
  # (functions/maintain DefaultMargin).
  function_defaults = {
    stream          = { memory_size = 2048, timeout = 300, ephemeral_storage = 2048 }
    snapshot        = { memory_size = 2048, timeout = 900, ephemeral_storage = 2048 }
    "backfill-wave" = { memory_size = 2048, timeout = 900, ephemeral_storage = 2048 }
    seed            = { memory_size = 2048, timeout = 900, ephemeral_storage = 2048 }
    maintain        = { memory_size = 2048, timeout = 900, ephemeral_storage = 2048 }
    # apply (functions/apply) keeps silver: a key range holds up to silver.memory_mb (256
    # MiB) of bronze rows and writes 32 MiB files through /tmp; it starts no range in the
    # last 2 minutes (functions/apply DefaultMargin).
    apply = { memory_size = 2048, timeout = 900, ephemeral_storage = 2048 }
    # reconcile (functions/reconcile) holds silver's keys (8 bytes a row) and a digest per
    # tier-2 row (about 100 bytes), and writes one report file.
    reconcile = { memory_size = 1024, timeout = 900, ephemeral_storage = 512 }
  }
  # The functions deployed: var.functions, plus those the spec and inputs call for, with
  # the defaults unless var.functions overrides them: apply whenever the spec names a
  # silver table, reconcile whenever it has a reconcile section, backfill-wave for chunked
  # snapshots (the backfill machine calls it), seed with seed_copies (the seed machine
  # calls it).
  deploys_apply     = var.spec.silver != null
  deploys_reconcile = var.spec.reconcile != null
  deploys_backfill  = var.spec.snapshot == "chunked"
  deploys_seed      = length(var.seed_copies) > 0
  implied_functions = concat(
    local.deploys_apply ? ["apply"] : [],
    local.deploys_reconcile ? ["reconcile"] : [],
    local.deploys_backfill ? ["backfill-wave"] : [],
    local.deploys_seed ? ["seed"] : [],
  )
  function_requests = merge({
    for fn in local.implied_functions : fn => { memory_size = null, timeout = null, ephemeral_storage = null, zip = null, s3_key = null, s3_object_version = null, source_code_hash = null }
  }, var.functions)
  code_from_s3 = var.code_s3_bucket != null
  functions = {
    for name, f in local.function_requests : name => {
      function_name     = "${var.name}-${name}"
      memory_size       = coalesce(f.memory_size, local.function_defaults[name].memory_size)
      timeout           = coalesce(f.timeout, local.function_defaults[name].timeout)
      ephemeral_storage = coalesce(f.ephemeral_storage, local.function_defaults[name].ephemeral_storage)
      zip               = coalesce(f.zip, "${local.dist_dir}/${name}.zip")
      s3_key            = local.code_from_s3 ? coalesce(f.s3_key, "${var.code_s3_key_prefix}${name}.zip") : null
      s3_object_version = f.s3_object_version
      source_code_hash  = f.source_code_hash
    }
  }

  # MSSQLCDC_METRICS: the stream's values declared as CloudWatch metrics (the others stay
  # fields of the same log line, for Logs Insights and the dashboard).
  environment = merge(var.extra_environment, {
    MSSQLCDC_SPEC    = local.spec_json
    MSSQLCDC_METRICS = join(",", var.custom_metrics)
  })
  # Lambda's limit is on all the variables together, names and values (4 KB, "Lambda
  # quotas"), so extra_environment counts as well as the spec. extra_environment is
  # sensitive; its size is not.
  environment_bytes = nonsensitive(length(join("", [for k, v in local.environment : "${k}${v}"])))

  # What invokes a function: the alias when alias_name is set (so schedules and state
  # machines run the published version it points at), else the function ($LATEST).
  invoke_arns = {
    for k, f in aws_lambda_function.this : k => var.alias_name == null ? f.arn : aws_lambda_alias.this[k].arn
  }
}

resource "aws_cloudwatch_log_group" "function" {
  for_each = local.functions

  # The name Lambda logs to by default, created here so that retention applies and the
  # role needs no logs:CreateLogGroup.
  name              = "/aws/lambda/${each.value.function_name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.log_kms_key_arn
  tags              = var.tags
}

resource "aws_lambda_function" "this" {
  for_each = local.functions

  function_name = each.value.function_name
  description   = substr("mssqlcdc ${each.key} of ${var.spec.source.captureInstance} into ${var.spec.bronze}", 0, 256)
  role          = local.function_role_arns[each.key]

  # make build: a static Go binary named bootstrap for the OS-only runtime on Graviton
  # (arm64; x86_64 for zips built with LAMBDA_GOARCH=amd64, as for LocalStack), in
  # a zip that is byte-identical across builds of the same code (internal/lambdazip), so
  # source_code_hash changes only with the code. From S3 (code_s3_bucket) the hash is
  # functions[fn].source_code_hash, and s3_object_version pins the object.
  filename          = local.code_from_s3 ? null : each.value.zip
  s3_bucket         = local.code_from_s3 ? var.code_s3_bucket : null
  s3_key            = each.value.s3_key
  s3_object_version = each.value.s3_object_version
  source_code_hash  = local.code_from_s3 ? each.value.source_code_hash : (fileexists(each.value.zip) ? filebase64sha256(each.value.zip) : null)
  runtime           = "provided.al2023"
  architectures     = [var.architecture]
  handler           = "bootstrap"
  publish           = var.publish

  memory_size = each.value.memory_size
  timeout     = each.value.timeout
  ephemeral_storage {
    size = each.value.ephemeral_storage
  }

  # One stream invocation at a time per table: a second one would find the checkpoint's
  # offsets taken and stop with ConcurrentStreamError (docs/design.md §4.5, §6.1). One apply
  # at a time too: a second would only race the first for silver's commits.
  # One reconcile at a time: a second would compete with it for the report's next run.
  reserved_concurrent_executions = contains(["stream", "apply", "reconcile"], each.key) ? 1 : -1

  environment {
    variables = local.environment
  }

  # The functions write JSON lines themselves (log/slog) and the stream its metrics as EMF
  # lines without a level, which Lambda counts as INFO: variables.tf refuses an
  # application_log_level that would drop them.
  logging_config {
    log_format            = var.logging.log_format
    application_log_level = var.logging.application_log_level
    system_log_level      = var.logging.system_log_level
    log_group             = aws_cloudwatch_log_group.function[each.key].name
  }

  dynamic "tracing_config" {
    for_each = var.tracing_mode == null ? [] : [var.tracing_mode]
    content {
      mode = tracing_config.value
    }
  }

  dynamic "vpc_config" {
    for_each = var.vpc_config == null ? [] : [var.vpc_config]
    content {
      subnet_ids         = vpc_config.value.subnet_ids
      security_group_ids = vpc_config.value.security_group_ids
    }
  }

  tags = var.tags

  depends_on = [
    aws_cloudwatch_log_group.function,
    aws_iam_role_policy.lambda,
    aws_iam_role_policy.maintain,
    aws_iam_role_policy.apply,
    aws_iam_role_policy.reconcile,
  ]

  lifecycle {
    precondition {
      condition     = local.code_from_s3 || fileexists(each.value.zip)
      error_message = "${each.value.zip} does not exist: run make build at the repository root (or set dist_dir / functions[\"${each.key}\"].zip, or code_s3_bucket)."
    }
    precondition {
      condition     = local.environment_bytes <= 4096
      error_message = "The functions' environment variables (the rendered spec, ${length(local.spec_json)} bytes, and extra_environment) are ${local.environment_bytes} bytes; Lambda allows 4 KB for all their names and values together."
    }
    precondition {
      condition     = each.key != "stream" || var.spec.max_seconds == null || try(var.spec.max_seconds < each.value.timeout - 30, true)
      error_message = "spec.max_seconds must be less than the stream's timeout minus its 30 s margin (${each.value.timeout - 30} s); otherwise the deadline, not max_seconds, bounds each invocation."
    }
    precondition {
      condition     = each.key != "stream" || each.value.ephemeral_storage >= 128 * coalesce(var.spec.options.numPartitions, 4) + 256
      error_message = "The stream writes up to numPartitions Parquet files of 128 MiB at once in /tmp: give it at least ${128 * coalesce(var.spec.options.numPartitions, 4) + 256} MB of ephemeral_storage (functions[\"stream\"].ephemeral_storage), or lower numPartitions."
    }
    precondition {
      condition     = each.key != "apply" || var.spec.silver != null
      error_message = "functions.apply keeps silver: set spec.silver (at least silver.table), or leave apply out of functions."
    }
    precondition {
      condition     = each.key != "reconcile" || var.spec.reconcile != null
      error_message = "functions.reconcile compares silver with the source: set spec.reconcile (at least reconcile.report_table), or leave reconcile out of functions."
    }
    precondition {
      condition     = each.key != "apply" || each.value.memory_size >= 2 * coalesce(try(var.spec.silver.memory_mb, null), 256) + 256
      error_message = "The apply function holds up to spec.silver.memory_mb of bronze rows per key range and the silver files they touch: give it at least ${2 * coalesce(try(var.spec.silver.memory_mb, null), 256) + 256} MB (functions[\"apply\"].memory_size), or lower silver.memory_mb."
    }
    precondition {
      condition     = var.spec.source.password_env == null || contains(keys(var.extra_environment), coalesce(var.spec.source.password_env, "-"))
      error_message = "spec.source.password_env names a variable that extra_environment does not set."
    }
    precondition {
      condition     = !var.alarms_enabled || alltrue([for m in ["IngestionLagSeconds", "RetentionHeadroomHours"] : contains(var.custom_metrics, m)])
      error_message = "The alarms watch IngestionLagSeconds and RetentionHeadroomHours: keep both in custom_metrics, or set alarms_enabled = false."
    }
  }
}

# A published version per apply that changes the code or configuration, and an alias
# following it: schedules and state machines invoke the alias (local.invoke_arns).
resource "aws_lambda_alias" "this" {
  for_each = var.alias_name == null ? {} : local.functions

  name             = var.alias_name
  description      = "mssqlcdc ${each.key} of ${var.spec.app_id}"
  function_name    = aws_lambda_function.this[each.key].function_name
  function_version = aws_lambda_function.this[each.key].version

  lifecycle {
    precondition {
      condition     = var.publish
      error_message = "alias_name needs publish = true: an alias points at a published version."
    }
  }
}

# The scheduler invokes the stream asynchronously. An event that finds the previous
# invocation still running is throttled (reserved concurrency 1) and queued by Lambda; it is
# dropped once older than one interval, since the next scheduled event supersedes it, and a
# failed invocation is not retried for the same reason. Either way Lambda sends a record of
# the event to the on-failure destination (alarms.tf), and counts a dropped one in
# AsyncEventsDropped.
resource "aws_lambda_function_event_invoke_config" "stream" {
  function_name                = aws_lambda_function.this["stream"].function_name
  qualifier                    = var.alias_name
  maximum_event_age_in_seconds = max(60, min(21600, var.schedule_every_minutes * 60))
  maximum_retry_attempts       = 0

  dynamic "destination_config" {
    for_each = local.stream_failure_destination == null && !local.recovers ? [] : [1]
    content {
      dynamic "on_failure" {
        for_each = local.stream_failure_destination == null ? [] : [local.stream_failure_destination]
        content {
          destination = on_failure.value
        }
      }
      # on_data_loss = "resnapshot": the result goes to EventBridge, whose rule starts the
      # recover machine on outcome resnapshot_required (recover.tf).
      dynamic "on_success" {
        for_each = local.recovers ? [local.default_bus_arn] : []
        content {
          destination = on_success.value
        }
      }
    }
  }

  depends_on = [aws_lambda_alias.this]
}
