#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The stand-in Kafka's start (deploy/docker/standin/kafka/Dockerfile): the
# KAFKA_* environment becomes /opt/kafka/config/server.properties as in
# the official apache/kafka image (prefix dropped, lower case, ___ -> -,
# __ -> _, _ -> .; the JVM variables below are not properties), the
# storage is formatted once, then the broker runs in the foreground.
set -eu
props=/opt/kafka/config/server.properties
{
    echo "# written by /etc/kafka/docker/run from the KAFKA_* environment"
    echo "log.dirs=/var/lib/kafka/data"
    env | sed -n 's/^KAFKA_\([A-Z0-9_]*\)=\(.*\)$/\1 \2/p' | while read -r name value; do
        case $name in
            HEAP_OPTS | OPTS | JVM_PERFORMANCE_OPTS | LOG4J_OPTS | JMX_OPTS | GC_LOG_OPTS | VERSION) continue ;;
        esac
        key=$(printf '%s' "$name" | tr 'A-Z' 'a-z' | sed 's/___/-/g; s/__/@/g; s/_/./g; s/@/_/g')
        echo "$key=$value"
    done
} >"$props"
cp="/opt/kafka/libs/*"
if [ ! -f /var/lib/kafka/data/meta.properties ]; then
    java -cp "$cp" -Dlog4j2.configurationFile=file:/opt/kafka/config/tools-log4j2.properties \
        kafka.tools.StorageTool format -t "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" -c "$props" >/dev/null
fi
# shellcheck disable=SC2086 # the option variables hold several words
exec java ${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m} \
    ${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true} \
    ${KAFKA_OPTS:-} -Dlog4j2.configurationFile=file:/opt/kafka/config/log4j2.properties \
    -cp "$cp" kafka.Kafka "$props"
