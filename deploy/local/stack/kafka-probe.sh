# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/kafka-probe.sh - sourced by deploy/local/stack.sh: asking Kafka (kcat
# metadata requests) whether it answers and how its ISRs are. Not a program
# of its own.

KCAT=""
find_kcat() {
    [[ -n $KCAT ]] || need_cmd KCAT "kcat (package kafkacat)" kcat kafkacat
}

# kafka_metadata ADDR: kcat's metadata listing from ADDR (as the admin on a
# secured stack); find_kcat first.
kafka_metadata() {
    local -a sec
    mapfile -t sec < <(ksec_kcat_args)
    "$KCAT" "${sec[@]}" -L -b "$1" -m 2 2>/dev/null
}

# kafka_answers [ADDR]: a metadata request to ADDR (default: every node) is
# answered with at least one broker, and with all KAFKA_NODES of them when
# there are several.
kafka_answers() {
    local out
    find_kcat
    out=$(kafka_metadata "${1:-$BROKERS}") || return 1
    [[ $out =~ [[:space:]]([1-9][0-9]*)\ brokers: ]] || return 1
    ((BASH_REMATCH[1] >= KAFKA_NODES))
}

# kafka_not_in_isr ADDR ID: prints how many partitions replicate on broker ID
# without ID in their ISR (metadata from ADDR); fails when ADDR does not answer.
kafka_not_in_isr() {
    local out
    find_kcat
    out=$(kafka_metadata "$1") || return 1
    # lines like "    partition 0, leader 1, replicas: 1,2,3, isrs: 1,2,3"
    awk -v id="$2" '
        / replicas: / {
            r = $0; sub(/.* replicas: /, "", r); sub(/, isrs:.*/, "", r)
            i = $0; sub(/.* isrs: /, "", i); sub(/[^0-9,].*/, "", i); sub(/,$/, "", i)
            if (("," r ",") ~ ("," id ",") && ("," i ",") !~ ("," id ",")) n++
        }
        END { print n + 0 }' <<<"$out"
}
