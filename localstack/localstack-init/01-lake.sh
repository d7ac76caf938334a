#!/bin/bash
# LocalStack ready hook: the lake bucket and the Delta commit table. The DynamoDB table has
# the S3DynamoDBLogStore schema (tablePath hash key, fileName range key), so Spark and
# delta-rs writers can share it (docs/design.md §7).
set -euo pipefail
awslocal s3 mb s3://mssqlcdc-lake || true
awslocal dynamodb create-table \
  --table-name delta_log \
  --attribute-definitions AttributeName=tablePath,AttributeType=S AttributeName=fileName,AttributeType=S \
  --key-schema AttributeName=tablePath,KeyType=HASH AttributeName=fileName,KeyType=RANGE \
  --billing-mode PAY_PER_REQUEST >/dev/null 2>&1 || true
awslocal dynamodb update-time-to-live --table-name delta_log \
  --time-to-live-specification Enabled=true,AttributeName=expireTime >/dev/null 2>&1 || true
echo "mssqlcdc: bucket mssqlcdc-lake and table delta_log ready"
