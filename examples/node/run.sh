#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs schedule.js or fate.js (README.md) with the kafkajs and mysql2 that
# package-lock.json pins, installed once per lock file into a cache outside
# the tree (KDELAY_EXAMPLE_NODE_CACHE, default
# ~/.cache/kdelay/example-node-<lock hash>); the first run needs the npm
# registry. Usage: run.sh schedule|fate ARGS...
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case "${1:-}" in
  schedule|fate) script=$1.js; shift ;;
  *) echo "usage: run.sh schedule|fate ARGS..." >&2; exit 2 ;;
esac
# shellcheck source-path=SCRIPTDIR # "$here" is the script's directory
. "$here/../../tools/npm_pinned.sh"
npm_pinned "$here" example-node "${KDELAY_EXAMPLE_NODE_CACHE:-}"
exec node "$here/$script" "$@"
