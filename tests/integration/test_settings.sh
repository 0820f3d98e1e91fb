#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_settings: settings as every Kafka tool takes them, against the
# suite's stack. (a) The demo's hint verbatim: in a clean environment,
# eval "$(deploy/local/stack.sh env)", then kdelayctl verbs and the
# forwarder with no connection options. (b) Common options before and
# after the verb, -b. (c) Precedence: command line > environment > config
# file. (d) --kafka-config applied by both binaries: a bad line refused
# naming the file and line, a client.id seen in the group, the file's
# bootstrap.servers used.
# Usage: test_settings.sh SOURCE_DIR KDELAYCTL KDELAY_FORWARDER
set -euo pipefail
src=${1:?usage: test_settings.sh SOURCE_DIR KDELAYCTL KDELAY_FORWARDER}
ctl=${2:?} fwd=${3:?}
: "${KDELAY_BROKERS:?integration tests need KDELAY_BROKERS (stack.sh env)}"
: "${KDELAY_MYSQL_URL:?integration tests need KDELAY_MYSQL_URL (stack.sh env)}"
tmp=$(mktemp -d)
fwd_pid=""
cleanup() {
    [ -z "$fwd_pid" ] || kill -TERM "$fwd_pid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "test_settings: FAILED: $*" >&2; exit 1; }
ok() { echo "test_settings: ok: $*"; }

# The binaries by their names, as a user's PATH has them.
mkdir "$tmp/bin"
ln -s "$ctl" "$tmp/bin/kdelayctl"
ln -s "$fwd" "$tmp/bin/kdelay-forwarder"
prefix=kdset$$_$RANDOM
group=$prefix-group
# This test's topics and group; a wrong broker list and MySQL URL that
# the environment must override.
cat >"$tmp/kdelay.conf" <<EOF
brokers = "127.0.0.1:1";
mysql = { url = "mysql://nobody@127.0.0.1:1/none"; connect_timeout = 2; };
topic_prefix = "$prefix";
tiers = [ "1s", "1m", "1h" ];
topics = { partitions = 1; };
forwarder = { group_id = "$group"; stats_interval = "0s"; };
EOF
# The forwarder's client properties: a client id to see in the group.
printf '# test_settings\n! the forwarder\n\nclient.id = %s-fwd\n' "$prefix" >"$tmp/fwd.properties"

# (a) In a clean environment: only PATH, HOME and the stack dir the suite
# runs against (stack.sh's default is <repo>/.stack).
clean_env=(env -i "PATH=$tmp/bin:/usr/local/bin:/usr/bin:/bin" "HOME=$tmp")
[ -z "${KDELAY_STACK_DIR:-}" ] || clean_env+=("KDELAY_STACK_DIR=$KDELAY_STACK_DIR")
cat >"$tmp/demo.sh" <<EOF
set -eu
cd "$src"
eval "\$(deploy/local/stack.sh env)"
[ "\$KDELAY_BROKERS" = "$KDELAY_BROKERS" ] || { echo "stack.sh env gave KDELAY_BROKERS=\$KDELAY_BROKERS, the suite runs against $KDELAY_BROKERS (set KDELAY_STACK_DIR)" >&2; exit 9; }
export KDELAY_CONFIG="$tmp/kdelay.conf"
kdelayctl topics create
kdelayctl db migrate
kdelay-forwarder --kafka-config "$tmp/fwd.properties" >"$tmp/fwd.log" 2>&1 &
echo \$! >"$tmp/fwd.pid"
id=\$(kdelayctl schedule --topic $prefix.target --value v --delay 1h --no-target-check)
echo "\$id" >"$tmp/id"
kdelayctl status "\$id"
kdelayctl tasks list
i=0
until kdelayctl stats >"$tmp/stats.out"; do
    i=\$((i + 1)); [ \$i -lt 60 ] || exit 8
    sleep 1
done
kdelayctl cancel "\$id"
kdelayctl status "\$id"
EOF
if ! "${clean_env[@]}" bash "$tmp/demo.sh" >"$tmp/demo.out" 2>"$tmp/demo.err"; then
    cat "$tmp/demo.out" "$tmp/demo.err" "$tmp/fwd.log" >&2 || true
    fail "(a) the demo's hint in a clean environment"
fi
fwd_pid=$(cat "$tmp/fwd.pid")
id=$(cat "$tmp/id")
grep -q "CANCELLED" "$tmp/demo.out" || fail "(a) no CANCELLED in: $(cat "$tmp/demo.out")"
grep -q "$prefix-fwd" "$tmp/stats.out" ||
    fail "(d) the forwarder's client.id from --kafka-config not in stats: $(cat "$tmp/stats.out")"
grep -q "brokers=$KDELAY_BROKERS" "$tmp/fwd.log" || fail "(a) the forwarder's brokers: $(head -5 "$tmp/fwd.log")"
ok "(a) eval \"\$(stack.sh env)\"; topics create, db migrate, schedule, status, tasks list, stats, cancel and the forwarder without connection options"
ok "(d) the forwarder's client.id from --kafka-config is in its group"
# Not this shell's child (the clean shell started it): its exit line.
kill -TERM "$fwd_pid"
for _ in $(seq 300); do kill -0 "$fwd_pid" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$fwd_pid" 2>/dev/null || fail "the forwarder did not stop on SIGTERM"
fwd_pid=""
grep -q 'event=forwarder_exit err=KDELAY_OK' "$tmp/fwd.log" || fail "the forwarder's exit: $(tail -3 "$tmp/fwd.log")"

export KDELAY_CONFIG=$tmp/kdelay.conf
B=$KDELAY_BROKERS U=$KDELAY_MYSQL_URL
expect() { # EXIT WHAT CMD...: runs CMD, its exit must be EXIT
    local want=$1 what=$2 rc=0
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    [ "$rc" = "$want" ] || { cat "$tmp/out" "$tmp/err" >&2; fail "$what: exit $rc, want $want"; }
}
# (b), (c): a wrong environment, the right command line, before or after
# the verb.
export KDELAY_BROKERS=127.0.0.1:1 KDELAY_MYSQL_URL=mysql://nobody@127.0.0.1:1/none
expect 0 "-b before the verb" "$ctl" -b "$B" topics check
expect 0 "-b after the verb" "$ctl" topics check -b "$B"
expect 0 "--brokers= before the sub-verb's options" "$ctl" --brokers="$B" topics check --json
expect 0 "--mysql before the verb" "$ctl" --mysql "$U" status "$id"
grep -q CANCELLED "$tmp/out" || fail "status: $(cat "$tmp/out")"
expect 0 "--mysql after the operand" "$ctl" status "$id" --mysql "$U" -b "$B"
expect 0 "-X brokers= over the environment" "$ctl" -X "brokers=$B" topics check
ok "(b) common options before and after the verb; (c) -b, --mysql, -X over a wrong environment"
expect 1 "the environment's wrong MySQL URL used" "$ctl" status "$id"
expect 2 "not a common option before the verb" "$ctl" --json status "$id"
expect 2 "-b without a value" "$ctl" -b
# -c over KDELAY_CONFIG; the config file under the environment.
KDELAY_CONFIG=/nonexistent/kdelay.conf expect 0 "-c over KDELAY_CONFIG" "$ctl" -c "$tmp/kdelay.conf" -b "$B" topics check
unset KDELAY_BROKERS KDELAY_MYSQL_URL
expect 1 "the config file's MySQL URL when no environment" "$ctl" status "$id"
expect 0 "--mysql over the config file" "$ctl" status "$id" --mysql "$U"
ok "(c) the environment over the config file, -c over KDELAY_CONFIG"

# (d) --kafka-config: bootstrap.servers from the file when nothing sets
# brokers; -b over it; a bad value refused by both binaries, naming the
# file and line; an unreadable file; a password in a file others may read
# (its mode, never the password).
printf 'client.id=kdset\nbootstrap.servers = %s\n' "$B" >"$tmp/ok.properties"
printf 'bootstrap.servers: 127.0.0.1:1\n' >"$tmp/wrong.properties"
printf '# x\nclient.id=a\n\nlinger.ms=soon\n' >"$tmp/bad.properties"
printf 'sasl.mechanisms=PLAIN\nsasl.password=hunter2\n' >"$tmp/open.properties"
chmod 644 "$tmp/open.properties"
sed -i '/^brokers/d' "$tmp/kdelay.conf"
expect 0 "--kafka-config's bootstrap.servers" "$ctl" --kafka-config "$tmp/ok.properties" topics check
KDELAY_KAFKA_CONFIG=$tmp/ok.properties expect 0 "KDELAY_KAFKA_CONFIG's bootstrap.servers" "$ctl" topics check
expect 0 "-b over the file's bootstrap.servers" "$ctl" topics check --command-config "$tmp/wrong.properties" -b "$B"
for bin in "$ctl" "$fwd"; do
    args=(tiers plan)
    [ "$bin" = "$ctl" ] || args=()
    expect 2 "$bin: a bad property value" "$bin" ${args[@]+"${args[@]}"} --kafka-config "$tmp/bad.properties"
    grep -q "\"$tmp/bad.properties\" line 4: " "$tmp/err" || fail "$bin: the error: $(cat "$tmp/err")"
    KDELAY_KAFKA_CONFIG=$tmp/bad.properties expect 2 "$bin: a bad KDELAY_KAFKA_CONFIG" "$bin" ${args[@]+"${args[@]}"}
    grep -q "\$KDELAY_KAFKA_CONFIG: .*line 4" "$tmp/err" || fail "$bin: the error: $(cat "$tmp/err")"
    expect 2 "$bin: an unreadable file" "$bin" ${args[@]+"${args[@]}"} --kafka-config "$tmp/none.properties"
    grep -q "\"$tmp/none.properties\": No such file" "$tmp/err" || fail "$bin: the error: $(cat "$tmp/err")"
    expect 2 "$bin: a password in a file others may read" "$bin" ${args[@]+"${args[@]}"} --kafka-config "$tmp/open.properties"
    grep -q "\"$tmp/open.properties\" line 2: sasl.password holds a secret but the file's mode is 0644" "$tmp/err" || fail "$bin: the error: $(cat "$tmp/err")"
    ! grep -q hunter2 "$tmp/err" "$tmp/out" || fail "$bin: the password shown: $(cat "$tmp/err")"
done
ok "(d) --kafka-config/--command-config/KDELAY_KAFKA_CONFIG: bootstrap.servers used, -b over it, bad lines and a password others may read refused by both binaries with the file and line"
echo "test_settings: passed"
