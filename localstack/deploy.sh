#!/usr/bin/env bash
# Deploys the Terraform table module into LocalStack for real and runs dbo.orders of the
# sample database end to end: bootstrap machine (snapshot, then the first stream run),
# changes in SQL Server, the stream again, and a check of bronze with mssqlcdc inspect.
# Needs Docker with Compose v2, Terraform >= 1.5 (or OpenTofu: TERRAFORM=tofu), the AWS
# CLI v2, Go and make. README.md in this directory says what LocalStack does not do.
#
#   localstack/deploy.sh             # up, build, apply, run (the stack stays up)
#   KEEP_UP=0 localstack/deploy.sh   # also destroy and stop everything afterwards
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
: "${MSSQL_SA_PASSWORD:=Mssqlcdc_Passw0rd}"
: "${MSSQL_READER_PASSWORD:=Reader_Passw0rd}"
: "${TERRAFORM:=terraform}"
export MSSQL_SA_PASSWORD MSSQL_READER_PASSWORD
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 AWS_PAGER=""
endpoint=http://127.0.0.1:4566
awsl() { aws --endpoint-url "$endpoint" "$@"; }
compose() { docker compose -f "$here/docker-compose.yml" -f "$here/docker-compose.deploy.yml" "$@"; }
sql() {
  compose exec -T mssql /opt/mssql-tools18/bin/sqlcmd -C -S localhost -U sa -P "$MSSQL_SA_PASSWORD" -d shop -b -h -1 -W -Q "SET NOCOUNT ON; $1"
}
step() { echo "== $*"; }

for tool in docker "$TERRAFORM" aws go make; do
  command -v "$tool" >/dev/null || { echo "deploy.sh needs $tool on PATH" >&2; exit 1; }
done

step "SQL Server and LocalStack"
compose up -d --wait mssql localstack
compose run --rm mssql-init

# LocalStack runs the functions in containers of the Docker host's architecture.
case "$(docker info --format '{{.Architecture}}')" in
  aarch64|arm64) goarch=arm64 lambda_arch=arm64 ;;
  *) goarch=amd64 lambda_arch=x86_64 ;;
esac
step "make build for $lambda_arch"
make -C "$root" build LAMBDA_GOARCH="$goarch" DIST=localstack/.dist

cd "$here/deploy"
tfvars=(-var "dist_dir=$here/.dist" -var "architecture=$lambda_arch" -var "reader_password=$MSSQL_READER_PASSWORD")
if [ "${KEEP_UP:-1}" = "0" ]; then
  trap 'cd "$here/deploy" && "$TERRAFORM" destroy -auto-approve -input=false "${tfvars[@]}"; compose down -v' EXIT
fi
step "terraform apply"
"$TERRAFORM" init -input=false
"$TERRAFORM" apply -auto-approve -input=false "${tfvars[@]}"
machine=$("$TERRAFORM" output -raw bootstrap_state_machine)
stream=$("$TERRAFORM" output -raw stream_function)

step "bootstrap machine with start_stream"
execution=$(awsl stepfunctions start-execution --state-machine-arn "$machine" --input '{"start_stream": true}' --query executionArn --output text)
status=RUNNING
for _ in $(seq 1 180); do
  status=$(awsl stepfunctions describe-execution --execution-arn "$execution" --query status --output text)
  [ "$status" = RUNNING ] || break
  sleep 5
done
awsl stepfunctions describe-execution --execution-arn "$execution" --query '[status,output]' --output text
[ "$status" = SUCCEEDED ] || { echo "bootstrap: $status" >&2; exit 1; }

step "changes in SQL Server, then the stream (LocalStack's scheduler does not invoke it)"
changes_before=$(sql "SELECT COUNT(*) FROM cdc.dbo_orders_CT;")
sql "UPDATE dbo.orders SET amount = amount + 1 WHERE id = (SELECT MIN(id) FROM dbo.orders);
     INSERT INTO dbo.orders (id, customer_id, status, amount, placed_at)
       SELECT MAX(id) + 1, MIN(customer_id), 'new', 42, SYSDATETIMEOFFSET() FROM dbo.orders;"
# The capture job scans the log every 5 s: wait until the three change rows (update
# before/after image, insert) are in the change table.
for _ in $(seq 1 30); do
  changes=$(sql "SELECT COUNT(*) FROM cdc.dbo_orders_CT;")
  [ "$changes" -ge $((changes_before + 3)) ] && break
  sleep 2
done
[ "$changes" -ge $((changes_before + 3)) ] || { echo "the capture job did not capture the changes (is SQL Server Agent running?)" >&2; exit 1; }
awsl lambda invoke --function-name "$stream" --cli-read-timeout 330 \
  --cli-binary-format raw-in-base64-out --payload '{}' "$here/.dist/stream-out.json" \
  --query FunctionError --output text | grep -qv . || { echo "stream failed:" >&2; cat "$here/.dist/stream-out.json" >&2; exit 1; }
cat "$here/.dist/stream-out.json"; echo
grep -q '"caught_up":true' "$here/.dist/stream-out.json" || { echo "the stream did not catch up" >&2; exit 1; }

step "bronze as mssqlcdc inspect sees it"
cd "$root"
go run ./cmd/mssqlcdc inspect s3://mssqlcdc-lake/bronze/orders --json \
  --region us-east-1 --endpoint "$endpoint" --path-style \
  --dynamo-table delta_log --dynamo-endpoint "$endpoint" | tee "$here/.dist/inspect.json"
echo
grep -Eq '"rows": *[1-9]' "$here/.dist/inspect.json" || { echo "bronze holds no rows" >&2; exit 1; }
step "done: the snapshot and the stream's change rows are in bronze (inspect above)"
