# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/verbs-stack.sh - sourced by deploy/local/stack.sh: the verbs of the
# whole stack, up, down, status and env. Not a program of its own.

print_logs() {
    if ((KAFKA_NODES == 1)); then
        log "logs: Kafka  $KAFKA_LOG (JVM output: $KAFKA_STDOUT)"
    else
        log "logs: Kafka  $KAFKA_ROOT/node{0..$((KAFKA_NODES - 1))}/server.log (JVM output: stdout.log there)"
    fi
    if [[ -z $MYSQL_URL_EXTERNAL ]]; then
        log "      MariaDB $MYSQL_ERRLOG"
    fi
}

preflight_node() { # the selected node's ports are free unless it runs
    if ! kafka_pid >/dev/null; then
        ensure_port_free "$NODE_PORT" "$NODE_NAME"
        ensure_port_free "$NODE_CTRL_PORT" "$NODE_NAME controller"
    fi
}

preflight_kafka() { # every node
    local n
    check_layout
    for n in $(all_nodes); do
        select_node "$n"
        preflight_node
    done
}

preflight_mysql() {
    if [[ -n $MYSQL_URL_EXTERNAL ]]; then
        mysql_external_answers || die "external MySQL $(redact_url "$MYSQL_URL_EXTERNAL") does not answer"
    elif ! mysql_pid >/dev/null; then
        ensure_port_free "$MYSQL_PORT" "MariaDB"
    fi
}

cmd_up() {
    init_stack_dir
    take_lock
    # check all ports before starting anything
    preflight_kafka
    preflight_mysql
    save_conf
    # Kafka takes longest: launch it first, bring up MySQL meanwhile.
    kafka_launch_all
    mysql_start
    # shellcheck disable=SC2046 # the node numbers, one a word
    kafka_wait $(all_nodes)
    log "stack is up: KDELAY_BROKERS=$BROKERS KDELAY_MYSQL_URL=$(redact_url "$(mysql_url)")"
    print_logs
    log "for the tests: eval \"\$($SCRIPT_DIR/stack.sh env)\""
}

cmd_down() {
    if [[ ! -d $STACK_DIR ]]; then
        log "nothing to do: $STACK_DIR does not exist"
        return 0
    fi
    if [[ ! -e $MARKER ]]; then
        die "$STACK_DIR is not a kdelay stack directory (no $MARKER); refusing to touch it"
    fi
    take_lock
    # every node found, whatever --nodes says, so that nothing is left running
    KAFKA_NODES=$(kafka_layout)
    KAFKA_NODES=${KAFKA_NODES:-1}
    kafka_stop_all
    mysql_stop
    if ((opt_purge)); then
        log "deleting $STACK_DIR"
        rm -rf -- "$STACK_DIR"
    fi
    log "stack is down"
}

cmd_status() {
    local pid rc=0 n what=kafka
    for n in $(all_nodes); do
        select_node "$n"
        ((KAFKA_NODES == 1)) || what="kafka node $n"
        if pid=$(kafka_pid); then
            if port_open "$NODE_PORT" && kafka_answers "$NODE_ADDR"; then
                printf '%s: running (pid %s), answering on %s\n' "$what" "$pid" "$NODE_ADDR"
            else
                printf '%s: running (pid %s), NOT answering on %s\n' "$what" "$pid" "$NODE_ADDR"
                rc=3
            fi
        else
            printf '%s: stopped\n' "$what"
            rc=3
        fi
    done
    if [[ -n $MYSQL_URL_EXTERNAL ]]; then
        if mysql_external_answers; then
            printf 'mysql: external %s, answering\n' "$(redact_url "$MYSQL_URL_EXTERNAL")"
        else
            printf 'mysql: external %s, NOT answering\n' "$(redact_url "$MYSQL_URL_EXTERNAL")"
            rc=3
        fi
    elif pid=$(mysql_pid); then
        if mysql_answers; then
            printf 'mysql: running (pid %s), answering on 127.0.0.1:%s\n' "$pid" "$MYSQL_PORT"
        else
            printf 'mysql: running (pid %s), NOT answering on 127.0.0.1:%s\n' "$pid" "$MYSQL_PORT"
            rc=3
        fi
    else
        printf 'mysql: stopped\n'
        rc=3
    fi
    printf 'stack dir: %s\n' "$STACK_DIR"
    return "$rc"
}

# export NAME=value lines, each value quoted for the shell (printf %q),
# for eval "$(stack.sh env)": kdelayctl and kdelay-forwarder read
# KDELAY_BROKERS, KDELAY_MYSQL_URL and KDELAY_KAFKA_CONFIG themselves.
cmd_env() {
    printf 'export KDELAY_BROKERS=%q\n' "$BROKERS"
    printf 'export KDELAY_MYSQL_URL=%q\n' "$(mysql_url)"
    printf 'export KDELAY_STACK_DIR=%q\n' "$STACK_DIR"
    printf 'export KDELAY_KAFKA_VERSION=%q\n' "$(kafka_version)"
    printf 'export KDELAY_KAFKA_NODES=%q\n' "$KAFKA_NODES"
    if [[ -z $MYSQL_URL_EXTERNAL && $MYSQL_TLS == on ]]; then
        printf 'export KDELAY_MYSQL_CA=%q\n' "$TLS_DIR/ca.pem"
    fi
    ksec_env
}
