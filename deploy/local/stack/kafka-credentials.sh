# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/kafka-credentials.sh - sourced by deploy/local/stack.sh: a secured
# Kafka's (--security sasl_ssl|mtls, stack/kafka-security.sh) private CA,
# certificates, SCRAM passwords and client property files. Not a program of
# its own.
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
