#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# kafka-console-consumer.sh of the stand-in Kafka image: Kafka's
# ConsoleConsumer, as the official image's script runs it.
exec java -Xmx256m -XX:TieredStopAtLevel=1 -Xshare:auto \
    -Dlog4j2.configurationFile=file:/opt/kafka/config/tools-log4j2.properties \
    -cp "/opt/kafka/libs/*" org.apache.kafka.tools.consumer.ConsoleConsumer "$@"
