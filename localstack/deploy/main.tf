# The table module deployed into LocalStack for dbo.orders of the sample database
# (mssql/01-sample-cdc.sql): what deploy.sh applies. The provider points every service the
# module uses at LocalStack (what tflocal would do), with LocalStack's fixed test
# credentials. The functions reach SQL Server and LocalStack by their compose service names.

provider "aws" {
  region                      = "us-east-1"
  access_key                  = "test"
  secret_key                  = "test"
  skip_credentials_validation = true
  skip_metadata_api_check     = true
  skip_requesting_account_id  = true
  s3_use_path_style           = true

  endpoints {
    cloudwatch     = var.endpoint
    cloudwatchlogs = var.endpoint
    dynamodb       = var.endpoint
    events         = var.endpoint
    iam            = var.endpoint
    lambda         = var.endpoint
    s3             = var.endpoint
    scheduler      = var.endpoint
    sfn            = var.endpoint
    sqs            = var.endpoint
    sts            = var.endpoint
  }
}

# The commit table and the bucket come from localstack-init/01-lake.sh; the shared module
# only names the table here.
module "shared" {
  source = "../../infra/terraform/modules/mssqlcdc-shared"

  create_delta_log_table = false
  delta_log_table_name   = "delta_log"
}

module "orders" {
  source = "../../infra/terraform/modules/mssqlcdc-table"

  name = "ls-orders"
  spec = {
    app_id = "orders-ls"
    source = {
      dsn             = "sqlserver://cdc_reader@mssql:1433?database=shop&encrypt=true&TrustServerCertificate=true"
      password_env    = "MSSQL_READER_PASSWORD"
      captureInstance = "dbo_orders"
      # The container's certificate is self-signed: only a development source may skip
      # its verification (docs/spec.md).
      development = true
    }
    options = {
      numPartitions = 2
      snapshotKeys  = ["id"]
    }
    bronze      = "s3://mssqlcdc-lake/bronze/orders"
    checkpoint  = "s3://mssqlcdc-lake/checkpoints/orders"
    facts_table = "s3://mssqlcdc-lake/ops/ingestion_facts"
    bootstrap   = true
    storage = {
      region          = "us-east-1"
      s3_endpoint     = var.function_endpoint
      s3_path_style   = true
      dynamo_table    = module.shared.delta_log_table_name
      dynamo_endpoint = var.function_endpoint
    }
  }

  dist_dir          = var.dist_dir
  architecture      = var.architecture
  extra_environment = { MSSQL_READER_PASSWORD = var.reader_password }

  # LocalStack's scheduler accepts the schedule but never invokes it: deploy.sh invokes the
  # stream itself.
  schedule_enabled = false
}
