#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The benchmark against the limit (docs/performance.md): on a fresh
# private stack of its own (its own ports and state directory, stopped and
# deleted afterwards), an optimised build runs bench/bench_limit: after a
# warm-up copy and a half-size warm-up drain of each delivery mode, three
# rounds of a plain consume->produce copy with librdkafka (its output
# read back, as a drain's target is) and the forwarder's catch-up drain
# in both modes, each drain's ratios to its round's copy and their
# medians; then a burst, a spread, RSS with tasks pending, 10M fate rows
# with a gc, and a crash loop; at the end each of issue 44's targets,
# met or missed, from the medians (about 15 minutes).
#
#   scripts/bench.sh                       # copy and drains of 1M, burst and spread of 200,000, pending 100k and 10M, 10M rows
#   scripts/bench.sh --tasks 20000 --pending 10000,100000 --rows 100000
#   scripts/bench.sh --scale               # issue 44's scale proof, about 20 minutes
#   scripts/bench.sh --only ladder         # the default ladder's writes per task, scaled 1/2000, about 6 minutes
#
# --scale (first argument; the arguments after it are added): the drains
# (for the burst's bound), a burst of 1,000,000 tasks due at one
# millisecond, and pending 100,000 and 100,000,000 (--only
# drain,burst,pending --burst-tasks 1000000 --pending
# 100000,100000000). 10^8 pending tasks take about 24 GB of broker disk
# under .stack-bench (deleted afterwards): with less than 2 x 10^8 x
# 250 B (50 GB) free there, the pending section is left out, said so on
# stderr. The default run is not changed by it.
#
# Every other argument goes to bench/bench_limit (its sections and
# options: the comment at the top of bench/bench_limit.c).
# The figures go to stdout and to build-bench/bench-limit.txt.
set -euo pipefail

if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  sed -n '3,/^set -euo pipefail/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
  exit 0
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
log() { printf 'ts=%s level=info prog=bench.sh %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }

args=("$@")
if [ "${1:-}" = --scale ]; then
  shift
  scale_pending=100000000
  need=$((2 * scale_pending * 250))
  free=$(df -PB1 "$root" | awk 'NR == 2 { print $4 }')
  if [ "${free:-0}" -lt "$need" ]; then
    printf 'bench.sh: --scale: %d pending tasks need %d GB free under %s (2 x %d x 250 B), %d GB are: the pending section is left out\n' \
      "$scale_pending" $((need / 1000000000)) "$root/.stack-bench" "$scale_pending" $((free / 1000000000)) >&2
    args=(--only "drain,burst" --burst-tasks 1000000 "$@")
  else
    args=(--only "drain,burst,pending" --burst-tasks 1000000
      --pending "100000,$scale_pending" "$@")
  fi
fi

deploy/local/deps.sh
export KDELAY_STACK_DIR="$root/.stack-bench"
export KDELAY_KAFKA_PORT="${KDELAY_BENCH_KAFKA_PORT:-39092}"
export KDELAY_MYSQL_PORT="${KDELAY_BENCH_MYSQL_PORT:-33306}"
# MariaDB's own default redo log (the test stacks' 16M makes every row
# write pay for checkpoints: 17% more of MariaDB's CPU per fate row).
export KDELAY_MYSQL_REDO_LOG="${KDELAY_MYSQL_REDO_LOG:-96M}"
unset KDELAY_MYSQL_URL_EXTERNAL
mkdir -p build-bench
stack_pid=""
cleanup() {
  local rc=$?
  if [ -n "$stack_pid" ]; then wait "$stack_pid" 2>/dev/null || true; fi
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
log event=run args="${args[*]}"
# The forwarders' logs (fwd-*.log) go to build-bench/.
(cd build-bench && bench/bench_limit "${args[@]}") | tee build-bench/bench-limit.txt
