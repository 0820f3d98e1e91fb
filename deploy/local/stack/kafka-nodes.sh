# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/kafka-nodes.sh - sourced by deploy/local/stack.sh: the Kafka nodes of
# the stack (one, or three with --nodes 3), their ports and files, and the
# node count of the data in the stack dir. Not a program of its own.

kafka_paths() { # after resolve_settings: the files of every node; selects node 0
    KAFKA_ROOT=$STACK_DIR/kafka
    LOG4J2_TOOLS_PROPS=$KAFKA_ROOT/log4j2-tools.properties
    LOG4J_TOOLS_PROPS=$KAFKA_ROOT/log4j-tools.properties
    # Every node replicates every partition: replication factor KAFKA_NODES, and
    # with several nodes a write needs two of them (acks=all).
    KAFKA_RF=$KAFKA_NODES
    KAFKA_MIN_ISR=$((KAFKA_NODES > 1 ? 2 : 1))
    select_node 0
}

# select_node I: points the per-node variables (NODE_*, KAFKA_DIR,
# KAFKA_DATA, KAFKA_PROPS, KAFKA_LOG, KAFKA_STDOUT, KAFKA_PIDFILE,
# LOG4J_PROPS, LOG4J2_PROPS) at Kafka node I. A single-node stack's only node
# keeps its files directly in <stack-dir>/kafka.
select_node() {
    NODE=$1
    NODE_ID=$((NODE + 1))
    NODE_PORT=$((KAFKA_PORT + 2 * NODE))
    NODE_CTRL_PORT=$((NODE_PORT + 1))
    NODE_ADDR=127.0.0.1:$NODE_PORT
    if ((KAFKA_NODES == 1)); then
        NODE_NAME=Kafka
        KAFKA_DIR=$KAFKA_ROOT
        LOG4J_PROPS=$STACK_DIR/log4j.properties
        LOG4J2_PROPS=$STACK_DIR/log4j2.properties
    else
        NODE_NAME="Kafka node $NODE"
        KAFKA_DIR=$KAFKA_ROOT/node$NODE
        LOG4J_PROPS=$KAFKA_DIR/log4j.properties
        LOG4J2_PROPS=$KAFKA_DIR/log4j2.properties
    fi
    KAFKA_DATA=$KAFKA_DIR/data
    KAFKA_PROPS=$KAFKA_DIR/server.properties
    KAFKA_LOG=$KAFKA_DIR/server.log
    KAFKA_STDOUT=$KAFKA_DIR/stdout.log
    KAFKA_PIDFILE=$KAFKA_DIR/kafka.pid
}

all_nodes() { # 0 .. KAFKA_NODES-1
    local i
    for ((i = 0; i < KAFKA_NODES; i++)); do printf '%s\n' "$i"; done
}

kafka_pid() { proc_pid "$KAFKA_PIDFILE" "kafka.Kafka $KAFKA_PROPS"; }


# kafka_layout: the node count of the Kafka data in the stack dir (empty when
# it has none): 1 for <stack-dir>/kafka/data, else its nodeI directories.
kafka_layout() {
    local d n=0
    if [[ -d $KAFKA_ROOT/data ]]; then
        printf '1\n'
        return
    fi
    for d in "$KAFKA_ROOT"/node*/data; do [[ -d $d ]] && n=$((n + 1)); done
    ((n == 0)) || printf '%s\n' "$n"
}

# check_layout: refuses a stack dir whose Kafka data is of another node count.
check_layout() {
    local have
    have=$(kafka_layout)
    [[ -z $have || $have == "$KAFKA_NODES" ]] ||
        die "$STACK_DIR holds the data of a $have-node Kafka, not $KAFKA_NODES: use --nodes $have, or 'stack.sh down --purge' first"
}
