# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash # sourced by bash scripts only (it uses local)
# Sourced by the scripts that run node with npm packages of their own
# (tools/sqlcheck, tools/k8scheck, examples/node): npm_pinned DIR NAME
# [CACHE] installs the packages DIR/package-lock.json pins once per lock
# file into CACHE (default ~/.cache/kdelay/NAME-<lock hash>; the first
# run needs the npm registry) and exports NODE_PATH to them. Exits 1 when
# node or npm is missing.
npm_pinned() {
  local src=$1 name=$2 c hash dir
  for c in node npm; do
    command -v "$c" >/dev/null || {
      echo "$name: $c not found (deploy/local/deps.sh --test installs it)" >&2
      exit 1
    }
  done
  hash=$(sha256sum "$src/package-lock.json" | cut -c1-12)
  dir=${3:-${XDG_CACHE_HOME:-$HOME/.cache}/kdelay/$name-$hash}
  if [ ! -f "$dir/.installed" ]; then
    printf 'ts=%s level=info prog=%s event=npm_ci dir=%s\n' "$(date -u +%FT%TZ)" "$name" "$dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$src/package.json" "$src/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    touch "$dir/.installed"
  fi
  export NODE_PATH="$dir/node_modules"
}
