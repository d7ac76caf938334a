# The Step Functions machines of statemachine/*.asl.json (docs/design.md §6.2–§6.4), rendered with
# templatefile(): each Task's Resource is a ${<function>_function_arn} placeholder.

locals {
  machine_files  = { for m in local.state_machines : m => "${local.statemachine_dir}/${m}.asl.json" }
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
    for placeholder, fn in local.machine_functions : placeholder => try(local.invoke_arns[fn], null)
  }

  machine_placeholders = {
    for m, src in local.machine_source : m => distinct(flatten(regexall("\\$\\{([A-Za-z0-9_]+)\\}", src)))
  }
  self_starting_machines = [for m, src in local.machine_source : m if strcontains(src, "states:startExecution")]

  # Every Task of every machine (top level and inside Map states) with its TimeoutSeconds
  # and the function its Resource placeholder names ("-" for a Task calling no function of
  # ours, such as the backfill machine's StartExecution of itself, which returns at once). A Task must time out later than its
  # function can run (the timeout plus Lambda's 10 s init), so that a retry of
  # States.Timeout never starts while the timed-out invocation still runs.
  machine_tasks = {
    for m, src in local.machine_source : m => src == "" ? [] : [
      for t in concat(
        [for s in values(jsondecode(src).States) : s if s.Type == "Task"],
        flatten([for s in values(jsondecode(src).States) : [for i in values(try(s.ItemProcessor.States, s.Iterator.States)) : i if i.Type == "Task"] if s.Type == "Map"]),
        ) : {
        timeout  = try(t.TimeoutSeconds, null)
        function = lookup(local.machine_functions, try(regex("^\\$\\{([A-Za-z0-9_]+)\\}$", t.Resource)[0], "-"), "-")
      }
    ]
  }
  lambda_init_seconds = 10
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
  role_arn   = local.states_role_arn
  type       = "STANDARD"
  definition = templatefile(each.value, local.machine_template_vars)

  logging_configuration {
    log_destination        = "${aws_cloudwatch_log_group.state_machine[each.key].arn}:*"
    include_execution_data = var.state_machine_log_execution_data
    level                  = var.state_machine_log_level
  }

  tracing_configuration {
    enabled = var.tracing_mode == "Active"
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
      condition     = alltrue([for p in local.machine_placeholders[each.key] : contains(keys(local.function_requests), lookup(local.machine_functions, p, "-"))])
      error_message = "${each.key} calls functions this module does not deploy (add them to var.functions): ${join(", ", distinct([for p in local.machine_placeholders[each.key] : lookup(local.machine_functions, p, p) if !contains(keys(local.function_requests), lookup(local.machine_functions, p, "-"))]))}."
    }
    precondition {
      condition = alltrue([
        for t in local.machine_tasks[each.key] : t.timeout != null && t.timeout > try(local.functions[t.function].timeout, 900) + local.lambda_init_seconds if t.function != "-"
      ])
      error_message = "${each.key}.asl.json has Tasks whose TimeoutSeconds is not above their function's timeout plus ${local.lambda_init_seconds} s of init, so a retry of States.Timeout could overlap the invocation still running: ${join(", ", [for t in local.machine_tasks[each.key] : "${t.function} (${coalesce(t.timeout, 0)} s)" if t.function != "-" && (t.timeout == null || coalesce(t.timeout, 0) <= try(local.functions[t.function].timeout, 900) + local.lambda_init_seconds)])}."
    }
  }
}
