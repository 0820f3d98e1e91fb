#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# kafka-topics.sh of the stand-in Kafka image: Kafka's TopicCommand, as
# the official image's /opt/kafka/bin/kafka-topics.sh runs it.
exec java -Xmx256m -XX:TieredStopAtLevel=1 -Xshare:auto \
    -Dlog4j2.configurationFile=file:/opt/kafka/config/tools-log4j2.properties \
    -cp "/opt/kafka/libs/*" org.apache.kafka.tools.TopicCommand "$@"
