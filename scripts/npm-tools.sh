#!/usr/bin/env bash
# Installs the npm test tools (dynalite, asl-validator, aws-local-stepfunctions,
# @duckdb/node-api) into the repository's node_modules when they are missing or older than
# package-lock.json. Sourced by scripts/test.sh and scripts/with-dynalite.sh with $root set.
#
# node_modules must be this checkout's own folder: npm ci empties node_modules before it
# installs, and through a symlink it would empty the folder the link points at (another
# checkout's install). A link is refused, with what to do instead.
if [ -L "$root/node_modules" ]; then
  echo "node_modules is a symlink ($(readlink "$root/node_modules")); npm ci would empty its target." >&2
  echo "Remove the link, then rerun: this script installs a copy of its own (or copy one: cp -a OTHER/node_modules .)." >&2
  exit 1
fi
if [ ! -x "$root/node_modules/.bin/dynalite" ] || [ ! -d "$root/node_modules/@duckdb/node-api" ] || [ "$root/package-lock.json" -nt "$root/node_modules/.package-lock.json" ]; then
  echo "== npm ci (dynalite, asl-validator, aws-local-stepfunctions, @duckdb/node-api)" >&2
  (cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
fi
