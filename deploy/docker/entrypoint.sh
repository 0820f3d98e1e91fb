#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# kdelay-entrypoint - the container's entrypoint (deploy/docker/Dockerfile).
#
#   kdelay-entrypoint [forwarder] [ARGS...]   runs kdelay-forwarder
#   kdelay-entrypoint kdelayctl VERB [ARGS...] runs kdelayctl
#   kdelay-entrypoint init                     topics create + db migrate
#     (topics create makes what its Kafka principal may create and checks
#     the rest: as the forwarder's principal it exits 1 naming a missing
#     topic and the ACL it lacks, 0 when all that forwarder.fate_outage_
#     policy needs exists; db migrate on a current schema needs only SELECT
#     on kdelay_schema. docs/security.md, "ACLs per principal".)
#
# Configuration: the mounted file $KDELAY_CONFIG (default
# /etc/kdelay/kdelay.conf, when it exists), then these variables, then ARGS.
# Read by the binaries themselves (docs/configuration.md):
#   KDELAY_CONFIG       -c
#   KDELAY_BROKERS      --brokers
#   KDELAY_MYSQL_URL    --mysql (no password in it: see below)
#   KDELAY_KAFKA_CONFIG --kafka-config (Kafka client properties file)
# Turned into options here:
#   KDELAY_INSTANCE     forwarder.instance (default: the host name, which a
#                       StatefulSet or compose keeps stable)
#   KDELAY_HTTP_LISTEN  forwarder.http_listen (default 0.0.0.0:9464)
#   KDELAY_DELIVERY     forwarder.delivery
#   KDELAY_TOPIC_PREFIX topic_prefix
# Passwords: KDELAY_MYSQL_PASSWORD (read by kdelay itself, never put on a
# command line), or -X mysql.password=file:/run/secrets/... (mode 0400).
# KDELAY_ENTRYPOINT_DRY_RUN=1 prints the command instead of running it.
set -eu

bindir=${KDELAY_BINDIR:-/usr/local/bin}
mode=forwarder
case ${1:-} in
    forwarder) shift ;;
    kdelayctl | init) mode=$1; shift ;;
esac

set_common() { # the options both binaries take, before ARGS (which win)
    common=""
    [ -n "${KDELAY_TOPIC_PREFIX:-}" ] && common="$common -X topic_prefix=$KDELAY_TOPIC_PREFIX"
    return 0
}

run() {
    if [ -n "${KDELAY_ENTRYPOINT_DRY_RUN:-}" ]; then
        echo "$*"
        return 0
    fi
    "$@"
}

set_common
case $mode in
    forwarder)
        instance=${KDELAY_INSTANCE:-$(hostname)}
        # shellcheck disable=SC2086 # word splitting of the options is meant
        if [ -n "${KDELAY_ENTRYPOINT_DRY_RUN:-}" ]; then
            run "$bindir/kdelay-forwarder" $common -X "forwarder.instance=$instance" \
                -X "forwarder.http_listen=${KDELAY_HTTP_LISTEN:-0.0.0.0:9464}" \
                ${KDELAY_DELIVERY:+-X forwarder.delivery=$KDELAY_DELIVERY} "$@"
        else
            exec "$bindir/kdelay-forwarder" $common -X "forwarder.instance=$instance" \
                -X "forwarder.http_listen=${KDELAY_HTTP_LISTEN:-0.0.0.0:9464}" \
                ${KDELAY_DELIVERY:+-X forwarder.delivery=$KDELAY_DELIVERY} "$@"
        fi
        ;;
    kdelayctl)
        verb=${1:?kdelayctl needs a verb}
        shift
        # shellcheck disable=SC2086
        run "$bindir/kdelayctl" $common "$verb" "$@"
        ;;
    init)
        # shellcheck disable=SC2086
        run "$bindir/kdelayctl" topics create $common "$@"
        # shellcheck disable=SC2086
        run "$bindir/kdelayctl" db migrate $common
        ;;
esac
