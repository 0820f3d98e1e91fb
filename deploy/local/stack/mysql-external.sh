# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/mysql-external.sh - sourced by deploy/local/stack.sh: --mysql-url, an
# existing MySQL/MariaDB instead of the private one; and which of the two
# the stack uses. Not a program of its own.

redact_url() { # hide the password
    local u=$1
    if [[ $u =~ ^([a-z]+://[^:@/]*):[^@/]*@(.*)$ ]]; then
        u="${BASH_REMATCH[1]}:***@${BASH_REMATCH[2]}"
    fi
    printf '%s\n' "$u"
}

url_decode() { printf '%b' "${1//%/\\x}"; }

EXT_USER="" EXT_PASS="" EXT_HOST="" EXT_PORT="" EXT_DB=""
parse_mysql_url() {
    local re='^mysql://(([^:@/]*)(:([^@/]*))?@)?([^:/@?]+)(:([0-9]+))?(/([^?]*))?(\?.*)?$'
    [[ $1 =~ $re ]] || die "cannot parse MySQL URL '$(redact_url "$1")'; expected mysql://user[:password]@host[:port]/db"
    EXT_USER=$(url_decode "${BASH_REMATCH[2]}")
    EXT_PASS=$(url_decode "${BASH_REMATCH[4]}")
    EXT_HOST=${BASH_REMATCH[5]}
    EXT_PORT=${BASH_REMATCH[7]:-3306}
    EXT_DB=$(url_decode "${BASH_REMATCH[9]}")
    EXT_DB=${EXT_DB:-$MYSQL_DB}
}

ext_args() {
    EXT_ARGS=(--no-defaults --protocol=tcp "-h$EXT_HOST" "-P$EXT_PORT" --connect-timeout=5)
    [[ -z $EXT_USER ]] || EXT_ARGS+=("-u$EXT_USER")
}

mysql_external_answers() {
    parse_mysql_url "$MYSQL_URL_EXTERNAL"
    find_mysql_clients
    ext_args
    MYSQL_PWD=$EXT_PASS "$MYSQL_ADMIN" "${EXT_ARGS[@]}" ping >/dev/null 2>&1
}

mysql_start_external() {
    local shown out
    shown=$(redact_url "$MYSQL_URL_EXTERNAL")
    mysql_external_answers || die "external MySQL $shown does not answer"
    if ! out=$(MYSQL_PWD=$EXT_PASS "$MYSQL_CLIENT" "${EXT_ARGS[@]}" \
        -e "CREATE DATABASE IF NOT EXISTS \`$EXT_DB\` CHARACTER SET utf8mb4" 2>&1); then
        printf '%s\n' "$out" >&2
        die "cannot create database $EXT_DB on external MySQL $shown"
    fi
    log "using external MySQL $shown (database $EXT_DB exists)"
}

# ---- the stack's MySQL: the external one (--mysql-url) or the private one
mysql_start() {
    if [[ -n $MYSQL_URL_EXTERNAL ]]; then mysql_start_external; else mysql_start_private; fi
}

mysql_url() {
    if [[ -n $MYSQL_URL_EXTERNAL ]]; then
        printf '%s\n' "$MYSQL_URL_EXTERNAL"
    else
        if [[ $MYSQL_TLS == on ]]; then
            printf 'mysql://root@127.0.0.1:%s/%s?ssl-mode=VERIFY_IDENTITY&ssl-ca=%s\n' \
                "$MYSQL_PORT" "$MYSQL_DB" "$TLS_DIR/ca.pem"
        else
            printf 'mysql://root@127.0.0.1:%s/%s\n' "$MYSQL_PORT" "$MYSQL_DB"
        fi
    fi
}
