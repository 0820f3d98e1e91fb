#!/usr/bin/env bash
# Runs schedule.js or fate.js (README.md) with the kafkajs and mysql2 that
# package-lock.json pins, installed once per lock file into a cache outside
# the tree (KDELAY_EXAMPLE_NODE_CACHE, default
# ~/.cache/kdelay/example-node-<lock hash>); the first run needs the npm
# registry. Usage: run.sh schedule|fate ARGS...
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { printf 'ts=%s level=info prog=examples/node/run.sh %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }
case "${1:-}" in
  schedule|fate) script=$1.js; shift ;;
  *) echo "usage: run.sh schedule|fate ARGS..." >&2; exit 2 ;;
esac
for c in node npm; do
  command -v "$c" >/dev/null || { echo "examples/node: $c not found (deploy/local/deps.sh --test installs it)" >&2; exit 1; }
done
hash=$(sha256sum "$here/package-lock.json" | cut -c1-12)
dir=${KDELAY_EXAMPLE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kdelay/example-node-$hash}
if [ ! -f "$dir/.installed" ]; then
  log event=npm_ci dir="$dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$here/package.json" "$here/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$dir/.installed"
fi
NODE_PATH="$dir/node_modules" exec node "$here/$script" "$@"
