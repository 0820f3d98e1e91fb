#!/usr/bin/env bash
# The whole kdelay test suite, from a fresh Debian machine or a warm one:
# installs dependencies, starts a private Kafka + MariaDB stack on test
# ports, builds twice (plain and ASan+UBSan), runs every CUnit program under
# ctest in both builds, the torture tool's fast profile in both delivery
# modes (plain build), checks formatting, and stops the stack.
#
#   scripts/test.sh            # everything
#   KDELAY_TEST_SKIP_ASAN=1 scripts/test.sh   # plain build only (quicker)
#   KDELAY_TEST_SKIP_TORTURE=1 scripts/test.sh   # without the torture runs
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
start=$(date +%s)
log() { printf 'ts=%s level=info prog=test.sh %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }

log event=deps
deploy/local/deps.sh

# A stack of its own, on its own ports, so a developer's `stack.sh up`
# (default ports, .stack/) is never touched by the tests.
export KDELAY_STACK_DIR="${KDELAY_TEST_STACK_DIR:-$root/.stack-test}"
export KDELAY_KAFKA_PORT="${KDELAY_TEST_KAFKA_PORT:-29092}"
export KDELAY_MYSQL_PORT="${KDELAY_TEST_MYSQL_PORT:-23306}"
unset KDELAY_MYSQL_URL_EXTERNAL

stack_pid=""
cleanup() {
  local rc=$?
  [ -n "$stack_pid" ] && wait "$stack_pid" 2>/dev/null || true
  deploy/local/stack.sh down --purge >&2 || true
  log event=done rc=$rc seconds=$(( $(date +%s) - start ))
  exit $rc
}
trap cleanup EXIT

# The stack starts while the code compiles.
mkdir -p build
up_log=build/stack-up.log
log event=stack_up dir="$KDELAY_STACK_DIR" log="$up_log"
deploy/local/stack.sh up >"$up_log" 2>&1 &
stack_pid=$!

jobs=$(nproc 2>/dev/null || echo 2)
build() { # build DIR [cmake args...]
  local dir=$1; shift
  log event=build dir="$dir"
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
}
# Optimised (what users run; -O2 also finds more warnings) and sanitized.
build build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo
[ -z "${KDELAY_TEST_SKIP_ASAN:-}" ] && build build/asan -DCMAKE_BUILD_TYPE=Debug -DKDELAY_SANITIZE=ON

log event=format_check
clang-format --dry-run -Werror $(git ls-files '*.c' '*.h')

if ! wait "$stack_pid"; then
  stack_pid=""
  cat "$up_log" >&2
  log event=stack_failed
  exit 1
fi
stack_pid=""
eval "$(deploy/local/stack.sh env)"
export KDELAY_BROKERS KDELAY_MYSQL_URL
log event=stack_ready brokers="$KDELAY_BROKERS" mysql="$KDELAY_MYSQL_URL"

# No LeakSanitizer suppressions: every leak fails the run (a leaking
# kdelayctl or forwarder exits non-zero, which the tests check). Only the
# fuzz replays (test_fuzz_regress_*) set fuzz/lsan.supp, for a leak inside
# libconfig 1.5.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

run_ctest() { # DIR [ctest args...]
  local dir=$1; shift
  log event=ctest dir="$dir"
  (cd "$dir" && ctest --output-on-failure --timeout 600 "$@")
  # The forwarder test's figures (lateness, duplicates, back-pressure).
  grep -ahE '^ +(records on targets|lateness|back-pressure|delivered without|scheduled)' \
    "$dir/Testing/Temporary/LastTest.log" | sed 's/^ */  figures: /' || true
}
run_ctest build/test

# The torture tool's fast profile in both delivery modes, against this
# stack (it stops and restarts its Kafka and MariaDB): the plain build only,
# about 90 s per mode. Its table goes to stdout, its log to build/test/.
torture_failed=""
run_torture() { # MODE
  local out=build/test/torture-$1.log
  log event=torture mode="$1" log="$out"
  if ! build/test/tests/torture/kdelay-torture --profile fast --mode "$1" 2>"$out"; then
    tail -n 60 "$out" >&2
    log event=torture_failed mode="$1" log="$out"
    torture_failed="$torture_failed $1"
  fi
}
if [ -z "${KDELAY_TEST_SKIP_TORTURE:-}" ]; then
  run_torture at_least_once
  run_torture exactly_once
fi

# The benchmark's small profile (label bench) only in the plain build.
[ -z "${KDELAY_TEST_SKIP_ASAN:-}" ] && run_ctest build/asan -LE bench
[ -z "$torture_failed" ] || { log event=failed what=torture modes="${torture_failed# }"; exit 1; }
exit 0
