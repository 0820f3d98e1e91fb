# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/kafka-start.sh - sourced by deploy/local/stack.sh: formatting a node's
# storage, launching the nodes and waiting until they answer. Not a program
# of its own.

gen_cluster_id() { # 16 random bytes, URL-safe base64 without padding (Kafka Uuid format)
    local id
    while :; do
        id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
        [[ ${#id} -eq 22 && $id != -* && $id != AAAAAAAAAAAAAAAAAAAAA[AQ] ]] && break
    done
    printf '%s\n' "$id"
}

JAVA=""
kafka_prepare() {
    need_cmd JAVA "java (package openjdk-17-jre-headless)" "${JAVA_HOME:+$JAVA_HOME/bin/}java"
    find_kcat
    ensure_kafka_jars
    ksec_make
    write_kafka_config
    local have_version
    if [[ -f $KAFKA_DATA/meta.properties && -f $KAFKA_DATA/.kdelay-kafka-version ]]; then
        have_version=$(<"$KAFKA_DATA/.kdelay-kafka-version")
        [[ $have_version == "$(kafka_version)" ]] ||
            die "$KAFKA_DATA holds the data of Kafka $have_version, not $(kafka_version): 'stack.sh down --purge' first, or use another --stack-dir"
    fi
    if [[ ! -f $KAFKA_DATA/meta.properties ]]; then
        local id
        local -a scram
        mapfile -t scram < <(ksec_format_args)
        if ((KAFKA_NODES == 1)); then
            id=$(gen_cluster_id)
        else # the nodes of one cluster share its id
            [[ -s $KAFKA_ROOT/cluster.id ]] || gen_cluster_id >"$KAFKA_ROOT/cluster.id"
            id=$(<"$KAFKA_ROOT/cluster.id")
        fi
        log "formatting $NODE_NAME storage in $KAFKA_DATA (cluster id $id)"
        if ! "$JAVA" -cp "$KAFKA_LIBS/*" "$(log4j_opt tools)" \
            kafka.tools.StorageTool format -t "$id" -c "$KAFKA_PROPS" "${scram[@]}" >"$KAFKA_DIR/format.log" 2>&1; then
            show_log_tail "$KAFKA_DIR/format.log" "$KAFKA_LOG"
            die "formatting Kafka storage failed"
        fi
        kafka_version >"$KAFKA_DATA/.kdelay-kafka-version"
        ksec_formatted
    fi
}

# kafka_launch: start the selected node if needed, do not wait. Returns 0 if
# it is (being) started, sets KAFKA_LAUNCHED[node]=1 if we started it now.
declare -a KAFKA_LAUNCHED=()
kafka_launch() {
    local pid
    if pid=$(kafka_pid); then
        log "$NODE_NAME already running (pid $pid)"
        return 0
    fi
    ensure_port_free "$NODE_PORT" "$NODE_NAME"
    ensure_port_free "$NODE_CTRL_PORT" "$NODE_NAME controller"
    kafka_prepare
    local -a jvm_opts=(-Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20
        -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true
        "$(log4j_opt broker)")
    if [[ -n ${KDELAY_KAFKA_JAVA_OPTS:-} ]]; then
        local -a extra
        read -r -a extra <<<"$KDELAY_KAFKA_JAVA_OPTS"
        jvm_opts+=("${extra[@]}")
    fi
    if ((KAFKA_NODES == 1)); then
        log "starting Kafka on $BROKERS (controller 127.0.0.1:$CONTROLLER_PORT)"
    else
        log "starting $NODE_NAME (node.id $NODE_ID) on $NODE_ADDR (controller 127.0.0.1:$NODE_CTRL_PORT)"
    fi
    printf '\n===== %s starting kafka =====\n' "$(date '+%F %T')" >>"$KAFKA_STDOUT"
    launch "$KAFKA_PIDFILE" "$KAFKA_STDOUT" "kafka.Kafka $KAFKA_PROPS" "$JAVA" "${jvm_opts[@]}" -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_PROPS"
    KAFKA_LAUNCHED[NODE]=1
}

# kafka_wait NODE...: waits until each node answers a metadata request (on
# its own port) that lists every node; one deadline for all of them. A node
# we launched that does not answer in time is killed.
kafka_wait() {
    local deadline=$((SECONDS + KAFKA_READY_TIMEOUT)) pid n
    for n in "$@"; do
        select_node "$n"
        while :; do
            if ! pid=$(kafka_pid); then
                show_log_tail "$KAFKA_STDOUT" "$KAFKA_LOG"
                die "$NODE_NAME is not running (exited during startup?); logs: $KAFKA_LOG $KAFKA_STDOUT"
            fi
            if port_open "$NODE_PORT" && kafka_answers "$NODE_ADDR"; then
                if ((KAFKA_NODES == 1)); then
                    log "Kafka is up on $BROKERS (pid $pid)"
                else
                    log "$NODE_NAME is up on $NODE_ADDR (pid $pid), the cluster lists $KAFKA_NODES brokers"
                fi
                break
            fi
            if ((SECONDS >= deadline)); then
                show_log_tail "$KAFKA_STDOUT" "$KAFKA_LOG"
                if ((${KAFKA_LAUNCHED[NODE]:-0})); then
                    stop_proc "$NODE_NAME" "$pid" "kafka.Kafka $KAFKA_PROPS" 1 "$NODE_PORT" "$NODE_CTRL_PORT"
                    rm -f "$KAFKA_PIDFILE"
                    die "$NODE_NAME did not answer on $NODE_ADDR within ${KAFKA_READY_TIMEOUT}s; killed it"
                fi
                die "$NODE_NAME (pid $pid) does not answer on $NODE_ADDR within ${KAFKA_READY_TIMEOUT}s (started with another port? try 'stack.sh down' first)"
            fi
            sleep "$POLL"
        done
    done
}

# kafka_wait_isr: waits until the selected node is in the ISR of every
# partition it replicates (metadata from the node itself).
kafka_wait_isr() {
    local deadline=$((SECONDS + KAFKA_READY_TIMEOUT)) missing
    while :; do
        if missing=$(kafka_not_in_isr "$NODE_ADDR" "$NODE_ID") && ((missing == 0)); then
            log "$NODE_NAME (node.id $NODE_ID) is in the ISR of every partition it replicates"
            return 0
        fi
        ((SECONDS < deadline)) ||
            die "$NODE_NAME (node.id $NODE_ID) is not in the ISR of ${missing:-?} partitions after ${KAFKA_READY_TIMEOUT}s"
        sleep "$POLL"
    done
}

kafka_launch_all() {
    local n
    for n in $(all_nodes); do select_node "$n"; kafka_launch; done
}
