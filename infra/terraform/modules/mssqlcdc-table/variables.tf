# Inputs of one table's deployment. Validation blocks catch here, at plan time, what would
# otherwise fail only when a Lambda starts (core/config Validate) or when AWS refuses a call.
# Each condition refers only to its own variable (required before Terraform 1.9); checks
# across variables are preconditions in main.tf.

variable "name" {
  description = "Prefix of every resource of this table (functions \"<name>-stream\", role \"<name>-lambda\", state machines \"<name>-bootstrap\", ...). Letters, digits, '-' and '_', at most 40 characters so that \"<name>-backfill-wave\" stays within Lambda's 64."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,40}$", var.name))
    error_message = "The name must be 1 to 40 letters, digits, '-' or '_'."
  }
}

variable "spec" {
  description = <<-EOT
    The table spec (docs/design.md §4.6, core/config): the JSON document every function of this
    table reads from its MSSQLCDC_SPEC environment variable. Attribute names are the JSON
    names; unset (null) attributes are left out of the document so the functions apply their
    own defaults. The bronze, checkpoint and facts_table URLs must be s3://bucket/prefix:
    they also scope the functions' IAM policy. facts_table may be left out: this table then
    gets a facts table of its own, "<bronze>_facts" (docs/deploy.md § One facts table per
    source table); set it to share one among tables. The password never goes in the spec:
    set source.password_secret_arn (or source.password_env with extra_environment).
  EOT
  type = object({
    app_id = string
    source = object({
      dsn                 = string
      password_secret_arn = optional(string)
      password_env        = optional(string)
      captureInstance     = string
      # TLS (docs/spec.md): a plain DSN gets encrypt=true with certificate verification.
      encrypt                  = optional(string)
      certificate              = optional(string)
      host_name_in_certificate = optional(string)
      trust_server_certificate = optional(bool)
      development              = optional(bool)
      dial_timeout_seconds     = optional(number)
      login_timeout_seconds    = optional(number)
      auth                     = optional(string)
      tenant_id                = optional(string)
      client_id                = optional(string)
    })
    options = optional(object({
      numPartitions      = optional(number)
      maxCommitsPerBatch = optional(number)
      startingLsn        = optional(string)
      snapshotKeys       = optional(list(string))
      isolationLevel     = optional(string)
      lockTimeoutMs      = optional(number)
      snapshotLsn        = optional(string)
      sourceTimeZone     = optional(string)
      failOnDataLoss     = optional(bool)
      includeCommandId   = optional(bool)
      schemaChangePolicy = optional(string)
      columns            = optional(list(string))
    }), {})
    bronze              = string
    checkpoint          = string
    facts_table         = optional(string)
    bootstrap           = optional(bool)
    snapshot            = optional(string)
    chunk_rows          = optional(number)
    max_seconds         = optional(number)
    max_waves           = optional(number)
    min_headroom_hours  = optional(number)
    target_wave_seconds = optional(number)
    isolation           = optional(string)
    # Data loss and schema changes (docs/stream.md): "fail" or "resnapshot"; days between
    # automatic re-snapshots; a snapshot after a switch to a newer capture instance.
    on_data_loss             = optional(string)
    resnapshot_interval_days = optional(number)
    snapshot_on_switch       = optional(bool)
    storage = optional(object({
      region            = optional(string)
      s3_endpoint       = optional(string)
      s3_path_style     = optional(bool)
      dynamo_table      = optional(string)
      dynamo_endpoint   = optional(string)
      dynamo_region     = optional(string)
      table_path_scheme = optional(string)
    }), {})
    # The current table the apply function keeps (docs/silver.md); null: no silver, no
    # apply function.
    silver = optional(object({
      table         = string
      keys          = optional(list(string))
      max_seconds   = optional(number)
      memory_mb     = optional(number)
      copy_on_write = optional(bool)
    }))
    # Scheduled reconcile of silver against the source (docs/reconcile.md); null: no
    # reconcile function. Needs silver.
    reconcile = optional(object({
      report_table = string
      bucket_rows  = optional(number)
      sample       = optional(number)
    }))
  })

  validation {
    condition     = can(regex("^[A-Za-z0-9._-]{1,200}$", var.spec.app_id))
    error_message = "spec.app_id must be 1 to 200 letters, digits, '.', '-' or '_' (the '#' suffixes are reserved)."
  }
  validation {
    condition     = can(regex("^sqlserver://[^/?#]+", var.spec.source.dsn))
    error_message = "spec.source.dsn must be a go-mssqldb URL: sqlserver://user@host:1433?database=db."
  }
  validation {
    condition     = !can(regex("^sqlserver://[^/?#@]*:[^/?#@]*@", var.spec.source.dsn))
    error_message = "spec.source.dsn holds a password (user:password@host): it would sit in clear text in the Lambda environment. Put it in Secrets Manager and set spec.source.password_secret_arn."
  }
  validation {
    # go-mssqldb also takes the password as a query parameter (password=, or its ADO
    # synonym pwd=).
    condition     = !can(regex("(?i)[?&;](password|pwd)=", var.spec.source.dsn))
    error_message = "spec.source.dsn holds a password (a password= or pwd= parameter): it would sit in clear text in the Lambda environment. Put it in Secrets Manager and set spec.source.password_secret_arn."
  }
  validation {
    condition     = var.spec.source.password_secret_arn == null || var.spec.source.password_env == null
    error_message = "Set one of spec.source.password_secret_arn and spec.source.password_env, not both."
  }
  validation {
    condition     = var.spec.source.password_secret_arn == null ? true : can(regex("^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+$", var.spec.source.password_secret_arn))
    error_message = "spec.source.password_secret_arn must be a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>)."
  }
  validation {
    condition     = var.spec.source.password_env == null ? true : can(regex("^[A-Za-z_][A-Za-z0-9_]*$", var.spec.source.password_env))
    error_message = "spec.source.password_env must be an environment variable name."
  }
  validation {
    condition     = can(regex("^[^\\]\\x00-\\x1f]{1,100}$", var.spec.source.captureInstance))
    error_message = "spec.source.captureInstance must be 1 to 100 characters, without ']' or control characters."
  }
  validation {
    condition = alltrue([
      for u in [var.spec.bronze, var.spec.checkpoint, coalesce(var.spec.facts_table, "${var.spec.bronze}_facts")] :
      can(regex("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^/](.*[^/])?$", u))
    ])
    error_message = "spec.bronze, spec.checkpoint and spec.facts_table must be s3://bucket/prefix URLs with a non-empty prefix and no trailing '/': a Lambda has no local disk to keep tables on, and the prefixes scope the IAM policy."
  }
  validation {
    condition     = var.spec.silver == null || can(regex("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^/](.*[^/])?$", var.spec.silver.table))
    error_message = "spec.silver.table must be an s3://bucket/prefix URL with a non-empty prefix and no trailing '/' (it scopes the apply function's IAM policy)."
  }
  validation {
    condition = var.spec.silver == null || alltrue([
      for u in [var.spec.bronze, var.spec.checkpoint, coalesce(var.spec.facts_table, "${var.spec.bronze}_facts")] :
      u != try(var.spec.silver.table, "") && !startswith(try(var.spec.silver.table, ""), "${u}/") && !startswith(u, "${try(var.spec.silver.table, "")}/")
    ])
    error_message = "spec.silver.table must be a location of its own: not bronze, checkpoint or facts_table, nor nested inside one of them or they inside it."
  }
  validation {
    condition     = var.spec.reconcile == null || var.spec.silver != null
    error_message = "spec.reconcile compares silver with the source: set spec.silver too."
  }
  validation {
    condition     = var.spec.reconcile == null || can(regex("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^/](.*[^/])?$", var.spec.reconcile.report_table))
    error_message = "spec.reconcile.report_table must be an s3://bucket/prefix URL with a non-empty prefix and no trailing '/' (it scopes the reconcile function's IAM policy)."
  }
  validation {
    condition = var.spec.reconcile == null || alltrue([
      for u in [var.spec.bronze, var.spec.checkpoint, coalesce(var.spec.facts_table, "${var.spec.bronze}_facts"), try(var.spec.silver.table, "-")] :
      u != try(var.spec.reconcile.report_table, "") && !startswith(try(var.spec.reconcile.report_table, ""), "${u}/") && !startswith(u, "${try(var.spec.reconcile.report_table, "")}/")
    ])
    error_message = "spec.reconcile.report_table must be a location of its own: not bronze, checkpoint, facts_table or silver, nor nested inside one of them or they inside it."
  }
  validation {
    condition     = try(var.spec.reconcile.sample, null) == null || try(var.spec.reconcile.sample >= 0 && var.spec.reconcile.sample <= 1, false)
    error_message = "spec.reconcile.sample must be a fraction from 0 to 1 (of the matching buckets compared row by row)."
  }
  validation {
    condition     = try(var.spec.silver.memory_mb, null) == null || try(var.spec.silver.memory_mb >= 1 && var.spec.silver.memory_mb <= 8192 && floor(var.spec.silver.memory_mb) == var.spec.silver.memory_mb, false)
    error_message = "spec.silver.memory_mb must be an integer from 1 to 8192 (MiB of bronze rows one key range holds)."
  }
  validation {
    condition     = length(distinct([var.spec.bronze, var.spec.checkpoint, coalesce(var.spec.facts_table, "${var.spec.bronze}_facts")])) == 3
    error_message = "spec.bronze, spec.checkpoint and spec.facts_table must be three different locations."
  }
  validation {
    condition = alltrue([
      for pair in setproduct([var.spec.bronze, var.spec.checkpoint, coalesce(var.spec.facts_table, "${var.spec.bronze}_facts")], [var.spec.bronze, var.spec.checkpoint, coalesce(var.spec.facts_table, "${var.spec.bronze}_facts")]) :
      !startswith(pair[1], "${pair[0]}/")
    ])
    error_message = "spec.bronze, spec.checkpoint and spec.facts_table must not be nested inside one another (a Delta table's prefix holds only that table)."
  }
  validation {
    condition     = var.spec.options.numPartitions == null ? true : (var.spec.options.numPartitions >= 1 && floor(var.spec.options.numPartitions) == var.spec.options.numPartitions)
    error_message = "spec.options.numPartitions must be an integer >= 1."
  }
  validation {
    condition     = var.spec.options.maxCommitsPerBatch == null ? true : (var.spec.options.maxCommitsPerBatch >= 1 && floor(var.spec.options.maxCommitsPerBatch) == var.spec.options.maxCommitsPerBatch)
    error_message = "spec.options.maxCommitsPerBatch must be an integer >= 1 (leave it out for unlimited)."
  }
  validation {
    condition     = var.spec.options.startingLsn == null ? true : can(regex("^(earliest|latest|0[xX][0-9A-Fa-f]{20})$", var.spec.options.startingLsn))
    error_message = "spec.options.startingLsn must be earliest, latest or an LSN (0x + 20 hex digits)."
  }
  validation {
    condition     = !(coalesce(var.spec.bootstrap, false) && var.spec.options.startingLsn != null)
    error_message = "spec.options.startingLsn is not allowed with spec.bootstrap = true: the snapshot's LSN is where the stream starts."
  }
  validation {
    condition     = var.spec.options.snapshotLsn == null ? true : can(regex("^0[xX][0-9A-Fa-f]{20}$", var.spec.options.snapshotLsn))
    error_message = "spec.options.snapshotLsn must be an LSN (0x + 20 hex digits)."
  }
  validation {
    condition     = var.spec.options.snapshotKeys == null ? true : alltrue([for k in var.spec.options.snapshotKeys : can(regex("^[^\\]\\x00-\\x1f]+$", k))])
    error_message = "spec.options.snapshotKeys must be column names without ']' or control characters."
  }
  validation {
    condition = alltrue([
      for v in [var.spec.options.isolationLevel, var.spec.isolation] : v == null ? true : contains(["readCommitted", "snapshot"], v)
    ])
    error_message = "spec.options.isolationLevel and spec.isolation must be readCommitted or snapshot (never NOLOCK or READ UNCOMMITTED)."
  }
  validation {
    condition     = var.spec.options.lockTimeoutMs == null ? true : var.spec.options.lockTimeoutMs >= 0
    error_message = "spec.options.lockTimeoutMs must be >= 0 milliseconds (leave it out to wait for ever)."
  }
  validation {
    condition     = var.spec.options.sourceTimeZone == null ? true : can(regex("^[^'\"\\[\\];\\x00-\\x1f]+$", var.spec.options.sourceTimeZone))
    error_message = "spec.options.sourceTimeZone must be auto, UTC or a Windows time zone name."
  }
  validation {
    condition     = var.spec.on_data_loss == null ? true : contains(["fail", "resnapshot"], var.spec.on_data_loss)
    error_message = "spec.on_data_loss must be fail (the default) or resnapshot."
  }
  validation {
    # A re-snapshot and skipping the gap are two answers to one loss (core/config).
    condition     = var.spec.on_data_loss != "resnapshot" || var.spec.options.failOnDataLoss != false
    error_message = "spec.on_data_loss = \"resnapshot\" needs spec.options.failOnDataLoss true (false skips the gap instead of re-snapshotting it)."
  }
  validation {
    condition     = var.spec.resnapshot_interval_days == null ? true : (var.spec.resnapshot_interval_days >= 0 && var.spec.resnapshot_interval_days <= 366)
    error_message = "spec.resnapshot_interval_days must be 0 to 366 days (0 allows an immediate retry)."
  }
  validation {
    condition     = var.spec.options.schemaChangePolicy == null ? true : contains(["classify", "fail"], var.spec.options.schemaChangePolicy)
    error_message = "spec.options.schemaChangePolicy must be classify (the default) or fail."
  }
  validation {
    condition     = var.spec.options.columns == null ? true : length(var.spec.options.columns) > 0 && alltrue([for c in var.spec.options.columns : can(regex("^[^\\]\\x00-\\x1f]+$", c))])
    error_message = "spec.options.columns must list column names without ']' or control characters (leave it out to read every captured column)."
  }
  validation {
    condition     = var.spec.snapshot == null ? true : contains(["full", "chunked"], var.spec.snapshot)
    error_message = "spec.snapshot must be full or chunked."
  }
  validation {
    # core/config refuses these when set: they apply only to chunked snapshots.
    condition = var.spec.snapshot == "chunked" || alltrue([
      for v in [var.spec.chunk_rows, var.spec.max_waves, var.spec.min_headroom_hours, var.spec.target_wave_seconds] : v == null
    ])
    error_message = "spec.chunk_rows, spec.max_waves, spec.min_headroom_hours and spec.target_wave_seconds apply only to snapshot = \"chunked\": remove them or set snapshot = \"chunked\"."
  }
  validation {
    condition = alltrue([
      for v in [var.spec.chunk_rows, var.spec.max_waves] : v == null ? true : (v >= 0 && floor(v) == v)
    ])
    error_message = "spec.chunk_rows and spec.max_waves must be non-negative integers."
  }
  validation {
    condition     = var.spec.chunk_rows == null ? true : var.spec.chunk_rows >= 1
    error_message = "spec.chunk_rows must be >= 1."
  }
  validation {
    condition = alltrue([
      for v in [var.spec.max_seconds, var.spec.min_headroom_hours, var.spec.target_wave_seconds] : v == null ? true : v >= 0
    ])
    error_message = "spec.max_seconds, spec.min_headroom_hours and spec.target_wave_seconds must be >= 0."
  }
  validation {
    condition = alltrue([
      for v in [var.spec.storage.s3_endpoint, var.spec.storage.dynamo_endpoint] : v == null ? true : can(regex("^https?://[^/]+", v))
    ])
    error_message = "spec.storage.s3_endpoint and spec.storage.dynamo_endpoint must be http(s):// URLs."
  }
  validation {
    condition     = var.spec.storage.dynamo_table == null ? true : can(regex("^[A-Za-z0-9_.-]{3,255}$", var.spec.storage.dynamo_table))
    error_message = "spec.storage.dynamo_table must be a DynamoDB table name (3 to 255 letters, digits, '_', '-' or '.'); leave it out to commit with S3 conditional puts."
  }
  validation {
    condition     = var.spec.storage.region == null ? true : can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]+$", var.spec.storage.region))
    error_message = "spec.storage.region must be an AWS region name such as eu-west-1."
  }
  validation {
    condition     = var.spec.storage.dynamo_region == null ? true : (var.spec.storage.dynamo_table != null && can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]+$", var.spec.storage.dynamo_region)))
    error_message = "spec.storage.dynamo_region must be an AWS region name such as us-east-1 (Spark's default for its log table), and needs spec.storage.dynamo_table."
  }
  validation {
    condition     = var.spec.storage.table_path_scheme == null ? true : (var.spec.storage.dynamo_table != null && contains(["s3", "s3a", "s3n"], var.spec.storage.table_path_scheme))
    error_message = "spec.storage.table_path_scheme must be s3, s3a or s3n (the scheme the Spark writers use), and needs spec.storage.dynamo_table."
  }
}

variable "functions" {
  description = <<-EOT
    The Lambda functions to deploy, by name (the directory under functions/ and the zip
    dist/<name>.zip that make build writes), each with optional overrides: memory_size (MB),
    timeout (seconds), ephemeral_storage (MB of /tmp), zip (a path to the zip), and with
    code_s3_bucket: s3_key (default <code_s3_key_prefix><name>.zip), s3_object_version and
    source_code_hash (base64 SHA-256 of the zip, what redeploys the code when it changes).
    Unset values take the defaults of local.function_defaults in main.tf (stream: 2048 MB,
    300 s, 2048 MB of /tmp; snapshot and maintain: 2048 MB, 900 s, 2048 MB of /tmp). stream
    is required. backfill-wave is deployed by itself with spec.snapshot = "chunked", seed
    with seed_copies (list them here only to override their defaults). maintain
    (on by default) is the scheduled compaction and clean-up (maintain_schedule_expression),
    with its own role, the only one allowed to delete Delta log files; leaving it out leaves
    bronze and facts growing a file per batch. apply (silver, docs/silver.md) is deployed
    whenever spec.silver is set, with the defaults 2048 MB, 900 s, 2048 MB of /tmp; list it
    here only to override those. reconcile (docs/reconcile.md) likewise whenever
    spec.reconcile is set (1024 MB, 900 s, 512 MB of /tmp).
  EOT
  type = map(object({
    memory_size       = optional(number)
    timeout           = optional(number)
    ephemeral_storage = optional(number)
    zip               = optional(string)
    s3_key            = optional(string)
    s3_object_version = optional(string)
    source_code_hash  = optional(string)
  }))
  default = {
    stream   = {}
    snapshot = {}
    maintain = {}
  }

  validation {
    condition     = contains(keys(var.functions), "stream")
    error_message = "functions must include stream: the schedule runs it."
  }
  validation {
    condition     = alltrue([for k in keys(var.functions) : contains(["stream", "snapshot", "backfill-wave", "seed", "maintain", "apply", "reconcile"], k)])
    error_message = "functions keys must be among stream, snapshot, backfill-wave, seed, maintain, apply and reconcile (the directories under functions/)."
  }
  validation {
    condition     = alltrue([for f in values(var.functions) : f.memory_size == null ? true : (f.memory_size >= 128 && f.memory_size <= 10240)])
    error_message = "functions[*].memory_size must be 128 to 10240 MB (Lambda's range)."
  }
  validation {
    condition     = alltrue([for f in values(var.functions) : f.timeout == null ? true : (f.timeout >= 60 && f.timeout <= 900)])
    error_message = "functions[*].timeout must be 60 to 900 seconds: Lambda stops at 15 minutes, and the stream keeps 30 s free before its deadline (core/stream DefaultMargin)."
  }
  validation {
    condition     = alltrue([for f in values(var.functions) : f.ephemeral_storage == null ? true : (f.ephemeral_storage >= 512 && f.ephemeral_storage <= 10240)])
    error_message = "functions[*].ephemeral_storage must be 512 to 10240 MB."
  }
}

variable "state_machines" {
  description = "Step Functions machines to deploy, by the file name under statemachine/ without .asl.json. Added by themselves: \"backfill\" with spec.snapshot = \"chunked\", \"seed\" with seed_copies, \"recover\" with spec.on_data_loss = \"resnapshot\". Each is rendered with templatefile() and the function ARNs; every function it calls must be deployed."
  type        = set(string)
  default     = ["bootstrap"]

  validation {
    condition     = alltrue([for m in var.state_machines : can(regex("^[a-z][a-z0-9_-]*$", m))])
    error_message = "state_machines must be file names of statemachine/*.asl.json without the suffix, such as bootstrap."
  }
}

variable "seed_copies" {
  description = <<-EOT
    Where the copies this table may be seeded from lie (docs/seed.md): s3://bucket/prefix
    URLs of Delta tables or Parquet prefixes, read-only. Non-empty deploys the seed function
    and the seed machine (statemachine/seed.asl.json) and lets the functions' role list and
    read these prefixes, nothing more. Empty (the default) deploys no seed.
  EOT
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for u in var.seed_copies : can(regex("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^*?]*[^/*?]$", u))])
    error_message = "seed_copies must be s3://bucket/prefix URLs without a trailing '/' or wildcards (a copy's Delta table or its Parquet files' prefix)."
  }
}

variable "architecture" {
  description = "Lambda architecture the zips are built for: arm64 (Graviton, what make build builds) or x86_64 (make build LAMBDA_GOARCH=amd64, e.g. for LocalStack on an amd64 host)."
  type        = string
  default     = "arm64"

  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}

variable "code_s3_bucket" {
  description = "Deploy the functions' code from this S3 bucket instead of local zips: s3://<bucket>/<code_s3_key_prefix><function>.zip (or functions[fn].s3_key). The bucket must be in the functions' region. Set functions[fn].source_code_hash (base64 SHA-256 of the zip) or s3_object_version so that a new upload redeploys. Null deploys dist/<function>.zip."
  type        = string
  default     = null

  validation {
    condition     = var.code_s3_bucket == null ? true : can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.code_s3_bucket))
    error_message = "code_s3_bucket must be a bucket name (not an s3:// URL)."
  }
}

variable "code_s3_key_prefix" {
  description = "Key prefix of the zips in code_s3_bucket, e.g. \"mssqlcdc/v1.4.0/\" (the key is <prefix><function>.zip)."
  type        = string
  default     = ""
}

variable "publish" {
  description = "Publish a new Lambda version whenever the code or configuration changes. Needed for alias_name."
  type        = bool
  default     = false
}

variable "alias_name" {
  description = "Create an alias of this name per function pointing at the version just published (needs publish = true); the schedule and the state machines then invoke the alias. Null invokes $LATEST."
  type        = string
  default     = null

  validation {
    condition     = var.alias_name == null ? true : can(regex("^[A-Za-z][A-Za-z0-9_-]{0,127}$", var.alias_name)) && !can(regex("^[0-9]+$", var.alias_name))
    error_message = "alias_name must start with a letter and hold letters, digits, '-' or '_' (at most 128 characters)."
  }
}

variable "logging" {
  description = "Lambda's logging_config: log_format (Text, or JSON for Lambda's own lines as JSON and level filtering), application_log_level (TRACE, DEBUG or INFO; JSON only) and system_log_level (DEBUG, INFO or WARN; JSON only). The functions write JSON lines either way. Each function logs to the log group the module creates."
  type = object({
    log_format            = optional(string, "Text")
    application_log_level = optional(string)
    system_log_level      = optional(string)
  })
  default = {}

  validation {
    condition     = contains(["Text", "JSON"], var.logging.log_format)
    error_message = "logging.log_format must be Text or JSON."
  }
  validation {
    condition     = var.logging.log_format == "JSON" || (var.logging.application_log_level == null && var.logging.system_log_level == null)
    error_message = "logging.application_log_level and system_log_level need log_format = \"JSON\" (Lambda filters levels of JSON logs only)."
  }
  validation {
    # The stream's metric lines (CloudWatch Embedded Metric Format) carry no level, so
    # Lambda files them as INFO: WARN and above would drop them and every metric with them.
    condition     = var.logging.application_log_level == null ? true : contains(["TRACE", "DEBUG", "INFO"], var.logging.application_log_level)
    error_message = "logging.application_log_level must be TRACE, DEBUG or INFO: the stream's metrics are log lines Lambda counts as INFO, and a higher level would drop them (and fire the ingestion lag alarm)."
  }
  validation {
    condition     = var.logging.system_log_level == null ? true : contains(["DEBUG", "INFO", "WARN"], var.logging.system_log_level)
    error_message = "logging.system_log_level must be DEBUG, INFO or WARN."
  }
}

variable "tracing_mode" {
  description = "X-Ray tracing of the functions and the state machines: Active (the roles get the X-Ray write actions), PassThrough, or null (Lambda's default, PassThrough, for the functions; off for the machines)."
  type        = string
  default     = null

  validation {
    condition     = var.tracing_mode == null ? true : contains(["Active", "PassThrough"], var.tracing_mode)
    error_message = "tracing_mode must be Active, PassThrough or null."
  }
}

variable "role_arns" {
  description = "Bring your own IAM roles: lambda (stream, snapshot, ...), maintain, apply, states, scheduler. A role given here is used as it is (the module creates and attaches nothing for it; the policy_documents output says what it needs); the others are created. The role of a Lambda function must trust lambda.amazonaws.com, states states.amazonaws.com, scheduler scheduler.amazonaws.com (and events.amazonaws.com with spec.on_data_loss = \"resnapshot\": EventBridge's rule starts the recover machine with it)."
  type = object({
    lambda    = optional(string)
    maintain  = optional(string)
    apply     = optional(string)
    reconcile = optional(string)
    states    = optional(string)
    scheduler = optional(string)
  })
  default = {}

  validation {
    condition     = alltrue([for r in values(var.role_arns) : r == null ? true : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/", r))])
    error_message = "role_arns values must be IAM role ARNs (arn:aws:iam::<account>:role/<name>)."
  }
}

variable "dist_dir" {
  description = "Directory holding <function>.zip as make build writes them. Null uses the repository's dist/ relative to this module, which works when the module is used from a checkout of the repository; set it when the module is fetched from elsewhere."
  type        = string
  default     = null
}

variable "statemachine_dir" {
  description = "Directory holding the *.asl.json definitions. Null uses the repository's statemachine/ relative to this module."
  type        = string
  default     = null
}

variable "schedule_every_minutes" {
  description = "Minutes between stream invocations (EventBridge Scheduler rate expression). At least 1: Scheduler fires at most once a minute."
  type        = number
  default     = 5

  validation {
    condition     = var.schedule_every_minutes >= 1 && var.schedule_every_minutes <= 1440 && floor(var.schedule_every_minutes) == var.schedule_every_minutes
    error_message = "schedule_every_minutes must be a whole number of minutes from 1 to 1440."
  }
}

variable "schedule_enabled" {
  description = "Whether the schedule runs the stream. With spec.bootstrap = true, keep it false until the bootstrap machine has succeeded (the stream stops with NoSnapshotError before that), then set it true."
  type        = bool
  default     = true
}

variable "maintain_schedule_expression" {
  description = "When the maintain function runs (functions.maintain): an EventBridge Scheduler rate() or cron() expression, in UTC. Default hourly: a table streamed every minute gains about sixty small files between runs."
  type        = string
  default     = "rate(1 hour)"

  validation {
    condition     = can(regex("^(rate|cron)\\(.+\\)$", var.maintain_schedule_expression))
    error_message = "maintain_schedule_expression must be an EventBridge Scheduler rate(...) or cron(...) expression, e.g. rate(1 hour) or cron(15 3 * * ? *)."
  }
}

variable "maintain_schedule_enabled" {
  description = "Whether the maintain schedule runs. Safe while the stream runs and before the bootstrap (a table not created yet is skipped)."
  type        = bool
  default     = true
}

variable "schedule_group_name" {
  description = "EventBridge Scheduler group of the table's schedules (stream, maintain, apply, reconcile); null uses the default group."
  type        = string
  default     = null
}

variable "log_retention_days" {
  description = "Retention of the functions' and state machines' CloudWatch log groups, in days (0 keeps logs for ever)."
  type        = number
  default     = 30

  validation {
    condition     = contains([0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of CloudWatch Logs' values: 0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653."
  }
}

variable "log_kms_key_arn" {
  description = "KMS key encrypting the CloudWatch log groups; null uses CloudWatch's own encryption. The key policy must allow the logs service principal."
  type        = string
  default     = null
}

variable "state_machine_log_level" {
  description = "Step Functions execution log level: ALL, ERROR, FATAL or OFF."
  type        = string
  default     = "ERROR"

  validation {
    condition     = contains(["ALL", "ERROR", "FATAL", "OFF"], var.state_machine_log_level)
    error_message = "state_machine_log_level must be ALL, ERROR, FATAL or OFF."
  }
}

variable "state_machine_log_execution_data" {
  description = "Whether execution logs include state inputs and outputs: LSNs, row and file counts, key column names and range indexes, never key values (the range bounds stay in the checkpoint's staging area, docs/handlers.md). Error causes are the handlers' messages in either case."
  type        = bool
  default     = false
}

variable "vpc_config" {
  description = "Subnets and security groups of the functions, when SQL Server is reachable only inside a VPC. The subnets need routes to S3, DynamoDB and Secrets Manager (VPC endpoints or a NAT gateway); the security groups need egress to SQL Server's port and to 443. Null runs the functions outside any VPC."
  type = object({
    subnet_ids         = list(string)
    security_group_ids = list(string)
  })
  default = null

  validation {
    condition     = var.vpc_config == null ? true : (length(var.vpc_config.subnet_ids) > 0 && length(var.vpc_config.security_group_ids) > 0)
    error_message = "vpc_config needs at least one subnet id and one security group id."
  }
  validation {
    condition = var.vpc_config == null ? true : alltrue(concat(
      [for s in var.vpc_config.subnet_ids : can(regex("^subnet-[0-9a-f]+$", s))],
      [for g in var.vpc_config.security_group_ids : can(regex("^sg-[0-9a-f]+$", g))],
    ))
    error_message = "vpc_config.subnet_ids must be subnet-... ids and security_group_ids sg-... ids."
  }
}

variable "s3_list_whole_bucket" {
  description = "Grant s3:ListBucket on the whole bucket instead of only under the table's prefixes. S3 answers a read of a missing key with 403 instead of 404 to a caller it does not consider allowed to list; deltalog needs the 404 (a missing _last_checkpoint, a checkpoint's next offsets file). Set it if AccessDenied appears on keys that do not exist yet."
  type        = bool
  default     = false
}

variable "kms_key_arns" {
  description = "Customer managed KMS keys the functions must use: the lake bucket's SSE-KMS key, the password secret's key, the delta_log table's key. Leave empty when they use AWS managed keys."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for k in var.kms_key_arns : can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/", k))])
    error_message = "kms_key_arns must be KMS key ARNs (arn:aws:kms:<region>:<account>:key/<id>)."
  }
}

variable "extra_environment" {
  description = "More environment variables for every function, e.g. the variable named by spec.source.password_env (a Secrets Manager secret is the better home for a password). Sensitive: plans show neither these values nor, since they share the environment block, the rendered spec (the spec_json output shows it). MSSQLCDC_SPEC and MSSQLCDC_METRICS are set by the module and cannot be overridden."
  type        = map(string)
  default     = {}
  sensitive   = true

  validation {
    condition     = !anytrue([for k in ["MSSQLCDC_SPEC", "MSSQLCDC_METRICS"] : contains(keys(var.extra_environment), k)])
    error_message = "extra_environment must not set MSSQLCDC_SPEC or MSSQLCDC_METRICS: the module renders them from spec and custom_metrics."
  }
}

variable "permissions_boundary_arn" {
  description = "IAM permissions boundary for the roles the module creates, when the account requires one."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags for every resource that takes them."
  type        = map(string)
  default     = {}
}

variable "alarms_enabled" {
  description = "Whether to create the CloudWatch alarms of alarms.tf: stream errors, ingestion lag (silence included), dropped scheduled events, retention headroom, failed state machine executions."
  type        = bool
  default     = true
}

variable "alarm_actions" {
  description = "ARNs notified when an alarm fires and clears, typically an SNS topic. Empty: the alarms only show in the console."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for a in var.alarm_actions : can(regex("^arn:aws[a-z-]*:", a))])
    error_message = "alarm_actions must be ARNs (an SNS topic, for example)."
  }
}

variable "alarm_max_ingestion_lag_seconds" {
  description = "The ingestion lag alarm fires when the stream is more than this many seconds behind SQL Server's newest captured commit, or reports nothing, in 2 of 3 periods. Null: 3 schedule intervals, at least 900."
  type        = number
  default     = null

  validation {
    condition     = var.alarm_max_ingestion_lag_seconds == null ? true : (var.alarm_max_ingestion_lag_seconds > 0 && var.alarm_max_ingestion_lag_seconds < 1000000000)
    error_message = "alarm_max_ingestion_lag_seconds must be > 0 and below 1e9 (the value a period without any run of the stream counts as)."
  }
}

variable "custom_metrics" {
  description = "The stream's values published as CloudWatch custom metrics (namespace mssqlcdc, dimension app_id), each about $0.30 a month per table (docs/cost.md). The alarms need IngestionLagSeconds and RetentionHeadroomHours; the others (Rows, Bytes, DurationMs, CaptureLagSeconds) stay fields of the same log line, which the dashboard reads with Logs Insights."
  type        = list(string)
  default     = ["IngestionLagSeconds", "RetentionHeadroomHours"]

  validation {
    condition     = alltrue([for m in var.custom_metrics : contains(["IngestionLagSeconds", "RetentionHeadroomHours", "Rows", "Bytes", "DurationMs", "CaptureLagSeconds"], m)])
    error_message = "custom_metrics must be among IngestionLagSeconds, RetentionHeadroomHours, Rows, Bytes, DurationMs and CaptureLagSeconds."
  }
}

variable "stream_failure_queue_enabled" {
  description = "Create an SQS queue (<name>-stream-failures, 14 days' retention) as the on-failure destination of the stream's asynchronous invocations: a record of each failed or dropped scheduled run."
  type        = bool
  default     = true
}

variable "stream_failure_destination_arn" {
  description = "An existing SQS queue or SNS topic to use as the stream's on-failure destination instead of the module's queue (the functions' role is allowed to send to it)."
  type        = string
  default     = null

  validation {
    condition     = var.stream_failure_destination_arn == null ? true : can(regex("^arn:aws[a-z-]*:(sqs|sns):[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$", var.stream_failure_destination_arn))
    error_message = "stream_failure_destination_arn must be an SQS queue or SNS topic ARN."
  }
}

variable "dashboard_enabled" {
  description = "Create a CloudWatch dashboard <name> for this table: lag, retention headroom, rows per minute, MB/s, errors, the last batch. A dashboard costs $3 a month beyond an account's first three (docs/cost.md)."
  type        = bool
  default     = true
}

variable "alarm_min_retention_headroom_hours" {
  description = "The retention headroom alarm fires when the stream is fewer hours than this ahead of SQL Server's CDC cleanup (3 days of retention by default on SQL Server)."
  type        = number
  default     = 24

  validation {
    condition     = var.alarm_min_retention_headroom_hours > 0
    error_message = "alarm_min_retention_headroom_hours must be > 0."
  }
}

variable "apply_schedule_expression" {
  description = "When the apply function (deployed with spec.silver) brings silver up to bronze: an EventBridge Scheduler rate() or cron() expression, in UTC. Silver lags the source by the stream's lag plus up to this interval."
  type        = string
  default     = "rate(15 minutes)"

  validation {
    condition     = can(regex("^(rate|cron)\\(.+\\)$", var.apply_schedule_expression))
    error_message = "apply_schedule_expression must be an EventBridge Scheduler rate(...) or cron(...) expression, e.g. rate(15 minutes)."
  }
}

variable "reconcile_schedule_expression" {
  description = "When the reconcile function (deployed with spec.reconcile) compares silver with the source: an EventBridge Scheduler rate() or cron() expression, in UTC. Each run scans the table's key on the server once."
  type        = string
  default     = "rate(1 day)"

  validation {
    condition     = can(regex("^(rate|cron)\\(.+\\)$", var.reconcile_schedule_expression))
    error_message = "reconcile_schedule_expression must be an EventBridge Scheduler rate(...) or cron(...) expression, e.g. rate(1 day)."
  }
}

variable "reconcile_schedule_enabled" {
  description = "Whether the reconcile schedule runs (with spec.reconcile)."
  type        = bool
  default     = true
}

variable "apply_schedule_enabled" {
  description = "Whether the apply schedule runs (with spec.silver). Safe before the bootstrap: an apply with no bronze yet does nothing."
  type        = bool
  default     = true
}
