#!/usr/bin/env bash
# Runs every test CI runs: installs the npm test tools, starts the DynamoDB emulator
# (dynalite) on 127.0.0.1, runs the Go tests, the state machine tests and the interop tests
# (DuckDB reading our tables), and stops what it started. The S3 emulator (gofakes3) runs
# inside the Go tests themselves.
set -euo pipefail
cd "$(dirname "$0")/.."

root=$(pwd)
. scripts/npm-tools.sh

port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
dynalite_log=$(mktemp -t mssqlcdc-dynalite.XXXXXX)
node -r ./scripts/dynalite-guard.cjs node_modules/.bin/dynalite --host 127.0.0.1 --port "$port" --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 >"$dynalite_log" 2>&1 &
dynalite_pid=$!
cleanup() {
  kill "$dynalite_pid" 2>/dev/null || true
  wait "$dynalite_pid" 2>/dev/null || true
  rm -f "$dynalite_log"
}
trap cleanup EXIT
up=
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
  sleep 0.1
done
if [ -z "$up" ]; then
  echo "dynalite did not start on 127.0.0.1:$port within 10 s; its output:" >&2
  cat "$dynalite_log" >&2
  exit 1
fi
export MSSQLCDC_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
echo "== dynalite on $MSSQLCDC_DYNAMODB_ENDPOINT"

echo "== go test ./..."
go test -count=1 -timeout 30m ${GOTESTFLAGS:-} ./...

echo "== go build dist/local/mssqlcdc (the binary the node tests run)"
go build -o dist/local/mssqlcdc ./cmd/mssqlcdc
export MSSQLCDC_BIN="$PWD/dist/local/mssqlcdc"

if [ -d statemachine/test ] && ls statemachine/test/*.test.mjs >/dev/null 2>&1; then
  echo "== state machine tests"
  node --test statemachine/test/
fi

echo "== interop tests: DuckDB reads the demo's Delta tables and runs docs/bronze.md's query"
node --test test/interop/
