#!/usr/bin/env bash
# Runs the Source contract suite (core/source/sourcetest) against SQL Server 2019 and 2022 in
# Docker, one after the other: for each version it brings up a fresh server, creates the
# sample database, then runs the core/source tests with MSSQL_TEST_DSN set. Needs Docker
# with Compose v2 and Go.
#
#   localstack/run-contract.sh                        # 2019, then 2022 (the last stays up)
#   MSSQL_VERSIONS=2022 localstack/run-contract.sh    # one version
#   KEEP_UP=0 localstack/run-contract.sh              # also stop the stack afterwards
#
# Passwords go into a URL: keep them to letters, digits and _ (or URL-escape them).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
: "${MSSQL_SA_PASSWORD:=Mssqlcdc_Passw0rd}"
: "${MSSQL_READER_PASSWORD:=Reader_Passw0rd}"
: "${MSSQL_PORT:=1433}"
export MSSQL_SA_PASSWORD MSSQL_READER_PASSWORD MSSQL_PORT

if [ "${KEEP_UP:-1}" = "0" ]; then
  trap 'cd "$here" && docker compose down -v' EXIT
fi

# The admin login creates the suite's tables and enables CDC on them; the Source under test
# connects as the least-privilege reader, which the harness grants SELECT on each table it
# creates and on its change tables. The container's certificate is self-signed: the harness
# opens the Source as a development source (TrustServerCertificate needs that).
base="127.0.0.1:${MSSQL_PORT}?database=shop&encrypt=true&TrustServerCertificate=true"
export MSSQL_TEST_DSN="sqlserver://sa:${MSSQL_SA_PASSWORD}@${base}"
export MSSQL_TEST_READER_DSN="sqlserver://cdc_reader:${MSSQL_READER_PASSWORD}@${base}"
export MSSQL_TEST_REQUIRED=1
# The restore contract test backs the database up inside the container and restores it.
export MSSQL_TEST_BACKUP_DIR=/var/opt/mssql/data

status=0
for version in ${MSSQL_VERSIONS:-2019 2022}; do
  echo "== SQL Server $version"
  cd "$here"
  export MSSQL_VERSION="$version"
  docker compose up -d --wait --force-recreate mssql
  docker compose run --rm mssql-init
  cd "$root"
  # Idle-entry tests wait for the capture job's idle entry (about every five minutes).
  if ! go test -count=1 -timeout 90m -run 'Contract' -v ./core/source/...; then
    echo "== SQL Server $version: contract suite FAILED"
    status=1
  fi
done
exit $status
