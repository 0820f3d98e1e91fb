#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# stack.sh - local dev/test stack for kdelay: a single-node KRaft Apache Kafka
# broker (or a cluster of three, --nodes 3) and a private MariaDB instance, all
# bound to 127.0.0.1 and keeping all their state under one directory (default
# <repo>/.stack).
#
# Run 'deploy/local/stack.sh --help' for usage.
#
# The one command; its parts, each sourced once below, are in
# deploy/local/stack/: the command line (args.sh, usage.sh), the settings
# (settings.sh), processes and ports (processes.sh), Kafka (kafka-*.sh: nodes,
# jars, configuration, start, stop, and --security), MariaDB (mysql-*.sh:
# the private instance, --mysql-tls, --mysql-url) and the verbs (verbs-*.sh).
# shellcheck source-path=SCRIPTDIR # the parts: source "$SCRIPT_DIR/stack/..."
set -Eeuo pipefail

PROG=stack.sh
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd -P)

source "$SCRIPT_DIR/stack/common.sh"
trap 'rc=$?; log "error: unexpected failure (exit $rc) at ${BASH_SOURCE[0]#"$SCRIPT_DIR/"} line $LINENO: $BASH_COMMAND"' ERR
source "$SCRIPT_DIR/stack/usage.sh"
source "$SCRIPT_DIR/stack/args.sh"
source "$SCRIPT_DIR/stack/settings.sh"
source "$SCRIPT_DIR/stack/processes.sh"
source "$SCRIPT_DIR/stack/kafka-nodes.sh"
source "$SCRIPT_DIR/stack/kafka-jars.sh"
source "$SCRIPT_DIR/stack/kafka-log4j.sh"
source "$SCRIPT_DIR/stack/kafka-config.sh"
source "$SCRIPT_DIR/stack/kafka-probe.sh"
source "$SCRIPT_DIR/stack/kafka-credentials.sh"
source "$SCRIPT_DIR/stack/kafka-security.sh"
source "$SCRIPT_DIR/stack/kafka-start.sh"
source "$SCRIPT_DIR/stack/kafka-stop.sh"
source "$SCRIPT_DIR/stack/mysql-private.sh"
source "$SCRIPT_DIR/stack/mysql-tls.sh"
source "$SCRIPT_DIR/stack/mysql-external.sh"
source "$SCRIPT_DIR/stack/verbs-stack.sh"
source "$SCRIPT_DIR/stack/verbs-kafka.sh"
source "$SCRIPT_DIR/stack/verbs-mysql.sh"

parse_args "$@"
check_verb
resolve_settings
kafka_paths
mysql_paths
ksec_paths
ksec_check_mode

case $verb in
    down | mysql-* | kafka-jars) ;;
    *) check_layout ;;
esac

case $verb in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status || exit $? ;;
    env) cmd_env ;;
    kafka-jars) cmd_kafka_jars ;;
    kafka-start) cmd_kafka_start ;;
    kafka-stop) cmd_kafka_stop ;;
    node-start) cmd_node_start ;;
    node-stop) cmd_node_stop ;;
    topic) cmd_topic ;;
    acl) cmd_acl "${acl_args[@]}" ;;
    mysql-start) cmd_mysql_start ;;
    mysql-stop) cmd_mysql_stop ;;
    mysql-readonly) cmd_mysql_readonly ;;
    mysql-pause | mysql-resume) cmd_mysql_pause_resume ;;
esac
