#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole kdelay test suite, from a fresh Debian machine or a warm one:
# installs dependencies, starts two private Kafka + MariaDB stacks on test
# ports — "new" on the default Kafka (4.x), "old" on Kafka 3.9.x with a
# TLS-only MariaDB — while it builds twice (plain and ASan+UBSan) and
# checks formatting. Then, in order (docs/development.md, "The suite"):
# - the plain build's ctest, every test, in two lanes side by side on
#   Kafka 4.x: the tests that stop, pause or write-protect MariaDB (label
#   mysql_fault) one at a time on "old"'s MariaDB, every other test three
#   at a time on "new"'s;
# - every SQL statement the plain ctest sent checked against a MySQL 8
#   grammar (tools/sqlcheck: the MariaDBs run with MySQL 8's strict
#   sql_mode);
# - the torture tool's fast profile in both delivery modes side by side
#   (at_least_once on "new", exactly_once on "old"), while a third stack,
#   three Kafka 4.x nodes, starts for test_broker_failover alone (a node
#   killed under forwarders) and stops right after it;
# - the sanitizer build's unit, mock-cluster and asan-labelled integration
#   tests on "old" (Kafka 3.9.x), while two small secured stacks start
#   (stack.sh --security: SASL_SSL on Kafka 3.9.x, mTLS on the default
#   Kafka); then test_kafka_acl (Kafka ACLs, the init step under exactly
#   the documented ACLs) and test_plain_client on both side by side; and
#   the stacks stop;
# - beside that last step, the container image and the compose stack,
#   built and run for real (tests/container/check_compose.sh, about 75 s
#   warm, 3.5 minutes cold).
#
#   scripts/test.sh            # everything
#   KDELAY_TEST_SKIP_ASAN=1 scripts/test.sh   # plain build only (quicker)
#   KDELAY_TEST_SKIP_TORTURE=1 scripts/test.sh   # without the torture runs
#   KDELAY_TEST_SKIP_NODES3=1 scripts/test.sh    # without the 3-node stack
#   KDELAY_TEST_SKIP_SECURITY=1 scripts/test.sh  # without the secured stacks
#   KDELAY_TEST_SKIP_CONTAINER=1 scripts/test.sh # without the container check
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
# shellcheck disable=SC2317 # the EXIT trap runs it (0.9.0 misreads the final exit)
cleanup() {
  local rc=$? s
  for s in "${!stack_pid[@]}"; do wait "${stack_pid[$s]}" 2>/dev/null || true; done
  for s in new old 3n sasl mtls; do
    (use_stack "$s"; deploy/local/stack.sh down --purge >&2) || true
  done
  log event=done rc="$rc" seconds=$(( $(date +%s) - start ))
  exit "$rc"
}
trap cleanup EXIT

# The stacks start while the code compiles.
mkdir -p build
for s in new old; do
  log event=stack_up stack="$s" dir="${stack_dir[$s]}" log="build/stack-up-$s.log"
  # Both MariaDBs log every statement: the plain build's ctest sends all
  # of kdelay's SQL (its two lanes, one on each), checked against a MySQL
  # 8 grammar after it.
  glog=$root/build/mysql-general-$s.log
  rm -f "$glog"
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
mapfile -t c_files < <(git ls-files '*.c' '*.h')
clang-format --dry-run -Werror "${c_files[@]}"

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
  log event=ctest dir="$dir" args="$*"
  local rc=0
  (cd "$dir" && ctest --output-on-failure --timeout 600 "$@") || rc=$?
  # The forwarder test's figures (lateness, duplicates, back-pressure), and
  # the broker failover's.
  grep -ahE '^ +(records on targets|lateness|back-pressure|delivered without|scheduled|(at_least|exactly)_once: node)' \
    "$dir/Testing/Temporary/LastTest.log" | sed 's/^ */  figures: /' || true
  return "$rc"
}

# The plain build's ctest, in two lanes side by side, both on stack
# "new"'s Kafka (4.x):
# - lane "shared": every test but those labelled mysql_fault, three at a
#   time (ctest -j3: they wait on timelines far more than they compute;
#   each has its own databases, topic prefixes and groups), on stack
#   "new"'s MariaDB;
# - lane "mysql-faults": the tests that stop, pause or write-protect
#   MariaDB (label mysql_fault: test_forwarder, test_mysql_hang,
#   test_outage, test_http, test_fate), one at a time, on stack "old"'s
#   MariaDB (TLS only), so that no test of the other lane sees their
#   outages. stack.sh's mysql-* verbs act on KDELAY_STACK_DIR, here
#   "old"'s; nothing in this lane stops Kafka.
# The lane runs from a directory of its own (build/test/lane-mysql-faults,
# whose CTestTestfile.cmake includes the build tree's), so that the two
# ctest runs do not share Testing/. Each lane's output goes to its log,
# printed when both are done.
lane_env_faults() {
  local brokers
  brokers=$(use_stack new; printf '%s' "$KDELAY_BROKERS")
  use_stack old
  export KDELAY_BROKERS=$brokers
  unset KDELAY_KAFKA_VERSION
}
lane=build/test/lane-mysql-faults
mkdir -p "$lane"
printf 'subdirs("%s")\n' "$root/build/test" >"$lane/CTestTestfile.cmake"
log event=lanes shared=build/test/lane-shared.log faults="$lane/lane.log"
(lane_env_faults; run_ctest "$lane" -L '^mysql_fault$') >"$lane/lane.log" 2>&1 &
faults_pid=$!
shared_rc=0
(use_stack new; run_ctest build/test -LE '^mysql_fault$' -j3) >build/test/lane-shared.log 2>&1 ||
  shared_rc=$?
faults_rc=0
wait "$faults_pid" || faults_rc=$?
cat build/test/lane-shared.log "$lane/lane.log"
if [ "$shared_rc" != 0 ] || [ "$faults_rc" != 0 ]; then
  log event=failed what=ctest lane_shared_rc="$shared_rc" lane_faults_rc="$faults_rc"
  exit 1
fi
# Every statement the plain ctest sent (claims, takeovers, marks, cancel,
# status, audit, gc, migrations) parses as MySQL 8 SQL (tools/sqlcheck).
for s in new old; do
  log event=sql_mysql8 log="build/mysql-general-$s.log"
  tools/sqlcheck/run.sh --general-log "build/mysql-general-$s.log"
done

# The 3-node stack starts now, in the background while the torture runs
# go, at a lower CPU priority (nice) so that its three JVMs' start does not
# starve the torture's forwarders; it serves test_broker_failover alone
# (about 50 s: a node killed and restarted under forwarders of both modes)
# and is deleted at once.
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
  # From a lane directory of its own, so that build/test's LastTest.log
  # keeps the shared lane's output (test_upgrade's table, the figures).
  mkdir -p build/test/lane-3n
  printf 'subdirs("%s")\n' "$root/build/test" >build/test/lane-3n/CTestTestfile.cmake
  run_ctest build/test/lane-3n -R '^test_broker_failover$'
  # ctest passes a skipped test: this one must have run here.
  if grep -q 'test_broker_failover: skipped' build/test/lane-3n/Testing/Temporary/LastTest.log; then
    log event=failed what=test_broker_failover reason=skipped_on_3_nodes
    exit 1
  fi
  (use_stack 3n; deploy/local/stack.sh down --purge >&2)
}

# The torture tool's fast profile in both delivery modes, side by side:
# at_least_once against stack "new" (Kafka 4.x), exactly_once against
# "old" (3.9.x); each stops and restarts its own stack's Kafka and
# MariaDB. The plain build only, about 90 s. Each run's table goes to
# build/test/torture-MODE.out (printed after both), its log to
# build/test/torture-MODE.log. Only a broken guarantee (exit 1) fails the
# suite; exit 3 is the harness's own trouble (a fault it could not inject,
# a check it could not make: docs/torture.md, "Verdict"), shown, not failed.
torture_failed=""
run_torture() { # MODE (in a subshell of its stack)
  local out=build/test/torture-$1.log rc=0
  log event=torture mode="$1" log="$out" stack="$KDELAY_STACK_DIR"
  build/test/tests/torture/kdelay-torture --profile fast --mode "$1" \
    >"build/test/torture-$1.out" 2>"$out" || rc=$?
  if [ "$rc" -eq 3 ]; then
    # Not every harness reason logs a line (grep finds none: exit 1, which
    # must not fail this subshell under set -e and pipefail).
    { grep -E 'whose=harness|event=fault_not_injected' "$out" || true; } | tail -n 20 >&2
    grep -a '^RESULT:' "build/test/torture-$1.out" >&2 || true
    log event=torture_harness_incomplete mode="$1" log="$out"
  elif [ "$rc" -ne 0 ]; then
    tail -n 60 "$out" >&2
    log event=torture_failed mode="$1" rc="$rc" log="$out"
    return 1
  fi
}
if [ -z "${KDELAY_TEST_SKIP_TORTURE:-}" ]; then
  (use_stack new; run_torture at_least_once) &
  alo_pid=$!
  (use_stack old; run_torture exactly_once) &
  eos_pid=$!
  wait "$alo_pid" || torture_failed="$torture_failed at_least_once"
  wait "$eos_pid" || torture_failed="$torture_failed exactly_once"
  cat build/test/torture-at_least_once.out build/test/torture-exactly_once.out
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

# The sanitizer pass (ASan+UBSan) against stack "old" (Kafka 3.9.x,
# MariaDB TLS only): the unit tests and fuzz replays, the mock-cluster
# suite, and the integration tests labelled asan, whose paths nothing
# faster reaches (tests/integration/CMakeLists.txt names them, with why),
# two at a time. The other integration tests re-prove on timelines what
# these and the mock suite run; they run in the plain build only.
if [ -z "${KDELAY_TEST_SKIP_ASAN:-}" ]; then
  use_stack old
  run_ctest build/asan -L '^(unit|mock|asan)$' -j2
fi

# The image (docker build, Release -Werror) and deploy/docker/compose.yaml
# with the local Kafka and MariaDB stand-ins: tasks through the
# containers, a forwarder crashed and back (tests/container/check_compose.sh;
# it starts dockerd when none runs; exit 77 only where no container
# runtime can start, said here). It runs in the background beside the
# secured stacks' tests, which mostly wait.
container_pid=""
if [ -z "${KDELAY_TEST_SKIP_CONTAINER:-}" ]; then
  log event=container_check log=build/check-compose.log
  tests/container/check_compose.sh >build/check-compose.log 2>&1 &
  container_pid=$!
fi
container_wait() { # sets container_failed
  [ -n "$container_pid" ] || return 0
  local rc=0
  wait "$container_pid" || rc=$?
  container_pid=""
  grep -a '^check_compose: ' build/check-compose.log | sed 's/^/  figures: /' >&2 || true
  case $rc in
    0) ;;
    77) log event=container_check_skipped why="\"$(sed -n 's/^check_compose: skipped: //p' build/check-compose.log)\"" ;;
    *) tail -n 60 build/check-compose.log >&2; log event=failed what=check_compose; container_failed=1 ;;
  esac
}
container_failed=""

# The two secured stacks side by side, each from a directory of its own
# (build/test/lane-STACK, as the mysql-faults lane): test_kafka_acl and
# test_plain_client, their output in the lane's log.
run_secured() { # STACK (in a subshell of its stack)
  local s=$1 dir=build/test/lane-$1
  run_ctest "$dir" -R '^(test_kafka_acl|test_plain_client)$' || return 1
  # ctest counts an exit 77 (no secured stack seen) as skipped: not here
  grep -q "^test_kafka_acl: $KDELAY_KAFKA_SECURITY, " "$dir/Testing/Temporary/LastTest.log" ||
    { log event=failed what=test_kafka_acl stack="$s" why=skipped; return 1; }
  grep -q "^test_plain_client: \(SASL_SSL\|SSL\), .*the properties file" \
    "$dir/Testing/Temporary/LastTest.log" ||
    { log event=failed what=test_plain_client stack="$s" why=no_properties_file; return 1; }
}
if [ -n "$secured" ]; then
  (use_stack old; deploy/local/stack.sh down --purge >&2) || true
  declare -A secured_pid=()
  for s in sasl mtls; do
    stack_wait "$s"
    (use_stack "$s"
     log event=stack_ready stack="$s" kafka="$KDELAY_KAFKA_VERSION" security="$KDELAY_KAFKA_SECURITY" \
       brokers="$KDELAY_BROKERS"
     mkdir -p "build/test/lane-$s"
     printf 'subdirs("%s")\n' "$root/build/test" >"build/test/lane-$s/CTestTestfile.cmake"
     run_secured "$s") >"build/test/lane-$s.log" 2>&1 &
    secured_pid[$s]=$!
  done
  secured_failed=""
  for s in sasl mtls; do
    wait "${secured_pid[$s]}" || secured_failed="$secured_failed $s"
    cat "build/test/lane-$s.log"
    (use_stack "$s"; deploy/local/stack.sh down --purge >&2) || true
  done
fi
container_wait
[ -z "${secured_failed:-}" ] || { log event=failed what=secured stacks="${secured_failed# }"; exit 1; }
[ -z "$container_failed" ] || exit 1
[ -z "$torture_failed" ] || { log event=failed what=torture modes="${torture_failed# }"; exit 1; }
exit 0
