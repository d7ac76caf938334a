terraform {
  # 1.5: optional() object attributes with defaults, and preconditions; both are used below.
  required_version = ">= 1.5"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      # 5.26 is the first to accept runtime provided.al2023 (hashicorp/terraform-provider-aws#34360).
      version = "~> 5.26"
    }
  }
}
