terraform {
  # 1.5: optional() object attributes with defaults, and preconditions; both are used below.
  required_version = ">= 1.5"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
  }
}
