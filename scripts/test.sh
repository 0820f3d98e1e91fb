#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole kdelay test suite, from a fresh Debian machine or a warm one:
# installs dependencies, starts two private Kafka + MariaDB stacks on test
# ports — one on the default Kafka (4.x), one on Kafka 3.9.x — builds twice
# (plain and ASan+UBSan), runs every CUnit program under ctest in both
# builds (the plain build against Kafka 4.x, the ASan build against 3.9.x:
# every test on both broker lines, each build once), the torture tool's
# fast profile in both delivery modes (plain build; at_least_once on 4.x,
# exactly_once on 3.9.x), checks every SQL statement the plain ctest sent
# against a MySQL 8 grammar (tools/sqlcheck: the MariaDB runs with MySQL
# 8's strict sql_mode), checks formatting, and stops the stacks. A third
# stack, three Kafka 4.x nodes, starts after the plain build's ctest for
# test_broker_failover alone (a node killed under a forwarder) and stops
# right after it. Then two small secured stacks (stack.sh --security:
# SASL_SSL on Kafka 3.9.x, mTLS on the default Kafka) run test_kafka_acl
# (Kafka ACLs), one after the other, about 3 minutes.
#
#   scripts/test.sh            # everything
#   KDELAY_TEST_SKIP_ASAN=1 scripts/test.sh   # plain build only (quicker)
#   KDELAY_TEST_SKIP_TORTURE=1 scripts/test.sh   # without the torture runs
#   KDELAY_TEST_SKIP_NODES3=1 scripts/test.sh    # without the 3-node stack
#   KDELAY_TEST_SKIP_SECURITY=1 scripts/test.sh  # without the secured stacks
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
start=$(date +%s)
log() { printf 'ts=%s level=info prog=test.sh %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }

log event=deps
deploy/local/deps.sh --test

# Stacks of their own, on their own ports, so a developer's `stack.sh up`
# (default ports, .stack/) is never touched by the tests. Stack "new" runs
# the default Kafka (deploy/local/kafka/pom.xml), stack "old" the oldest
# supported line; stack "3n" is three nodes of the default Kafka (nodes on
# 29292, 29294, 29296, their controllers on the ports after them).
old_kafka=${KDELAY_TEST_OLD_KAFKA:-3.9.1}
unset KDELAY_MYSQL_URL_EXTERNAL KDELAY_KAFKA_VERSION KDELAY_KAFKA_NODES KDELAY_CLIENT_CONFIG \
  KDELAY_KAFKA_CONFIG KDELAY_CONFIG
declare -A stack_dir=([new]="${KDELAY_TEST_STACK_DIR:-$root/.stack-test}"
                      [old]="${KDELAY_TEST_STACK_DIR:-$root/.stack-test}-old"
                      [3n]="${KDELAY_TEST_STACK_DIR:-$root/.stack-test}-3n"
                      [sasl]="${KDELAY_TEST_STACK_DIR:-$root/.stack-test}-sasl"
                      [mtls]="${KDELAY_TEST_STACK_DIR:-$root/.stack-test}-mtls")
declare -A kafka_port=([new]="${KDELAY_TEST_KAFKA_PORT:-29092}" [old]=29192 [3n]=29292
                       [sasl]=29592 [mtls]=29692)
declare -A mysql_port=([new]="${KDELAY_TEST_MYSQL_PORT:-23306}" [old]=23406 [3n]=23506
                       [sasl]=23706 [mtls]=23806)
# SCRAM needs Kafka 3.9 with librdkafka older than 2.6.1 (docs/security.md)
declare -A kafka_version=([new]="" [old]="$old_kafka" [3n]="" [sasl]="$old_kafka" [mtls]="")
declare -A kafka_nodes=([new]=1 [old]=1 [3n]=3 [sasl]=1 [mtls]=1)
# Kafka's security (stack.sh --security): only the two ACL stacks.
declare -A kafka_security=([new]=none [old]=none [3n]=none [sasl]=sasl_ssl [mtls]=mtls)
# The old stack's MariaDB serves TLS only (require_secure_transport), so
# the sanitizer pass and the exactly_once torture reach MySQL as
# production should: VERIFY_IDENTITY against the stack's private CA.
declare -A mysql_tls=([new]=off [old]=on [3n]=off [sasl]=off [mtls]=off)
# Points stack.sh, the tests and the torture tool at stack $1.
use_stack() {
  export KDELAY_STACK_DIR=${stack_dir[$1]}
  export KDELAY_KAFKA_PORT=${kafka_port[$1]}
  export KDELAY_MYSQL_PORT=${mysql_port[$1]}
  export KDELAY_MYSQL_TLS=${mysql_tls[$1]}
  export KDELAY_KAFKA_NODES=${kafka_nodes[$1]}
  export KDELAY_KAFKA_SECURITY=${kafka_security[$1]}
  unset KDELAY_MYSQL_CA KDELAY_CLIENT_CONFIG KDELAY_KAFKA_CONFIG
  if [ -n "${kafka_version[$1]}" ]; then
    export KDELAY_KAFKA_VERSION=${kafka_version[$1]}
  else
    unset KDELAY_KAFKA_VERSION
  fi
  if [ -f "$KDELAY_STACK_DIR/stack.conf" ]; then
    eval "$(deploy/local/stack.sh env)" # export lines
  fi
}

declare -A stack_pid=()
cleanup() {
  local rc=$? s
  for s in "${!stack_pid[@]}"; do wait "${stack_pid[$s]}" 2>/dev/null || true; done
  for s in new old 3n sasl mtls; do
    (use_stack "$s"; deploy/local/stack.sh down --purge >&2) || true
  done
  log event=done rc=$rc seconds=$(( $(date +%s) - start ))
  exit $rc
}
trap cleanup EXIT

# The stacks start while the code compiles.
mkdir -p build
for s in new old; do
  [ "$s" = old ] && [ -n "${KDELAY_TEST_SKIP_ASAN:-}" ] && [ -n "${KDELAY_TEST_SKIP_TORTURE:-}" ] && continue
  log event=stack_up stack="$s" dir="${stack_dir[$s]}" log="build/stack-up-$s.log"
  # Stack "new"'s MariaDB logs every statement: the plain build's ctest
  # sends all of kdelay's SQL, checked against a MySQL 8 grammar after it.
  glog=""
  [ "$s" = new ] && glog=$root/build/mysql-general-new.log && rm -f "$glog"
  (use_stack "$s"; KDELAY_MYSQL_GENERAL_LOG=$glog exec deploy/local/stack.sh up) \
    >"build/stack-up-$s.log" 2>&1 &
  stack_pid[$s]=$!
done

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

stack_wait() { # STACK: waits for its background 'up'; exits on failure
  local s=$1
  if ! wait "${stack_pid[$s]}"; then
    unset "stack_pid[$s]"
    cat "build/stack-up-$s.log" >&2
    log event=stack_failed stack="$s"
    exit 1
  fi
  unset "stack_pid[$s]"
  (use_stack "$s"; log event=stack_ready stack="$s" kafka="$KDELAY_KAFKA_VERSION" \
    nodes="$KDELAY_KAFKA_NODES" brokers="$KDELAY_BROKERS" mysql="$KDELAY_MYSQL_URL")
}
for s in "${!stack_pid[@]}"; do stack_wait "$s"; done

# No LeakSanitizer suppressions: every leak fails the run (a leaking
# kdelayctl or forwarder exits non-zero, which the tests check). Only the
# fuzz replays (test_fuzz_regress_*) set fuzz/lsan.supp, for a leak inside
# libconfig 1.5.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

run_ctest() { # DIR [ctest args...]
  local dir=$1; shift
  log event=ctest dir="$dir"
  (cd "$dir" && ctest --output-on-failure --timeout 600 "$@")
  # The forwarder test's figures (lateness, duplicates, back-pressure), and
  # the broker failover's.
  grep -ahE '^ +(records on targets|lateness|back-pressure|delivered without|scheduled|(at_least|exactly)_once: node)' \
    "$dir/Testing/Temporary/LastTest.log" | sed 's/^ */  figures: /' || true
}
use_stack new
run_ctest build/test
# Every statement the plain ctest sent (claims, takeovers, marks, cancel,
# status, audit, gc, migrations) parses as MySQL 8 SQL (tools/sqlcheck).
log event=sql_mysql8 log=build/mysql-general-new.log
tools/sqlcheck/run.sh --general-log build/mysql-general-new.log

# The 3-node stack starts now, in the background while the at_least_once
# torture runs, at a lower CPU priority (nice) so that its three JVMs'
# start does not starve the torture's forwarders; it serves
# test_broker_failover alone (about 50 s: a node killed and restarted under
# forwarders of both modes) and is deleted at once.
nodes3=""
if [ -z "${KDELAY_TEST_SKIP_NODES3:-}" ]; then
  nodes3=1
  log event=stack_up stack=3n dir="${stack_dir[3n]}" log=build/stack-up-3n.log
  (use_stack 3n; exec nice -n 10 deploy/local/stack.sh up) >build/stack-up-3n.log 2>&1 &
  stack_pid[3n]=$!
fi
run_nodes3() {
  [ -n "$nodes3" ] || return 0
  nodes3=""
  stack_wait 3n
  use_stack 3n
  run_ctest build/test -R '^test_broker_failover$'
  # ctest passes a skipped test: this one must have run here.
  if grep -q 'test_broker_failover: skipped' build/test/Testing/Temporary/LastTest.log; then
    log event=failed what=test_broker_failover reason=skipped_on_3_nodes
    exit 1
  fi
  (use_stack 3n; deploy/local/stack.sh down --purge >&2)
}

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
  use_stack new
  run_torture at_least_once
  run_nodes3
  use_stack old
  run_torture exactly_once
fi
run_nodes3

# Kafka ACLs (test_kafka_acl, plain build) on two small secured stacks:
# SASL_SSL (SCRAM-SHA-512) on Kafka 3.9.x, mTLS on the default Kafka.
# Stack "new" is done with by now: it goes, and the two start in the
# background (nice) while the sanitizer pass runs on stack "old".
secured=""
if [ -z "${KDELAY_TEST_SKIP_SECURITY:-}" ]; then
  secured=1
  (use_stack new; deploy/local/stack.sh down --purge >&2) || true
  for s in sasl mtls; do
    log event=stack_up stack="$s" dir="${stack_dir[$s]}" log="build/stack-up-$s.log"
    (use_stack "$s"; exec nice -n 10 deploy/local/stack.sh up) >"build/stack-up-$s.log" 2>&1 &
    stack_pid[$s]=$!
  done
fi

# The benchmark's small profile (label bench) only in the plain build.
if [ -z "${KDELAY_TEST_SKIP_ASAN:-}" ]; then
  use_stack old
  run_ctest build/asan -LE bench
fi

if [ -n "$secured" ]; then
  (use_stack old; deploy/local/stack.sh down --purge >&2) || true
  for s in sasl mtls; do
    stack_wait "$s"
    use_stack "$s"
    log event=stack_ready stack="$s" kafka="$KDELAY_KAFKA_VERSION" security="$KDELAY_KAFKA_SECURITY" \
      brokers="$KDELAY_BROKERS"
    # test_plain_client: a plain confluent-kafka-python client with the
    # properties file `stack.sh env` names, as it is.
    run_ctest build/test -R '^(test_kafka_acl|test_plain_client)$'
    # ctest counts an exit 77 (no secured stack seen) as skipped: not here
    grep -q "^test_kafka_acl: $KDELAY_KAFKA_SECURITY, " build/test/Testing/Temporary/LastTest.log ||
      { log event=failed what=test_kafka_acl stack="$s" why=skipped; exit 1; }
    grep -q "^test_plain_client: \(SASL_SSL\|SSL\), .*the properties file" \
      build/test/Testing/Temporary/LastTest.log ||
      { log event=failed what=test_plain_client stack="$s" why=no_properties_file; exit 1; }
    deploy/local/stack.sh down --purge >&2
  done
fi
[ -z "$torture_failed" ] || { log event=failed what=torture modes="${torture_failed# }"; exit 1; }
exit 0
