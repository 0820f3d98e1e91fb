# SPDX-License-Identifier: Apache-2.0
# kafka-security.sh - sourced by deploy/local/stack.sh: a secured Kafka
# (--security sasl_ssl|mtls). Not a program of its own.
#
# What it makes, once per stack dir, in <stack-dir>/kafka-tls/ (0700):
#   ca.pem, ca.key              a private CA (openssl)
#   broker.pem                  the broker's key and certificate (CN=broker,
#                               SAN IP:127.0.0.1, DNS:localhost), a PEM
#                               key store for Kafka (ssl.keystore.type=PEM)
#   client-P.pem, client-P.key  a client certificate (CN=P) and its key
#                               (0600) for each principal P: admin,
#                               forwarder, producer
#   password-P                  sasl_ssl: P's SCRAM-SHA-512 password (0600),
#                               random; the users are created when the
#                               storage is formatted (StorageTool --add-scram)
#   client-P.properties         librdkafka properties (name=value lines) of
#                               P, passwords by reference (file:PATH), for
#                               kdelay's -X / kafka = [...] / --kafka-config
#   admin.properties            the admin's librdkafka properties with the
#                               password inline (0600): a client properties
#                               file any librdkafka client takes as is
#                               (kcat -F, confluent-kafka-python, kdelay's
#                               --kafka-config); 'stack.sh env' names it
#   admin-java.properties       the admin's for Kafka's Java tools
#                               (--command-config; 0600)
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
#
# Uses from stack.sh: STACK_DIR, KAFKA_PORT, CONTROLLER_PORT, KAFKA_DATA,
# KAFKA_SECURITY, log, die, need_cmd, show_log_tail, kafka_major.

KSEC_DIR=$STACK_DIR/kafka-tls
KSEC_PRINCIPALS=(admin forwarder producer)
KSEC_MODE_FILE=$KAFKA_DATA/.kdelay-kafka-security

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

# The CA, the broker's and the clients' certificates, the SCRAM passwords
# and the clients' property files (what is missing of them).
ksec_make() {
    [[ ! -f $KAFKA_DATA/meta.properties ]] || ksec_check_data
    ksec_on || return 0
    ksec_check_scram
    local openssl p
    need_cmd openssl "openssl (package openssl)" openssl
    mkdir -p "$KSEC_DIR"
    chmod 700 "$KSEC_DIR"
    if [[ ! -f $KSEC_DIR/broker.pem ]]; then
        log "making a private CA and Kafka certificates (broker, ${KSEC_PRINCIPALS[*]}) in $KSEC_DIR"
        (
            cd "$KSEC_DIR"
            umask 077
            "$openssl" req -x509 -newkey rsa:2048 -nodes -days 3650 \
                -subj "/CN=kdelay stack Kafka CA" -keyout ca.key -out ca.pem
            # ext: SAN for the broker; clientAuth too, since the broker is
            # the controller listener's client
            printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' \
                'basicConstraints=CA:FALSE' 'extendedKeyUsage=serverAuth,clientAuth' >broker.ext
            printf '%s\n' 'basicConstraints=CA:FALSE' 'extendedKeyUsage=clientAuth' >client.ext
            for p in broker "${KSEC_PRINCIPALS[@]}"; do
                local name=client-$p ext=client.ext
                [[ $p != broker ]] || { name=broker; ext=broker.ext; }
                "$openssl" req -newkey rsa:2048 -nodes -subj "/CN=$p" \
                    -keyout "$name.key" -out "$name.csr"
                "$openssl" x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key \
                    -CAcreateserial -days 3650 -extfile "$ext" -out "$name.crt"
                rm -f "$name.csr"
            done
            # Kafka's PEM key store: the (unencrypted PKCS#8) key, then the
            # certificate
            cat broker.key broker.crt >broker.pem
            cat client-admin.key client-admin.crt >client-admin-keystore.pem
            for p in "${KSEC_PRINCIPALS[@]}"; do mv "client-$p.crt" "client-$p.pem"; done
            chmod 644 ca.pem client-*.pem
            chmod 600 ./*.key broker.pem client-admin-keystore.pem
        ) >"$STACK_DIR/kafka-tls.log" 2>&1 ||
            { show_log_tail "$STACK_DIR/kafka-tls.log"; die "openssl failed (log: $STACK_DIR/kafka-tls.log)"; }
    fi
    for p in "${KSEC_PRINCIPALS[@]}"; do
        if [[ ! -s $KSEC_DIR/password-$p ]]; then
            (umask 077; "$openssl" rand -hex 24 >"$KSEC_DIR/password-$p")
        fi
    done
    ksec_write_client_props
}

# client-P.properties: what a kdelay binary (or any librdkafka client
# resolving file: itself) needs to connect as P.
ksec_client_props() { # principal [literal]
    local p=$1 literal=${2:-}
    printf '# written by stack.sh: librdkafka properties of Kafka principal %s (%s)\n' "$p" "$KAFKA_SECURITY"
    if [[ $KAFKA_SECURITY == sasl_ssl ]]; then
        printf 'security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=%s\n' "$p"
        if [[ -n $literal ]]; then
            printf 'sasl.password=%s\n' "$(<"$KSEC_DIR/password-$p")"
        else
            printf 'sasl.password=file:%s\n' "$KSEC_DIR/password-$p"
        fi
        printf 'ssl.ca.location=%s\n' "$KSEC_DIR/ca.pem"
    else
        printf 'security.protocol=SSL\nssl.ca.location=%s\n' "$KSEC_DIR/ca.pem"
        printf 'ssl.certificate.location=%s\nssl.key.location=%s\n' \
            "$KSEC_DIR/client-$p.pem" "$KSEC_DIR/client-$p.key"
    fi
}

ksec_write_client_props() {
    local p old_umask
    old_umask=$(umask)
    umask 077
    for p in "${KSEC_PRINCIPALS[@]}"; do
        ksec_client_props "$p" >"$KSEC_DIR/client-$p.properties"
    done
    ksec_client_props admin literal >"$KSEC_DIR/admin.properties"
    rm -f "$KSEC_DIR/kcat-admin.properties" # its name before
    {
        printf '# written by stack.sh: Kafka principal admin for the Java tools (--command-config)\n'
        printf 'ssl.truststore.type=PEM\nssl.truststore.location=%s\n' "$KSEC_DIR/ca.pem"
        if [[ $KAFKA_SECURITY == sasl_ssl ]]; then
            printf 'security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n'
            printf 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="%s";\n' \
                "$(<"$KSEC_DIR/password-admin")"
        else
            printf 'security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location=%s\n' \
                "$KSEC_DIR/client-admin-keystore.pem"
        fi
    } >"$KSEC_DIR/admin-java.properties"
    umask "$old_umask"
}

# Lines appended to server.properties: they override the PLAINTEXT
# listeners written before them (a properties file's last value wins).
ksec_broker_props() {
    ksec_on || return 0
    local proto=SASL_SSL
    [[ $KAFKA_SECURITY == sasl_ssl ]] || proto=SSL
    cat <<EOF

# --security $KAFKA_SECURITY (deploy/local/kafka-security.sh): these
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

# stack.sh acl ARGS...: Kafka's AclCommand as admin.
cmd_acl() {
    ksec_on || die "acl needs a secured stack (--security sasl_ssl or mtls); this one runs '$KAFKA_SECURITY'"
    need_cmd JAVA "java (package openjdk-17-jre-headless)" "${JAVA_HOME:+$JAVA_HOME/bin/}java"
    ensure_kafka_jars
    write_log4j_tools
    local cls=kafka.admin.AclCommand
    (($(kafka_major) < 4)) || cls=org.apache.kafka.tools.AclCommand
    local -a extra
    mapfile -t extra < <(ksec_java_args)
    "$JAVA" -cp "$KAFKA_LIBS/*" "$(log4j_opt tools)" "$cls" \
        --bootstrap-server "$BROKERS" "${extra[@]}" "$@" ||
        die "kafka-acls $* failed"
}
