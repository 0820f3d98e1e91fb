#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The benchmark against the limit (docs/performance.md): on a fresh
# private stack of its own (its own ports and state directory, stopped and
# deleted afterwards), an optimised build runs bench/bench_limit: a plain
# consume->produce copy with librdkafka (the median of three, after a
# warm-up copy), then the forwarder's catch-up drain in both delivery
# modes (after a half-size warm-up drain of each), a burst, a spread, RSS with tasks
# pending, 10M fate rows with a gc, and a crash loop, each as figures and
# ratios to the copy of the same run (about 12 minutes).
#
#   scripts/bench.sh                       # copy and drains of 1M, burst and spread of 200,000, pending 100k and 10M, 10M rows
#   scripts/bench.sh --tasks 20000 --pending 10000,100000 --rows 100000
#
# The figures go to stdout and to build-bench/bench-limit.txt.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
log() { printf 'ts=%s level=info prog=bench.sh %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }

deploy/local/deps.sh
export KDELAY_STACK_DIR="$root/.stack-bench"
export KDELAY_KAFKA_PORT="${KDELAY_BENCH_KAFKA_PORT:-39092}"
export KDELAY_MYSQL_PORT="${KDELAY_BENCH_MYSQL_PORT:-33306}"
unset KDELAY_MYSQL_URL_EXTERNAL
mkdir -p build-bench
stack_pid=""
cleanup() {
  local rc=$?
  [ -n "$stack_pid" ] && wait "$stack_pid" 2>/dev/null || true
  deploy/local/stack.sh down --purge >&2 || true
  log event=done rc=$rc
  exit $rc
}
trap cleanup EXIT

log event=stack_up dir="$KDELAY_STACK_DIR"
deploy/local/stack.sh up >build-bench/stack-up.log 2>&1 &
stack_pid=$!
log event=build dir=build-bench
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-bench -j "$(nproc 2>/dev/null || echo 2)" --target bench_limit >/dev/null
if ! wait "$stack_pid"; then
  stack_pid=""
  cat build-bench/stack-up.log >&2
  exit 1
fi
stack_pid=""
eval "$(deploy/local/stack.sh env)"
export KDELAY_BROKERS KDELAY_MYSQL_URL
log event=run args="$*"
# The forwarders' logs (fwd-*.log) go to build-bench/.
(cd build-bench && bench/bench_limit "$@") | tee build-bench/bench-limit.txt
