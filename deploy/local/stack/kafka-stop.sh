# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/kafka-stop.sh - sourced by deploy/local/stack.sh: stopping one Kafka
# node or all of them. Not a program of its own.

kafka_stop() { # the selected node
    local pid
    if ! pid=$(kafka_pid); then
        log "$NODE_NAME is not running"
        rm -f "$KAFKA_PIDFILE"
        return 0
    fi
    stop_proc "$NODE_NAME" "$pid" "kafka.Kafka $KAFKA_PROPS" "$opt_kill" "$NODE_PORT" "$NODE_CTRL_PORT"
    rm -f "$KAFKA_PIDFILE"
}

# kafka_stop_all: every node. Several nodes get their signal at once: one
# stopped after the others could not finish its controlled shutdown without
# a controller quorum, and would wait for its SIGKILL.
kafka_stop_all() {
    local n
    local -a pids=()
    if ((KAFKA_NODES == 1)); then
        kafka_stop
        return
    fi
    for n in $(all_nodes); do
        select_node "$n"
        if pids[n]=$(kafka_pid); then
            kill "-$( ((opt_kill)) && echo KILL || echo TERM)" "${pids[n]}" 2>/dev/null || true
        fi
    done
    for n in $(all_nodes); do
        select_node "$n"
        if [[ -n ${pids[n]:-} ]]; then
            stop_proc "$NODE_NAME" "${pids[n]}" "kafka.Kafka $KAFKA_PROPS" "$opt_kill" "$NODE_PORT" "$NODE_CTRL_PORT"
        else
            log "$NODE_NAME is not running"
        fi
        rm -f "$KAFKA_PIDFILE"
    done
}
