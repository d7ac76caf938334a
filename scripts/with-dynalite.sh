#!/usr/bin/env bash
# Runs a command with the DynamoDB emulator (dynalite) listening on 127.0.0.1 and
# MSSQLCDC_DYNAMODB_ENDPOINT pointing at it; stops dynalite afterwards. Example:
#   scripts/with-dynalite.sh go test ./deltalog/logstore/...
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

. "$root/scripts/npm-tools.sh"

port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
log="${TMPDIR:-/tmp}/mssqlcdc-dynalite.$$.log"
# Tables become ACTIVE at once (tests create one per test).
node -r "$root/scripts/dynalite-guard.cjs" "$root/node_modules/.bin/dynalite" --host 127.0.0.1 --port "$port" --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 >"$log" 2>&1 &
dynalite_pid=$!
cleanup() { kill "$dynalite_pid" 2>/dev/null || true; wait "$dynalite_pid" 2>/dev/null || true; rm -f "$log"; }
trap cleanup EXIT
up=""
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
  sleep 0.1
done
if [ -z "$up" ]; then
  echo "dynalite did not start on 127.0.0.1:$port:" >&2
  cat "$log" >&2
  exit 1
fi
export MSSQLCDC_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
echo "== dynalite on $MSSQLCDC_DYNAMODB_ENDPOINT" >&2
"$@"
