terraform {
  required_version = ">= 1.5"

  required_providers {
    # 5.32 is the first with aws_lambda_function.logging_config (hashicorp/terraform-provider-aws#35050;
    # provided.al2023 came in 5.26, #34360). Version 6 is accepted: the module reads the region
    # as data.aws_region.current.id, which both majors have (6 deprecates .name).
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.32, < 7"
    }
  }
}
