# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/verbs-kafka.sh - sourced by deploy/local/stack.sh: the verbs of Kafka
# alone: kafka-jars, kafka-start, kafka-stop, node-start, node-stop, topic and
# acl. Not a program of its own.

cmd_kafka_jars() {
    ensure_kafka_jars
    printf '%s\n' "$KAFKA_LIBS"
}

cmd_kafka_start() {
    init_stack_dir
    take_lock
    preflight_kafka
    save_conf
    kafka_launch_all
    # shellcheck disable=SC2046 # the node numbers, one a word
    kafka_wait $(all_nodes)
}

cmd_kafka_stop() {
    [[ -d $STACK_DIR ]] || { log "Kafka is not running"; return 0; }
    take_lock
    kafka_stop_all
}

node_arg() { # checks the node number I of node-start/node-stop and selects it
    ((KAFKA_NODES > 1)) || die "$verb needs a multi-node stack (--nodes 3)"
    ((verb_arg < KAFKA_NODES)) || die "no Kafka node $verb_arg (nodes 0..$((KAFKA_NODES - 1)))"
    select_node "$verb_arg"
}

cmd_node_start() {
    node_arg
    [[ -f $KAFKA_DATA/meta.properties ]] || die "$NODE_NAME has no data in $KAFKA_DATA: 'stack.sh up' first"
    take_lock
    preflight_node
    kafka_launch
    kafka_wait "$NODE"
    kafka_wait_isr
}

cmd_node_stop() {
    node_arg
    [[ -d $STACK_DIR ]] || { log "$NODE_NAME is not running"; return 0; }
    take_lock
    kafka_stop
}

kafka_tools_ready() { # java, the jars and the tools' log configuration
    need_cmd JAVA "java (package openjdk-17-jre-headless)" "${JAVA_HOME:+$JAVA_HOME/bin/}java"
    ensure_kafka_jars
    write_log4j_tools
}

# kafka_tool CLASS ARGS...: Kafka's Java tool CLASS against the stack
# (--bootstrap-server), as the admin on a secured stack; kafka_tools_ready
# first.
kafka_tool() {
    local cls=$1
    shift
    local -a sec
    mapfile -t sec < <(ksec_java_args)
    "$JAVA" -cp "$KAFKA_LIBS/*" "$(log4j_opt tools)" "$cls" \
        --bootstrap-server "$BROKERS" "${sec[@]}" "$@"
}

cmd_topic() {
    [[ $opt_partitions =~ ^[1-9][0-9]*$ ]] || die "--partitions must be a positive integer"
    kafka_tools_ready
    kafka_tool org.apache.kafka.tools.TopicCommand \
        --create --if-not-exists --topic "$verb_arg" \
        --partitions "$opt_partitions" --replication-factor "$KAFKA_RF" >&2 ||
        die "creating topic $verb_arg failed"
    log "topic $verb_arg exists ($BROKERS)"
}

# stack.sh acl ARGS...: Kafka's AclCommand as admin.
cmd_acl() {
    ksec_on || die "acl needs a secured stack (--security sasl_ssl or mtls); this one runs '$KAFKA_SECURITY'"
    kafka_tools_ready
    local cls=kafka.admin.AclCommand
    (($(kafka_major) < 4)) || cls=org.apache.kafka.tools.AclCommand
    kafka_tool "$cls" "$@" || die "kafka-acls $* failed"
}
