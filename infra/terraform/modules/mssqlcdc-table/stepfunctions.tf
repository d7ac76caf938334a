# The Step Functions machines of statemachine/*.asl.json (docs/design.md §6.2–§6.4), rendered with
# templatefile(): each Task's Resource is a ${<function>_function_arn} placeholder.

locals {
  machine_files  = { for m in var.state_machines : m => "${local.statemachine_dir}/${m}.asl.json" }
  machine_source = { for m, path in local.machine_files : m => fileexists(path) ? file(path) : "" }

  # Every placeholder the definitions may use, and the function (functions/<name>) whose ARN
  # fills it. infra/terraform/terraform_test.go checks that each placeholder of
  # statemachine/*.asl.json is listed here.
  machine_functions = {
    stream_function_arn        = "stream"
    snapshot_function_arn      = "snapshot"
    backfill_wave_function_arn = "backfill-wave"
    seed_function_arn          = "seed"
  }
  # A function not deployed is null: a machine that calls it fails the precondition below
  # before templatefile() would.
  machine_template_vars = {
    for placeholder, fn in local.machine_functions : placeholder => try(aws_lambda_function.this[fn].arn, null)
  }

  machine_placeholders = {
    for m, src in local.machine_source : m => distinct(flatten(regexall("\\$\\{([A-Za-z0-9_]+)\\}", src)))
  }
  self_starting_machines = [for m, src in local.machine_source : m if strcontains(src, "states:startExecution")]
}

resource "aws_cloudwatch_log_group" "state_machine" {
  for_each = local.machine_files

  # The /aws/vendedlogs/ prefix keeps CloudWatch Logs' resource policy short when many
  # machines log (Step Functions developer guide).
  name              = "/aws/vendedlogs/states/${var.name}-${each.key}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.log_kms_key_arn
  tags              = var.tags
}

resource "aws_sfn_state_machine" "this" {
  for_each = local.machine_files

  name       = "${var.name}-${each.key}"
  role_arn   = aws_iam_role.states.arn
  type       = "STANDARD"
  definition = templatefile(each.value, local.machine_template_vars)

  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.state_machine[each.key].arn}:*"
    include_execution_data = var.state_machine_log_execution_data
    level                  = var.state_machine_log_level
  }

  tags = var.tags

  depends_on = [aws_iam_role_policy.states]

  lifecycle {
    precondition {
      condition     = fileexists(each.value)
      error_message = "No state machine definition at ${each.value} (state_machines lists \"${each.key}\"; see statemachine_dir)."
    }
    precondition {
      condition     = alltrue([for p in local.machine_placeholders[each.key] : contains(keys(local.machine_functions), p)])
      error_message = "${each.key}.asl.json uses placeholders this module does not fill: ${join(", ", [for p in local.machine_placeholders[each.key] : p if !contains(keys(local.machine_functions), p)])}."
    }
    precondition {
      condition     = alltrue([for p in local.machine_placeholders[each.key] : contains(keys(var.functions), lookup(local.machine_functions, p, "-"))])
      error_message = "${each.key} calls functions missing from var.functions: ${join(", ", distinct([for p in local.machine_placeholders[each.key] : lookup(local.machine_functions, p, p) if !contains(keys(var.functions), lookup(local.machine_functions, p, "-"))]))}."
    }
  }
}
