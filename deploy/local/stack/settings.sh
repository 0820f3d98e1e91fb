# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/settings.sh - sourced by deploy/local/stack.sh: the settings, each
# from its option (cli_*), its environment variable, <stack-dir>/stack.conf
# (the last start's) or its default, checked; and writing stack.conf. Not a
# program of its own.

KAFKA_READY_TIMEOUT=${KDELAY_KAFKA_READY_TIMEOUT:-90}
MYSQL_READY_TIMEOUT=${KDELAY_MYSQL_READY_TIMEOUT:-60}
# The private MariaDB's redo log: small for the tests' many stacks; the
# benchmark gives it MariaDB's own default, 96M (scripts/bench.sh).
MYSQL_REDO_LOG=${KDELAY_MYSQL_REDO_LOG:-16M}
STOP_TIMEOUT=${KDELAY_STOP_TIMEOUT:-60}
POLL=0.2
MYSQL_DB=kdelay

SAVED_KAFKA_PORT=""
SAVED_KAFKA_VERSION=""
SAVED_KAFKA_NODES=""
SAVED_MYSQL_PORT=""
SAVED_MYSQL_URL_EXTERNAL=""
SAVED_MYSQL_TLS=""
SAVED_MYSQL_GENERAL_LOG=""
SAVED_KAFKA_SECURITY=""

resolve_settings() { # every setting, in this order (the first bad one fails)
    local i
    resolve_stack_dir
    load_saved_settings
    resolve_kafka_settings
    resolve_mysql_settings
    resolve_kafka_security
    check_ports
    BROKERS=127.0.0.1:$KAFKA_PORT
    for ((i = 1; i < KAFKA_NODES; i++)); do BROKERS+=,127.0.0.1:$((KAFKA_PORT + 2 * i)); done
}

resolve_stack_dir() { # STACK_DIR (absolute), CONF, MARKER
    STACK_DIR=${cli_stack_dir:-${KDELAY_STACK_DIR:-$REPO_ROOT/.stack}}
    [[ $STACK_DIR == /* ]] || STACK_DIR=$PWD/$STACK_DIR
    STACK_DIR=${STACK_DIR%/}
    [[ -n $STACK_DIR ]] || die "the stack directory must not be /"
    CONF=$STACK_DIR/stack.conf
    MARKER=$STACK_DIR/.kdelay-stack
}

load_saved_settings() { # SAVED_*: stack.conf's
    if [[ -f $CONF ]]; then
        # shellcheck source=/dev/null
        source "$CONF"
    fi
}

resolve_kafka_settings() {
    KAFKA_PORT=${cli_kafka_port:-${KDELAY_KAFKA_PORT:-${SAVED_KAFKA_PORT:-19092}}}
    # The broker's version: the option, the environment, the last start's, or
    # the default (pom.xml's kafka.version).
    KAFKA_VERSION=${cli_kafka_version:-${KDELAY_KAFKA_VERSION:-${SAVED_KAFKA_VERSION:-}}}
    [[ -z $KAFKA_VERSION || $KAFKA_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
        die "bad Kafka version '$KAFKA_VERSION' (want MAJOR.MINOR.PATCH, e.g. 4.1.1)"
    KAFKA_NODES=${cli_nodes:-${KDELAY_KAFKA_NODES:-${SAVED_KAFKA_NODES:-1}}}
    [[ $KAFKA_NODES == 1 || $KAFKA_NODES == 3 ]] || die "--nodes must be 1 or 3 (got '$KAFKA_NODES')"
}

resolve_mysql_settings() {
    MYSQL_PORT=${cli_mysql_port:-${KDELAY_MYSQL_PORT:-${SAVED_MYSQL_PORT:-13306}}}
    if ((cli_mysql_url_set)); then
        MYSQL_URL_EXTERNAL=$cli_mysql_url
    elif [[ -n ${KDELAY_MYSQL_URL_EXTERNAL+set} ]]; then
        MYSQL_URL_EXTERNAL=$KDELAY_MYSQL_URL_EXTERNAL
    else
        MYSQL_URL_EXTERNAL=$SAVED_MYSQL_URL_EXTERNAL
    fi
    MYSQL_TLS=${cli_mysql_tls:-${KDELAY_MYSQL_TLS:-${SAVED_MYSQL_TLS:-off}}}
    # The general log, kept across restarts (a test that stops MariaDB); set
    # but empty: off.
    MYSQL_GENERAL_LOG=${KDELAY_MYSQL_GENERAL_LOG-$SAVED_MYSQL_GENERAL_LOG}
    [[ $MYSQL_TLS == on || $MYSQL_TLS == off ]] || die "--mysql-tls must be on or off (got '$MYSQL_TLS')"
}

resolve_kafka_security() {
    KAFKA_SECURITY=${cli_security:-${KDELAY_KAFKA_SECURITY:-${SAVED_KAFKA_SECURITY:-none}}}
    # stack/kafka-security.sh configures one node's listeners and certificates.
    [[ $KAFKA_SECURITY == none || $KAFKA_NODES == 1 ]] ||
        die "--security $KAFKA_SECURITY runs on one Kafka node only (not --nodes $KAFKA_NODES)"
}

check_port() { # name value
    if ! [[ $2 =~ ^[0-9]+$ ]] || (($2 < 1024 || $2 > 65534)); then
        die "$1 must be a number between 1024 and 65534 (got '$2')"
    fi
}

check_ports() { # in range, and MySQL's apart from Kafka's; CONTROLLER_PORT
    check_port "Kafka port" "$KAFKA_PORT"
    check_port "MySQL port" "$MYSQL_PORT"
    # Node I listens on KAFKA_PORT+2*I (clients) and the port after (controller).
    KAFKA_LAST_PORT=$((KAFKA_PORT + 2 * KAFKA_NODES - 1))
    check_port "Kafka's last port" "$KAFKA_LAST_PORT"
    CONTROLLER_PORT=$((KAFKA_PORT + 1))
    if ((KAFKA_NODES == 1)); then
        [[ -n $MYSQL_URL_EXTERNAL ]] || ((MYSQL_PORT != KAFKA_PORT && MYSQL_PORT != CONTROLLER_PORT)) ||
            die "MySQL port $MYSQL_PORT collides with the Kafka ports $KAFKA_PORT/$CONTROLLER_PORT"
    else
        [[ -n $MYSQL_URL_EXTERNAL ]] || ((MYSQL_PORT < KAFKA_PORT || MYSQL_PORT > KAFKA_LAST_PORT)) ||
            die "MySQL port $MYSQL_PORT collides with the Kafka ports $KAFKA_PORT-$KAFKA_LAST_PORT"
    fi
}

save_conf() {
    local tmp=$CONF.tmp old_umask
    old_umask=$(umask)
    umask 077 # the external URL may contain a password
    {
        printf '# written by stack.sh; settings of the last start\n'
        printf 'SAVED_KAFKA_PORT=%q\n' "$KAFKA_PORT"
        printf 'SAVED_KAFKA_VERSION=%q\n' "$(kafka_version)"
        printf 'SAVED_KAFKA_NODES=%q\n' "$KAFKA_NODES"
        printf 'SAVED_MYSQL_PORT=%q\n' "$MYSQL_PORT"
        printf 'SAVED_MYSQL_URL_EXTERNAL=%q\n' "$MYSQL_URL_EXTERNAL"
        printf 'SAVED_MYSQL_TLS=%q\n' "$MYSQL_TLS"
        printf 'SAVED_MYSQL_GENERAL_LOG=%q\n' "$MYSQL_GENERAL_LOG"
        printf 'SAVED_KAFKA_SECURITY=%q\n' "$KAFKA_SECURITY"
    } >"$tmp"
    umask "$old_umask"
    mv -f "$tmp" "$CONF"
}
