#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The torture run (docs/torture.md) in one command: builds kdelay into
# build/torture, brings up a private Kafka + MariaDB stack on ports of its
# own, runs kdelay-torture with the given arguments, and stops the stack.
#
#   scripts/torture.sh --profile full --mode exactly_once   # ~35 min
#   scripts/torture.sh --profile fast                       # ~90 s
#
# Environment: KDELAY_TORTURE_BUILD (build dir, default build/torture),
# KDELAY_TORTURE_STACK_DIR (default build/torture-stack),
# KDELAY_TORTURE_KAFKA_PORT (59092), KDELAY_TORTURE_MYSQL_PORT (53306),
# KDELAY_TORTURE_KEEP_STACK=1 to leave the stack running.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
log() { printf 'ts=%s level=info prog=torture.sh %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }

for a in "$@"; do
  if [ "$a" = -h ] || [ "$a" = --help ]; then
    sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
  fi
done

build_dir=${KDELAY_TORTURE_BUILD:-$root/build/torture}
export KDELAY_STACK_DIR="${KDELAY_TORTURE_STACK_DIR:-$root/build/torture-stack}"
export KDELAY_KAFKA_PORT="${KDELAY_TORTURE_KAFKA_PORT:-59092}"
export KDELAY_MYSQL_PORT="${KDELAY_TORTURE_MYSQL_PORT:-53306}"
unset KDELAY_MYSQL_URL_EXTERNAL

stack_pid=""
cleanup() {
  local rc=$?
  if [ -n "$stack_pid" ]; then wait "$stack_pid" 2>/dev/null || true; fi
  if [ -z "${KDELAY_TORTURE_KEEP_STACK:-}" ]; then
    deploy/local/stack.sh down --purge >&2 || true
  fi
  log event=done rc=$rc
  exit $rc
}
trap cleanup EXIT

# The stack starts while the code compiles.
mkdir -p "$build_dir"
up_log=$build_dir/stack-up.log
log event=stack_up dir="$KDELAY_STACK_DIR" log="$up_log"
deploy/local/stack.sh up >"$up_log" 2>&1 &
stack_pid=$!

log event=build dir="$build_dir"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build_dir" -j "$(nproc 2>/dev/null || echo 2)" \
  --target kdelay-torture >/dev/null

if ! wait "$stack_pid"; then
  stack_pid=""
  cat "$up_log" >&2
  log event=stack_failed
  exit 1
fi
stack_pid=""
eval "$(deploy/local/stack.sh env)"
export KDELAY_BROKERS KDELAY_MYSQL_URL KDELAY_STACK_DIR

log event=torture args="$*"
"$build_dir/tests/torture/kdelay-torture" "$@"
