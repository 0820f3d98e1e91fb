# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/mysql-tls.sh - sourced by deploy/local/stack.sh: --mysql-tls on, the
# private MariaDB's certificates (openssl, <stack-dir>/tls/) and its
# clients' TLS options. Not a program of its own.

# TLS options of the clients over TCP: what the product uses with --mysql-tls on
mysql_tcp_tls_args() {
    [[ $MYSQL_TLS == on ]] && printf '%s\n' --ssl "--ssl-ca=$TLS_DIR/ca.pem" --ssl-verify-server-cert
    return 0
}

# A private CA and a server certificate for 127.0.0.1/localhost (once per
# stack dir), and a second, unrelated CA the tests use as a wrong one.
mysql_tls_make() {
    [[ -f $TLS_DIR/mysql-server.pem && -f $TLS_DIR/other-ca.pem ]] && return 0
    local openssl
    need_cmd openssl "openssl (package openssl)" openssl
    log "making a private CA and a MariaDB server certificate in $TLS_DIR"
    mkdir -p "$TLS_DIR"
    chmod 700 "$TLS_DIR"
    (
        cd "$TLS_DIR"
        umask 077
        "$openssl" req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kdelay stack CA" \
            -keyout ca.key -out ca.pem
        "$openssl" req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kdelay other CA" \
            -keyout other-ca.key -out other-ca.pem
        "$openssl" req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
            -keyout mysql-server.key -out mysql-server.csr
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' >mysql-server.ext
        "$openssl" x509 -req -in mysql-server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
            -days 3650 -extfile mysql-server.ext -out mysql-server.pem
        chmod 644 ca.pem other-ca.pem mysql-server.pem
    ) >"$STACK_DIR/tls.log" 2>&1 || { show_log_tail "$STACK_DIR/tls.log"; die "openssl failed (log: $STACK_DIR/tls.log)"; }
}
