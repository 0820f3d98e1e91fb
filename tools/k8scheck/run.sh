#!/usr/bin/env bash
# Checks Kubernetes manifests against the Kubernetes API schemas: check.js
# on kubernetes-models (and @kubernetes-models/prometheus-operator for the
# ServiceMonitor), pinned by package-lock.json and installed once per lock
# file into a cache outside the tree (KDELAY_K8SCHECK_CACHE, default
# ~/.cache/kdelay/k8scheck-<lock hash>); the first run needs the npm
# registry. Types, enums and required fields are checked; the schemas, as
# Kubernetes publishes them, allow unknown fields, so a misspelt field
# name passes here (tests/unit/check_deploy.sh checks the fields kdelay
# relies on by name).
#   run.sh FILE|DIR...   check them
#   run.sh --self-test   a planted error (a port as text) must fail
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { printf 'ts=%s level=info prog=k8scheck/run.sh %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }
for c in node npm; do
  command -v "$c" >/dev/null || { echo "k8scheck: $c not found (deploy/local/deps.sh --test installs it)" >&2; exit 1; }
done
hash=$(sha256sum "$here/package-lock.json" | cut -c1-12)
dir=${KDELAY_K8SCHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kdelay/k8scheck-$hash}
if [ ! -f "$dir/.installed" ]; then
  log event=npm_ci dir="$dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$here/package.json" "$here/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$dir/.installed"
fi
export NODE_PATH="$dir/node_modules"
if [ "${1:-}" = --self-test ]; then
  bad=$(mktemp -d)
  trap 'rm -rf "$bad"' EXIT
  printf '%s\n' 'apiVersion: v1' 'kind: Service' 'metadata: {name: planted}' \
    'spec: {ports: [{port: "9464x"}]}' >"$bad/planted.yaml"
  if node "$here/check.js" "$bad" >/dev/null 2>"$bad/err"; then
    echo "k8scheck: self-test: a Service with port \"9464x\" passed" >&2
    exit 1
  fi
  grep -q 'port must be integer' "$bad/err" || { cat "$bad/err" >&2; exit 1; }
  echo "k8scheck: self-test: the planted error was found: $(head -1 "$bad/err")"
  exit 0
fi
exec node "$here/check.js" "$@"
