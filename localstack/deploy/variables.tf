variable "endpoint" {
  description = "LocalStack's edge endpoint as Terraform reaches it."
  type        = string
  default     = "http://127.0.0.1:4566"
}

variable "function_endpoint" {
  description = "LocalStack's endpoint as the functions reach it from their containers on the compose network."
  type        = string
  default     = "http://localstack:4566"
}

variable "dist_dir" {
  description = "Directory of stream.zip and snapshot.zip built for the Docker host's architecture (deploy.sh: make build LAMBDA_GOARCH=... DIST=...)."
  type        = string
}

variable "architecture" {
  description = "Lambda architecture of the zips: x86_64 on an amd64 Docker host, arm64 on arm64 (LocalStack runs the function containers natively)."
  type        = string
  default     = "x86_64"
}

variable "reader_password" {
  description = "The cdc_reader login's password (MSSQL_READER_PASSWORD of docker-compose.yml)."
  type        = string
  sensitive   = true
}
