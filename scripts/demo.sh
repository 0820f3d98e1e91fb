#!/usr/bin/env bash
# The main job on a fresh Debian machine: install what kdelay needs, build
# it, start a local Kafka + MariaDB stack, create kdelay's topics and
# schema, schedule a task, show it sitting in its tier topic with its
# headers and its fate in MySQL, and cancel a second task.
# The stack keeps running afterwards: `deploy/local/stack.sh down` stops it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
step() { printf '\n== %s\n' "$*"; }

step "Installing dependencies (apt-get, only what is missing)"
deploy/local/deps.sh

step "Building kdelay"
cmake -S . -B build/demo -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
cmake --build build/demo -j "$(nproc)" >/dev/null
ctl() { echo "\$ kdelayctl ${*@Q}" >&2; build/demo/kdelayctl "$@"; }

step "Starting the local stack (Kafka in KRaft mode + a private MariaDB)"
deploy/local/stack.sh up
eval "$(deploy/local/stack.sh env)"
export KDELAY_BROKERS KDELAY_MYSQL_URL
common=(--brokers "$KDELAY_BROKERS" --mysql "$KDELAY_MYSQL_URL")

step "Creating the tier and dead-letter topics, and the schema"
ctl topics create --partitions 2 --replication-factor 1 "${common[@]}"
ctl topics check "${common[@]}"
ctl db migrate "${common[@]}"

step "Scheduling a task due in 45 seconds"
id=$(ctl schedule "${common[@]}" --topic demo.reminders --key order-42 \
       --value 'ship order 42' --delay 45s --header source=demo)
echo "task id: $id"

step "The task as a Kafka record in its tier topic (kdelay.tier.1s)"
kcat=$(command -v kcat || command -v kafkacat)
"$kcat" -C -b "$KDELAY_BROKERS" -t kdelay.tier.1s -o beginning -e -q \
  -f 'partition=%p offset=%o append_time=%T key=%k value=%s\n  headers: %h\n' |
  grep -B1 -F "kdelay-id=$id" || { echo "record not found" >&2; exit 1; }
ctl status "${common[@]}" "$id"

step "Scheduling a second task and cancelling it"
id2=$(ctl schedule "${common[@]}" --topic demo.reminders --value 'never sent' --delay 10m)
ctl cancel "${common[@]}" "$id2"
ctl status "${common[@]}" --json "$id2"

cat <<TXT

Done. The stack is still running:
  eval "\$(deploy/local/stack.sh env)"   # KDELAY_BROKERS, KDELAY_MYSQL_URL
  deploy/local/stack.sh down            # stop it (add --purge to delete data)
TXT
