#!/usr/bin/env bash
# Runs the Source contract suite (core/source/sourcetest) against SQL Server 2022 in Docker:
# brings up the compose stack, creates the sample database, then runs the core/source
# tests with MSSQL_TEST_DSN set. Needs Docker with Compose v2 and Go.
#
#   localstack/run-contract.sh            # up, init, test (the stack stays up)
#   KEEP_UP=0 localstack/run-contract.sh  # also stop the stack afterwards
#
# Passwords go into a URL: keep them to letters, digits and _ (or URL-escape them).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
: "${MSSQL_SA_PASSWORD:=Mssqlcdc_Passw0rd}"
: "${MSSQL_READER_PASSWORD:=Reader_Passw0rd}"
: "${MSSQL_PORT:=1433}"
export MSSQL_SA_PASSWORD MSSQL_READER_PASSWORD MSSQL_PORT

cd "$here"
docker compose up -d --wait mssql
docker compose run --rm mssql-init

if [ "${KEEP_UP:-1}" = "0" ]; then
  trap 'cd "$here" && docker compose down -v' EXIT
fi

# The admin login creates the suite's tables and enables CDC on them; the Source under test
# connects as the least-privilege reader, which the harness grants SELECT on each table it
# creates and on its change tables.
base="127.0.0.1:${MSSQL_PORT}?database=shop&encrypt=true&TrustServerCertificate=true"
export MSSQL_TEST_DSN="sqlserver://sa:${MSSQL_SA_PASSWORD}@${base}"
export MSSQL_TEST_READER_DSN="sqlserver://cdc_reader:${MSSQL_READER_PASSWORD}@${base}"
export MSSQL_TEST_REQUIRED=1

cd "$root"
# Idle-entry tests wait for the capture job's idle entry (about every five minutes).
go test -count=1 -timeout 90m -run 'Contract' -v ./core/source/...
