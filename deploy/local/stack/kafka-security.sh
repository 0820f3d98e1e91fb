# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/kafka-security.sh - sourced by deploy/local/stack.sh: a secured Kafka
# (--security sasl_ssl|mtls): the broker's settings, the data dir's mode,
# the admin's arguments for kcat and the Java tools, and what 'env' adds.
# The certificates and passwords: stack/kafka-credentials.sh. Not a program
# of its own.
#
# The broker: listener CLIENT on KAFKA_PORT (SASL_SSL with SCRAM-SHA-512,
# or SSL with ssl.client.auth=required for mtls), also the inter-broker
# listener; CONTROLLER on KAFKA_PORT+1 over SSL with client certificates
# (the broker's own). Principals: the SASL user name, or a certificate's
# CN (ssl.principal.mapping.rules), so User:admin, User:forwarder,
# User:producer, User:broker. StandardAuthorizer with
# allow.everyone.if.no.acl.found=false; super users User:admin and
# User:broker. Everybody else needs ACLs (stack.sh acl ...,
# docs/security.md).

KSEC_PRINCIPALS=(admin forwarder producer)

ksec_paths() { # after kafka_paths (node 0's data dir)
    KSEC_DIR=$STACK_DIR/kafka-tls
    KSEC_MODE_FILE=$KAFKA_DATA/.kdelay-kafka-security
}

ksec_on() { [[ $KAFKA_SECURITY != none ]]; }

ksec_check_mode() {
    case $KAFKA_SECURITY in
        none | sasl_ssl | mtls) ;;
        *) die "--security must be none, sasl_ssl or mtls (got '$KAFKA_SECURITY')" ;;
    esac
}

# librdkafka before 2.6.1 (kdelay builds against 2.0.2; kcat here links
# the same) sends the client nonce twice in its SCRAM client-final-message
# (confluentinc/librdkafka#4895). Kafka 3.8.1 to 3.9.x accept it (their
# nonce check is endsWith), Kafka 4.x checks strictly and answers
# "invalid credentials". So sasl_ssl on Kafka 4.x needs librdkafka 2.6.1.
ksec_check_scram() {
    [[ $KAFKA_SECURITY == sasl_ssl ]] && (($(kafka_major) >= 4)) || return 0
    local v
    v=$("$KCAT" -V 2>&1 | sed -n 's/.*librdkafka \([0-9][0-9.]*\).*/\1/p' | head -n 1)
    [[ -n $v ]] || return 0
    if [[ $(printf '%s\n2.6.1\n' "$v" | sort -V | head -n 1) != 2.6.1 ]]; then
        die "--security sasl_ssl on Kafka $(kafka_version): librdkafka $v (kcat's, and kdelay's) cannot log in with SCRAM to Kafka 4.x (a wrong nonce, fixed in librdkafka 2.6.1: confluentinc/librdkafka#4895); use --kafka-version 3.9.1, or --security mtls"
    fi
}

# Lines appended to server.properties: they override the PLAINTEXT
# listeners written before them (a properties file's last value wins).
ksec_broker_props() {
    ksec_on || return 0
    local proto=SASL_SSL
    [[ $KAFKA_SECURITY == sasl_ssl ]] || proto=SSL
    cat <<EOF

# --security $KAFKA_SECURITY (deploy/local/stack/kafka-security.sh): these
# override the listeners above.
listeners=CLIENT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=CLIENT://127.0.0.1:$KAFKA_PORT
inter.broker.listener.name=CLIENT
listener.security.protocol.map=CLIENT:$proto,CONTROLLER:SSL
ssl.keystore.type=PEM
ssl.keystore.location=$KSEC_DIR/broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$KSEC_DIR/ca.pem
# the broker reaches the controller with its own certificate (User:broker)
listener.name.controller.ssl.client.auth=required
ssl.principal.mapping.rules=RULE:^CN=([^,]+)(,.*)?\$/\$1/,DEFAULT
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:admin;User:broker
EOF
    if [[ $KAFKA_SECURITY == sasl_ssl ]]; then
        cat <<EOF
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.client.sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.client.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$(<"$KSEC_DIR/password-admin")";
EOF
    else
        printf 'listener.name.client.ssl.client.auth=required\n'
    fi
}

# A formatted data dir keeps its mode: the SCRAM users exist only when it
# was formatted with them.
ksec_check_data() {
    local have=none
    [[ ! -f $KSEC_MODE_FILE ]] || have=$(<"$KSEC_MODE_FILE")
    [[ $have == "$KAFKA_SECURITY" ]] ||
        die "$KAFKA_DATA was formatted for --security $have, not $KAFKA_SECURITY: 'stack.sh down --purge' first, or use another --stack-dir"
}

# StorageTool format's extra arguments (one a line): the SCRAM users.
# (Their passwords are on the format's command line for its second.)
ksec_format_args() {
    [[ $KAFKA_SECURITY == sasl_ssl ]] || return 0
    local p
    for p in "${KSEC_PRINCIPALS[@]}"; do
        printf '%s\n' --add-scram "SCRAM-SHA-512=[name=$p,password=$(<"$KSEC_DIR/password-$p")]"
    done
}

ksec_formatted() { printf '%s\n' "$KAFKA_SECURITY" >"$KSEC_MODE_FILE"; }

# kcat's and the Java tools' extra arguments (one a line) to connect as admin.
ksec_kcat_args() {
    ksec_on || return 0
    printf '%s\n' -F "$KSEC_DIR/admin.properties"
}
ksec_java_args() {
    ksec_on || return 0
    printf '%s\n' --command-config "$KSEC_DIR/admin-java.properties"
}

# stack.sh env: the admin's client properties (password inline), for
# kdelay's binaries (KDELAY_KAFKA_CONFIG) and the tests (KDELAY_CLIENT_CONFIG).
ksec_env() {
    printf 'export KDELAY_KAFKA_SECURITY=%q\n' "$KAFKA_SECURITY"
    ksec_on || return 0
    printf 'export KDELAY_CLIENT_CONFIG=%q\n' "$KSEC_DIR/admin.properties"
    printf 'export KDELAY_KAFKA_CONFIG=%q\n' "$KSEC_DIR/admin.properties"
}
