#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# standin-images.sh - build the local stand-ins of the images
# deploy/docker/compose.yaml takes from a registry, for machines without
# one (deploy/docker/compose.standin.yaml selects them):
#
#   kdelay-standin-kafka:local    apache/kafka's part compose.yaml uses:
#                                 Debian's JRE and the Apache Kafka jars of
#                                 the local stack (Maven Central, cached:
#                                 deploy/local/stack.sh kafka-jars)
#   kdelay-standin-mariadb:local  mariadb's part: Debian's mariadb-server
#
# Both start FROM debian:bookworm-slim (deploy/docker/base-images.sh makes
# it where no registry is reachable). Usage, as root or a docker user:
#
#   deploy/docker/standin-images.sh [kafka] [mariadb]   (default: both)
#
# An image whose label io.kdelay.standin-hash matches the hash of its
# inputs (its directory under deploy/docker/standin/, the base image, the
# jars' names) is not rebuilt. Builds use the host's network (docker build
# --network host: apt-get reaches the Debian mirror as the host does); the
# image a rebuild replaces is removed.
set -euo pipefail

PROG=standin-images.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
log() { printf 'ts=%s level=info prog=%s %s\n' "$(date -u +%FT%TZ)" "$PROG" "$*" >&2; }
die() {
    printf 'ts=%s level=error prog=%s %s\n' "$(date -u +%FT%TZ)" "$PROG" "$*" >&2
    exit 1
}

which=()
for a in "$@"; do
    case $a in
        kafka | mariadb) which+=("$a") ;;
        -h | --help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "usage: deploy/docker/standin-images.sh [kafka] [mariadb]" >&2; exit 2 ;;
    esac
done
((${#which[@]})) || which=(kafka mariadb)

base=$(docker image inspect -f '{{.Id}}' debian:bookworm-slim 2>/dev/null) ||
    die "event=no_base image=debian:bookworm-slim msg=\"run deploy/docker/base-images.sh (or docker pull it)\""

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT

for name in "${which[@]}"; do
    image=kdelay-standin-$name:local
    rm -rf "${ctx:?}"/*
    cp -a "$here/standin/$name/." "$ctx/"
    jars=""
    if [[ $name == kafka ]]; then
        libs=$("$here/../local/stack.sh" kafka-jars) || die "event=no_kafka_jars"
        mkdir "$ctx/rootfs/opt/kafka/libs"
        cp -a "$libs"/*.jar "$ctx/rootfs/opt/kafka/libs/"
        jars=$(cd "$ctx/rootfs/opt/kafka/libs" && ls)
    fi
    hash=$({ cd "$here/standin/$name" && find . -type f -print0 | sort -z | xargs -0 sha256sum; } |
        { cat; printf '%s\n%s\n' "$base" "$jars"; } | sha256sum)
    hash=${hash:0:16}
    have=$(docker image inspect -f '{{index .Config.Labels "io.kdelay.standin-hash"}}' "$image" 2>/dev/null || true)
    if [[ $have == "$hash" ]]; then
        log "event=present image=$image hash=$hash"
        continue
    fi
    log "event=build image=$image hash=$hash"
    old=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
    start=$SECONDS
    out=$ctx.log
    if ! docker build --network host --label "io.kdelay.standin-hash=$hash" -t "$image" "$ctx" >"$out" 2>&1; then
        tail -n 30 "$out" >&2
        rm -f "$out"
        die "event=build_failed image=$image"
    fi
    rm -f "$out"
    if [[ -n $old && $old != "$(docker image inspect -f '{{.Id}}' "$image")" ]]; then
        docker rmi "$old" >/dev/null 2>&1 || true
    fi
    log "event=built image=$image seconds=$((SECONDS - start))"
done
