#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on a fresh Debian machine: install what kdelay needs, build
# it, start a local Kafka + MariaDB stack, create kdelay's topics and
# schema, run kdelay-forwarder, schedule a task and see it delivered on
# time, and cancel a second one that then never arrives.
# The stack keeps running afterwards: `deploy/local/stack.sh down` stops it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
step() { printf "\n== %s  (%s)\n" "$*" "$(date +%T)"; }

step "Installing dependencies (apt-get --build --run --stack, only what is missing)"
deploy/local/deps.sh --build --run --stack

step "Building kdelay"
cmake -S . -B build/demo -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
cmake --build build/demo -j "$(nproc)" >/dev/null
ctl() { echo "\$ kdelayctl ${*@Q}" >&2; build/demo/kdelayctl "$@"; }

step "Starting the local stack (Kafka in KRaft mode + a private MariaDB)"
deploy/local/stack.sh up
# export KDELAY_BROKERS, KDELAY_MYSQL_URL: kdelayctl and the forwarder read
# them, so no command below names the stack
eval "$(deploy/local/stack.sh env)"

step "Creating the tier and dead-letter topics, and the schema"
ctl topics create --partitions 2 --replication-factor 1
ctl topics check
ctl db migrate

step "Creating the demo target topic and starting kdelay-forwarder"
deploy/local/stack.sh topic demo.reminders --partitions 2
fwd_log=build/demo/forwarder.log
build/demo/kdelay-forwarder >"$fwd_log" 2>&1 &
fwd_pid=$!
trap 'kill "$fwd_pid" 2>/dev/null || true' EXIT
echo "forwarder pid $fwd_pid, log $fwd_log"

kcat=$(command -v kcat || command -v kafkacat)
step "Scheduling a task due in 5 seconds, and one due in 8 seconds that we cancel"
id=$(ctl schedule --topic demo.reminders --key order-42 \
       --value 'ship order 42' --delay 5s --header source=demo)
echo "task id: $id"
id2=$(ctl schedule --topic demo.reminders --key order-43 \
        --value 'never sent' --delay 8s)
ctl cancel "$id2"

step "The first task as a Kafka record in its tier topic (kdelayctl tasks find)"
# The library chose the tier (docs/wire-format.md, "Choosing the tier").
tier_topic=$(ctl tasks find --json "$id" |
  sed -n 's/.*"tier_topic":"\([^"]*\)".*/\1/p')
[[ -n $tier_topic ]] || { echo "task $id not found in a tier topic" >&2; exit 1; }
echo "tier topic: $tier_topic"
"$kcat" -C -b "$KDELAY_BROKERS" -t "$tier_topic" -o beginning -e -q \
  -f 'partition=%p offset=%o append_time=%T key=%k value=%s\n  headers: %h\n' |
  grep -B1 -F "kdelay-id=$id" || { echo "record not found" >&2; exit 1; }

step "Waiting for its delivery on demo.reminders"
# A consumer that stays open; we stop it once the task has arrived.
coproc KCAT { exec timeout 60 "$kcat" -u -C -b "$KDELAY_BROKERS" -t demo.reminders \
  -o beginning -q -f 'delivered: timestamp=%T key=%k value=%s headers: %h\n'; }
# shellcheck disable=SC2153 # KCAT_PID is set by coproc KCAT
kcat_pid=$KCAT_PID
found=0
grep -m1 -F "kdelay-id=$id" <&"${KCAT[0]}" && found=1
kill "$kcat_pid" 2>/dev/null || true
wait "$kcat_pid" 2>/dev/null || true
((found)) || { echo "task $id was not delivered" >&2; exit 1; }
# The forwarder records the delivery (fate FIRED) once its offset is
# committed, a moment after the record arrives: until then status says
# FIRING (claimed). Wait for FIRED, up to 30 s, then show it.
fired=0
for _ in $(seq 60); do
  if build/demo/kdelayctl status --json "$id" | grep -qF '"fate":"FIRED"'; then
    fired=1; break
  fi
  sleep 0.5
done
ctl status "$id"
((fired)) || { echo "task $id was delivered but not marked FIRED within 30 s (see $fwd_log)" >&2; exit 1; }

step "The cancelled task never arrives"
sleep 5 # past its due time (8 s after scheduling) with margin
if "$kcat" -C -b "$KDELAY_BROKERS" -t demo.reminders -o beginning -e -q -f '%h\n' |
   grep -qF "kdelay-id=$id2"; then
  echo "cancelled task $id2 was delivered" >&2; exit 1
fi
echo "task $id2 was not delivered"
ctl status --json "$id2"

step "Stopping the forwarder (SIGTERM) and its last statistics"
kill -TERM "$fwd_pid"; wait "$fwd_pid" || true
trap - EXIT
grep -a 'event=forwarder_stopped' "$fwd_log" | tr ' ' '\n' | grep -E '^(fired|cancelled|held|hopped|statements_per_fire|late_max_ms)=' | paste -sd' '

cat <<TXT

Done. The stack is still running:
  eval "\$(deploy/local/stack.sh env)"   # exports KDELAY_BROKERS, KDELAY_MYSQL_URL
  build/demo/kdelayctl stats            # then every kdelayctl verb reaches the stack
  deploy/local/stack.sh down            # stop it (add --purge to delete data)
TXT
