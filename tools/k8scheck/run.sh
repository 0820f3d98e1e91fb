#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
. "$here/../npm_pinned.sh"
npm_pinned "$here" k8scheck "${KDELAY_K8SCHECK_CACHE:-}"
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
