#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs check.js (tools/sqlcheck/README.md) with its pinned node-sql-parser,
# installed once per package-lock.json into a cache outside the tree
# (KDELAY_SQLCHECK_CACHE, default ~/.cache/kdelay/sqlcheck-<lock hash>);
# the first run needs the npm registry. Arguments go to check.js.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR # "$here" is the script's directory
. "$here/../npm_pinned.sh"
npm_pinned "$here" sqlcheck "${KDELAY_SQLCHECK_CACHE:-}"
exec node "$here/check.js" "$@"
