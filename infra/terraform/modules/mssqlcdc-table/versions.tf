terraform {
  # 1.5: optional() object attributes with defaults, and preconditions; both are used below.
  required_version = ">= 1.5"

  required_providers {
    # 5.26 is the first to accept runtime provided.al2023 (hashicorp/terraform-provider-aws#34360).
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.26"
    }
  }
}
