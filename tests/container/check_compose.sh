#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_compose.sh - the container image and deploy/docker/compose.yaml,
# built and run for real, from a clean clone and without an image
# registry (scripts/test.sh runs it):
#
#  1. the Debian base images (deploy/docker/base-images.sh: mmdebstrap,
#     cached), the Kafka and MariaDB stand-ins
#     (deploy/docker/standin-images.sh) and the kdelay image
#     (`docker build -f deploy/docker/Dockerfile .`, the Release -Werror
#     build);
#  2. `compose up` of compose.yaml + compose.standin.yaml (+ this
#     directory's compose.check.yaml: the same health checks, asked more
#     often), under a project name of its own, publishing nothing on a
#     fixed host port; both forwarders healthy;
#  3. through the containers (`compose run --rm init kdelayctl ...` and
#     kdelayctl in forwarder-1): one task scheduled, one scheduled and
#     cancelled, a batch due across a crash of forwarder-0 (SIGKILL to its
#     process: `docker kill` counts as a manual stop, which no restart
#     policy restarts);
#  4. asserts: the task is on demo.out on time (lateness bounded, printed)
#     and FIRED, the cancelled one never arrives and is CANCELLED;
#     forwarder-0 is restarted by its restart policy and has its
#     partitions back within 10 s (static membership; from its log); every
#     task of the batch arrives (at_least_once may duplicate: counted,
#     none lost); both forwarders answer /readyz on their published ports;
#  5. `compose down -v`.
#
# The Docker daemon: the one `docker info` reaches; else, as root, a
# dockerd started here (--storage-driver=vfs, data root /var/lib/docker,
# or KDELAY_DOCKER_STORAGE_DRIVER / KDELAY_DOCKER_DATA_ROOT) and stopped at
# the end. Exit 77 (skipped, with the reason) only when no daemon answers
# and none can be started. Compose: `docker compose` (v2) when it exists,
# else `docker-compose` (v1.29). Every figure is printed on a line starting
# "check_compose: ".
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
PROG=check_compose.sh
t_start=$SECONDS
log() { printf 'ts=%s level=info prog=%s %s\n' "$(date -u +%FT%TZ)" "$PROG" "$*" >&2; }
fail() {
    printf 'ts=%s level=error prog=%s %s\n' "$(date -u +%FT%TZ)" "$PROG" "$*" >&2
    echo "check_compose: FAILED: $*"
    exit 1
}
skip() {
    echo "check_compose: skipped: $*"
    exit 77
}
figure() { echo "check_compose: $*"; }
now_ms() { date +%s%3N; }

command -v docker >/dev/null || fail "docker missing: deploy/local/deps.sh --test installs docker.io"
if docker compose version >/dev/null 2>&1; then
    compose_cmd=(docker compose)
elif command -v docker-compose >/dev/null; then
    compose_cmd=(docker-compose)
else
    fail "no docker compose nor docker-compose: deploy/local/deps.sh --test installs docker-compose"
fi

work=$(mktemp -d)
project=kdelaycheck$$
dockerd_pid=""
compose_up=""
compose() {
    "${compose_cmd[@]}" -p "$project" -f "$root/deploy/docker/compose.yaml" \
        -f "$root/deploy/docker/compose.standin.yaml" \
        -f "$root/tests/container/compose.check.yaml" "$@"
}
cleanup() {
    local rc=$? i
    if [[ -n $compose_up ]]; then
        if ((rc != 0 && rc != 77)); then
            compose ps >&2 || true
            compose logs --no-color --tail=40 >&2 || true
        fi
        compose down -v --remove-orphans >/dev/null 2>&1 || log "event=compose_down_failed project=$project"
    fi
    if [[ -n $dockerd_pid ]]; then
        kill -TERM "$dockerd_pid" 2>/dev/null || true
        for ((i = 0; i < 150; i++)); do
            kill -0 "$dockerd_pid" 2>/dev/null || break
            sleep 0.2
        done
        log "event=dockerd_stopped pid=$dockerd_pid"
    fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT

# ---------------------------------------------------------------- daemon
if ! docker info >/dev/null 2>&1; then
    ((EUID == 0)) || skip "no Docker daemon answers (docker info) and only root can start one"
    command -v dockerd >/dev/null || fail "dockerd missing: deploy/local/deps.sh --test installs docker.io"
    log "event=dockerd_start storage_driver=${KDELAY_DOCKER_STORAGE_DRIVER:-vfs} data_root=${KDELAY_DOCKER_DATA_ROOT:-/var/lib/docker}"
    dockerd --storage-driver="${KDELAY_DOCKER_STORAGE_DRIVER:-vfs}" \
        --data-root "${KDELAY_DOCKER_DATA_ROOT:-/var/lib/docker}" >"$work/dockerd.log" 2>&1 &
    dockerd_pid=$!
    for ((i = 0; i < 300; i++)); do
        docker info >/dev/null 2>&1 && break
        kill -0 "$dockerd_pid" 2>/dev/null || break
        sleep 0.2
    done
    if ! docker info >/dev/null 2>&1; then
        tail -n 15 "$work/dockerd.log" >&2
        skip "no Docker daemon answers and dockerd could not start here (its log above)"
    fi
fi

# ---------------------------------------------------------------- images
t=$SECONDS
"$root/deploy/docker/base-images.sh"
"$root/deploy/docker/standin-images.sh"
figure "base and stand-in images ready in $((SECONDS - t)) s"

# The kdelay image. The build stage is tagged too (kdelay-build:cache), so
# that its apt layer, the docker layer cache of the next build, is not
# dangling; the images a rebuild replaces are removed (vfs keeps a full
# copy of every layer).
t=$SECONDS
image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }
old_build=$(image_id kdelay-build:cache)
old_image=$(image_id kdelay:local)
build_log=$work/docker-build.log
# The commit and version the image says (as development.md "Versions"
# builds it; .dockerignore keeps .git out of the context)
rev="" version=""
if rev=$(git -C "$root" rev-parse HEAD 2>/dev/null); then
    version=$(sh "$root/cmake/version.sh" -r "$rev" "$root" | sed -n 's/^KDELAY_VERSION=//p')
fi
for target in build ""; do
    args=(-t kdelay-build:cache --target build)
    [[ -z $target ]] && args=(-t kdelay:local)
    [[ -n $rev ]] && args+=(--build-arg "REVISION=$rev" --build-arg "VERSION=$version")
    if ! docker build --network host "${args[@]}" -f "$root/deploy/docker/Dockerfile" "$root" >>"$build_log" 2>&1; then
        tail -n 40 "$build_log" >&2
        fail "docker build -f deploy/docker/Dockerfile failed (${target:-runtime} stage)"
    fi
done
for old in "$old_image" "$old_build"; do
    if [[ -n $old && $old != "$(image_id kdelay:local)" && $old != "$(image_id kdelay-build:cache)" ]]; then
        docker rmi "$old" >/dev/null 2>&1 || true
    fi
done
figure "kdelay image built in $((SECONDS - t)) s ($(docker image inspect -f '{{.Size}}' kdelay:local | awk '{printf "%.0f MB", $1 / 1e6}'))"
said=$(docker run --rm kdelay:local kdelayctl --version) || fail "kdelayctl --version in the image failed"
figure "the image says: $said"
if [[ -n $rev ]]; then
    [[ $said == "kdelayctl $version commit=$rev "* ]] || fail "the image's kdelayctl --version is not $version commit=$rev"
    label=$(docker image inspect -f '{{index .Config.Labels "org.opencontainers.image.revision"}}' kdelay:local)
    [[ $label == "$rev" ]] || fail "the image's revision label is '$label', not $rev"
fi

# ---------------------------------------------------------------- compose up
export KDELAY_MYSQL_PASSWORD MARIADB_ROOT_PASSWORD
KDELAY_MYSQL_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
MARIADB_ROOT_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
export KDELAY_FORWARDER_0_PORT=0 KDELAY_FORWARDER_1_PORT=0 # free ports
unset COMPOSE_PROJECT_NAME COMPOSE_FILE
t=$SECONDS
t_up=$(now_ms)
compose_up=1
compose up -d --no-build >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; fail "compose up failed"; }
cid() { compose ps -q "$1"; }
fwd0=$(cid forwarder-0)
fwd1=$(cid forwarder-1)
[[ -n $fwd0 && -n $fwd1 ]] || fail "the forwarders' containers are missing"
health() { docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$1"; }
wait_healthy() { # CONTAINER... : all healthy within 180 s
    local c deadline=$((SECONDS + 180)) ok
    while :; do
        ok=1
        for c in "$@"; do [[ $(health "$c") == healthy ]] || ok=""; done
        [[ -n $ok ]] && return 0
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}
wait_healthy "$fwd0" "$fwd1" || fail "the forwarders are not healthy (/readyz) 180 s after compose up"
figure "compose up: Kafka, MariaDB, init, demo-topic, two forwarders healthy in $((SECONDS - t)) s ($("${compose_cmd[@]}" version --short 2>/dev/null || "${compose_cmd[@]}" version | head -n 1))"
since_up() { # CONTAINER FIELD: seconds from compose up to its State.FIELD
    local at
    at=$(date -d "$(docker inspect -f "{{.State.$2}}" "$1")" +%s%3N)
    printf '%d.%d' $(((at - t_up) / 1000)) $((((at - t_up) % 1000) / 100))
}
line="compose up timeline (s):"
for s in kafka mariadb init demo-topic forwarder-0; do
    c=$(cid "$s")
    line+=" $s $(since_up "$c" StartedAt)"
    [[ $s == init || $s == demo-topic ]] && line+="-$(since_up "$c" FinishedAt)"
done
figure "$line"

# Partitions a forwarder's latest assignment in its log gave it
# (event=partitions_assigned count=N), empty when none yet.
assigned() { docker logs "$@" 2>&1 | sed -n 's/.*event=partitions_assigned count=\([0-9]*\).*/\1/p' | tail -n 1; }
parts0=$(assigned "$fwd0")
[[ -n $parts0 && $parts0 -gt 0 ]] || fail "forwarder-0 holds no partition (count=${parts0:-none}): nothing to take back"

# ---------------------------------------------------------------- tasks
nonce=$(date +%s)-$$
ctl() { compose run --rm --no-deps -T init kdelayctl "$@"; }
id_a=check-ontime-$nonce
id_b=check-cancel-$nonce
t0=$(now_ms)
# one task scheduled and cancelled at once, by kdelayctl in forwarder-1
docker exec "$fwd1" kdelayctl schedule -q --topic demo.out --value cancelled --id "$id_b" --delay 15s >/dev/null ||
    fail "schedule of the task to cancel (kdelayctl in forwarder-1) failed"
docker exec "$fwd1" kdelayctl cancel -q "$id_b" >/dev/null || fail "cancel $id_b (kdelayctl in forwarder-1) failed"
t1=$(now_ms)
# one task by the documented command: compose run --rm init kdelayctl ...
got=$(ctl schedule -q --topic demo.out --value on-time --id "$id_a" --delay 8s) ||
    fail "schedule (compose run init kdelayctl) failed"
[[ $got == "$id_a" ]] || fail "schedule printed '$got', not the id $id_a"
t2=$(now_ms)
# A batch of N due every 300 ms from T (8 s from now), in one container
# (forwarder-1's kdelayctl, without the MySQL id check: fresh ids);
# forwarder-0 is killed at T+3 s, inside the batch, and at least 3 s after
# the task above is due.
batch=${KDELAY_CHECK_BATCH:-30}
due_batch=$((t2 + ${KDELAY_CHECK_LEAD_MS:-8000}))
# shellcheck disable=SC2016 # expanded by the container's sh (its $1 $2 $3)
script='i=0; while [ "$i" -lt "$1" ]; do
    kdelayctl schedule -q --no-target-check --topic demo.out --value batch --id "$2-$i" \
        --at $(($3 + i * 300)) >/dev/null || exit 1
    i=$((i + 1)); done'
docker exec -e KDELAY_MYSQL_URL= "$fwd1" sh -c "$script" sh "$batch" "check-batch-$nonce" "$due_batch" ||
    fail "scheduling the batch in forwarder-1 failed"
t3=$(now_ms)
figure "through the containers: scheduled and cancelled one task in $((t1 - t0)) ms (exec), scheduled one in $((t2 - t1)) ms (compose run), a batch of $batch in $((t3 - t2)) ms (exec)"
((t3 < due_batch)) || fail "scheduling the batch ended $((t3 - due_batch)) ms after its first due time (KDELAY_CHECK_LEAD_MS)"

# ---------------------------------------------------------------- the crash
sleep_until() { # epoch ms
    local d=$(($1 - $(now_ms)))
    ((d <= 0)) || sleep "$(printf '%d.%03d' $((d / 1000)) $((d % 1000)))"
}
sleep_until $((due_batch + 3000))
restarts0=$(docker inspect -f '{{.RestartCount}}' "$fwd0")
since=$(date +%s.%N)
pid=$(docker inspect -f '{{.State.Pid}}' "$fwd0")
t_kill=$(now_ms)
kill -KILL "$pid" || fail "cannot SIGKILL forwarder-0's process $pid (the Docker daemon runs elsewhere?)"
back_ms="" ready_ms="" parts_back=""
deadline=$((t_kill + 30000))
while (($(now_ms) < deadline)) && [[ -z $back_ms || -z $ready_ms ]]; do
    if [[ -z $back_ms ]]; then
        parts_back=$(assigned --since "$since" "$fwd0")
        [[ -n $parts_back && $parts_back -gt 0 ]] && back_ms=$(($(now_ms) - t_kill))
    fi
    if [[ -z $ready_ms ]] && (($(docker inspect -f '{{.RestartCount}}' "$fwd0") > restarts0)) &&
        docker exec "$fwd0" curl -fsS -o /dev/null http://127.0.0.1:9464/readyz 2>/dev/null; then
        ready_ms=$(($(now_ms) - t_kill))
    fi
    sleep 0.2
done
restarts=$(docker inspect -f '{{.RestartCount}}' "$fwd0")
((restarts > restarts0)) || fail "forwarder-0 was not restarted after its crash (restart count $restarts)"
[[ -n $back_ms ]] || fail "forwarder-0 has no partitions 30 s after its crash"
figure "forwarder-0 killed (SIGKILL), restarted by its restart policy (restarts $restarts0 -> $restarts): $parts_back partitions back after $back_ms ms (had $parts0), /readyz 200 after ${ready_ms:-?} ms"
((back_ms <= 10000)) || fail "forwarder-0's partitions came back after $back_ms ms, over 10 s (static membership)"
((parts_back == parts0)) || fail "forwarder-0 got $parts_back partitions back, had $parts0 (a rebalance, not static membership)"
[[ -n $ready_ms ]] || fail "forwarder-0's /readyz not 200 within 30 s of its crash"

# ---------------------------------------------------------------- delivered
last_due=$((due_batch + (batch - 1) * 300))
sleep_until $((last_due + 3000))
# every record of demo.out (3 partitions), with its timestamp (the
# forwarder's produce time) and headers (kdelay-id, kdelay-fire-at)
compose run --rm --no-deps -T demo-topic /opt/kafka/bin/kafka-console-consumer.sh \
    --bootstrap-server kafka:9092 --topic demo.out --from-beginning --timeout-ms 4000 \
    --property print.timestamp=true --property print.headers=true >"$work/demo.out" 2>"$work/consumer.err" || true
grep -q 'kdelay-id' "$work/demo.out" || { cat "$work/consumer.err" >&2; fail "nothing read from demo.out"; }
python3 - "$work/demo.out" "$id_a" "$id_b" "check-batch-$nonce" "$batch" "${KDELAY_CHECK_MAX_LATE_MS:-5000}" <<'PY' || fail "deliveries (above)"
import re, sys
path, id_a, id_b, prefix, batch, max_late = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
seen = {}
for line in open(path, errors="replace"):
    m = re.match(r"CreateTime:(\d+)\t(.*?)\t", line)
    if not m:
        continue
    h = dict(kv.split(":", 1) for kv in m.group(2).split(",") if ":" in kv)
    if "kdelay-id" in h:
        seen.setdefault(h["kdelay-id"], []).append(int(m.group(1)) - int(h["kdelay-fire-at"]))
ok = True
def say(s):
    print("check_compose: " + s)
a = seen.get(id_a, [])
if not a:
    say("FAILED: task %s never arrived on demo.out" % id_a); ok = False
else:
    say("task arrived on demo.out %d ms after its due time (bound %d ms), %d time(s)" % (min(a), max_late, len(a)))
    if min(a) > max_late or min(a) < 0:
        say("FAILED: lateness %d ms out of 0..%d" % (min(a), max_late)); ok = False
if id_b in seen:
    say("FAILED: the cancelled task %s arrived" % id_b); ok = False
else:
    say("the cancelled task never arrived")
ids = ["%s-%d" % (prefix, i) for i in range(batch)]
lost = [i for i in ids if i not in seen]
dups = sum(len(seen[i]) - 1 for i in ids if i in seen)
late = [max(seen[i]) for i in ids if i in seen]
say("batch across the crash: %d/%d arrived, %d lost, %d duplicate(s) (at_least_once), lateness max %d ms"
    % (batch - len(lost), batch, len(lost), dups, max(late) if late else -1))
if lost:
    say("FAILED: lost %s" % ",".join(lost)); ok = False
sys.exit(0 if ok else 1)
PY
fate() { docker exec "$fwd1" kdelayctl status --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["fate"])'; }
fa=$(fate "$id_a") fb=$(fate "$id_b")
figure "kdelayctl status: the task $fa, the cancelled one $fb"
[[ $fa == FIRED && $fb == CANCELLED ]] || fail "fates: $fa and $fb, want FIRED and CANCELLED"

# ---------------------------------------------------------------- end state
wait_healthy "$fwd0" "$fwd1" || fail "the forwarders are not healthy at the end"
for s in forwarder-0 forwarder-1; do
    port=$(compose port "$s" 9464) || fail "$s: no published port"
    curl -fsS -o /dev/null "http://$port/readyz" || fail "$s: /readyz on $port not 200"
done
figure "both forwarders healthy, /readyz 200 on their published ports"
t=$SECONDS
compose down -v --remove-orphans >/dev/null 2>&1 || fail "compose down -v failed"
compose_up=""
figure "compose down -v in $((SECONDS - t)) s; whole check $((SECONDS - t_start)) s"
