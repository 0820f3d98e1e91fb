#!/usr/bin/env bash
# Runs check.js (tools/sqlcheck/README.md) with its pinned node-sql-parser,
# installed once per package-lock.json into a cache outside the tree
# (KDELAY_SQLCHECK_CACHE, default ~/.cache/kdelay/sqlcheck-<lock hash>);
# the first run needs the npm registry. Arguments go to check.js.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { printf 'ts=%s level=info prog=sqlcheck/run.sh %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }
for c in node npm; do
  command -v "$c" >/dev/null || { echo "sqlcheck: $c not found (deploy/local/deps.sh --test installs it)" >&2; exit 1; }
done
hash=$(sha256sum "$here/package-lock.json" | cut -c1-12)
dir=${KDELAY_SQLCHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kdelay/sqlcheck-$hash}
if [ ! -f "$dir/.installed" ]; then
  log event=npm_ci dir="$dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$here/package.json" "$here/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$dir/.installed"
fi
NODE_PATH="$dir/node_modules" exec node "$here/check.js" "$@"
