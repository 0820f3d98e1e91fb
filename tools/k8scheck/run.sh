#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks Kubernetes manifests against the Kubernetes API schemas: check.js
# on kubernetes-models (and @kubernetes-models/prometheus-operator for the
# ServiceMonitor), pinned by package-lock.json and installed once per lock
# file into a cache outside the tree (KDELAY_K8SCHECK_CACHE, default
# ~/.cache/kdelay/k8scheck-<lock hash>); the first run needs the npm
# registry. Types, enums and required fields are checked by the schemas;
# every field name at every depth along the models' type declarations (a
# misspelt or misplaced field fails, with its path); and the "restricted"
# Pod Security Standard on every pod template (check.js says which rules).
#   run.sh FILE|DIR|-...  check them (-: standard input, e.g. the output of
#                         `kubectl kustomize deploy/kubernetes`)
#   run.sh --self-test    planted errors must fail: a port as text, an
#                         unknown field, a pod without a seccomp profile
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR # "$here" is the script's directory
. "$here/../npm_pinned.sh"
npm_pinned "$here" k8scheck "${KDELAY_K8SCHECK_CACHE:-}"
if [ "${1:-}" = --self-test ]; then
  bad=$(mktemp -d)
  trap 'rm -rf "$bad"' EXIT
  # Each planted document, and the error it must give.
  plant() { # NAME WANT DOC-LINES...
    local name=$1 want=$2
    shift 2
    printf '%s\n' "$@" >"$bad/$name.yaml"
    if node "$here/check.js" "$bad/$name.yaml" >/dev/null 2>"$bad/err"; then
      echo "k8scheck: self-test: planted $name passed" >&2
      exit 1
    fi
    grep -q "$want" "$bad/err" || { echo "k8scheck: self-test: $name: no \"$want\":" >&2; cat "$bad/err" >&2; exit 1; }
    echo "k8scheck: self-test: the planted error was found: $(head -1 "$bad/err")"
  }
  plant port 'port must be integer' 'apiVersion: v1' 'kind: Service' 'metadata: {name: planted}' \
    'spec: {ports: [{port: "9464x"}]}'
  plant field 'unknown fields.*spec.ports\[0\].protocl' 'apiVersion: v1' 'kind: Service' \
    'metadata: {name: planted}' 'spec: {ports: [{port: 9464, protocl: TCP}]}'
  plant pss 'seccompProfile.type is unset' 'apiVersion: v1' 'kind: Pod' 'metadata: {name: planted}' \
    'spec:' '  securityContext: {runAsNonRoot: true, runAsUser: 10001}' \
    '  containers: [{name: c, image: i, securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}}]'
  exit 0
fi
exec node "$here/check.js" "$@"
