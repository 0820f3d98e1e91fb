# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/mysql-private.sh - sourced by deploy/local/stack.sh: the private
# MariaDB (mariadbd on 127.0.0.1, its data in <stack-dir>/mysql): installing,
# starting, initialising and stopping it. Not a program of its own.

# MySQL 8.0's default sql_mode, plus STRICT_ALL_TABLES.
MYSQL_SQL_MODE=ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION
MYSQL_CLIENT=""
MYSQL_ADMIN=""
MARIADBD=""

mysql_paths() { # after resolve_settings
    MYSQL_DIR=$STACK_DIR/mysql
    TLS_DIR=$STACK_DIR/tls
    MYSQL_DATA=$MYSQL_DIR/data
    MYSQL_SOCK=$MYSQL_DIR/mysqld.sock
    MYSQL_PIDFILE=$MYSQL_DIR/server.pid # ours; mariadbd rewrites/deletes its own mysqld.pid
    MYSQL_SERVER_PIDFILE=$MYSQL_DIR/mysqld.pid
    MYSQL_ERRLOG=$MYSQL_DIR/error.log
    MYSQL_INSTALLED=$MYSQL_DIR/.installed
}

find_mysql_clients() {
    [[ -n $MYSQL_CLIENT ]] || need_cmd MYSQL_CLIENT "mariadb client (package mariadb-client)" mariadb mysql
    [[ -n $MYSQL_ADMIN ]] || need_cmd MYSQL_ADMIN "mariadb-admin (package mariadb-client)" mariadb-admin mysqladmin
}

mysql_pid() { proc_pid "$MYSQL_PIDFILE" "--datadir=$MYSQL_DATA"; }

# private instance, over TCP (what the product and tests use)
mysql_answers() {
    find_mysql_clients
    local -a tls
    mapfile -t tls < <(mysql_tcp_tls_args)
    "$MYSQL_ADMIN" --no-defaults --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -uroot \
        "${tls[@]}" --connect-timeout=2 ping >/dev/null 2>&1
}

mysql_socket_sql() { # sql
    "$MYSQL_CLIENT" --no-defaults --protocol=socket --socket="$MYSQL_SOCK" -uroot -e "$1"
}

mysql_init_sql() {
    local out
    if ! out=$(mysql_socket_sql "
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS \`$MYSQL_DB\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;" 2>&1); then
        printf '%s\n' "$out" >&2
        die "could not initialise the private MariaDB over $MYSQL_SOCK"
    fi
    local -a tls
    mapfile -t tls < <(mysql_tcp_tls_args)
    if ! out=$("$MYSQL_CLIENT" --no-defaults --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -uroot \
        "${tls[@]}" -e 'SELECT 1' "$MYSQL_DB" 2>&1); then
        printf '%s\n' "$out" >&2
        die "MariaDB answers, but root@127.0.0.1 cannot use database $MYSQL_DB over TCP"
    fi
}

mysql_install() {
    local install_db
    need_cmd install_db "mariadb-install-db (package mariadb-server-core)" mariadb-install-db mysql_install_db
    log "initialising MariaDB data directory $MYSQL_DATA"
    # --user: as root the server must run as root (no chown to mysql needed,
    # the state dir stays owned by the caller); as a normal user it is ignored.
    # --tmpdir (passed on to the bootstrap server): a private one, because two
    # stacks initialised at once (scripts/test.sh) collided in the shared /tmp
    # ("Could not remove temporary table ... Unknown table mysql.tmp_user_sys").
    # One more try covers any other transient failure of the bootstrap.
    local try
    for try in 1 2; do
        rm -rf "$MYSQL_DATA" "$MYSQL_DIR/tmp"
        mkdir -p "$MYSQL_DATA" "$MYSQL_DIR/tmp"
        if "$install_db" --no-defaults --datadir="$MYSQL_DATA" \
            --auth-root-authentication-method=normal --skip-test-db \
            --user="$(id -un)" --tmpdir="$MYSQL_DIR/tmp" \
            >"$MYSQL_DIR/install.log" 2>&1 9>&-; then
            break
        fi
        show_log_tail "$MYSQL_DIR/install.log"
        if [ "$try" = 2 ]; then
            die "mariadb-install-db failed twice (log: $MYSQL_DIR/install.log)"
        fi
        log "mariadb-install-db failed; trying once more"
    done
    : >"$MYSQL_INSTALLED"
}

mysql_start_private() {
    local pid deadline
    if pid=$(mysql_pid); then
        log "MariaDB already running (pid $pid)"
    else
        need_cmd MARIADBD "mariadbd (package mariadb-server-core)" mariadbd mysqld
        find_mysql_clients
        # unix socket paths are limited to 107 bytes
        ((${#MYSQL_SOCK} <= 100)) || die "state dir path too long for the MariaDB socket ($MYSQL_SOCK); use a shorter KDELAY_STACK_DIR"
        ensure_port_free "$MYSQL_PORT" "MariaDB"
        mkdir -p "$MYSQL_DIR"
        [[ -f $MYSQL_INSTALLED ]] || mysql_install
        local -a args=(--no-defaults "--datadir=$MYSQL_DATA" "--port=$MYSQL_PORT"
            --bind-address=127.0.0.1 "--socket=$MYSQL_SOCK" "--pid-file=$MYSQL_SERVER_PIDFILE"
            "--log-error=$MYSQL_ERRLOG" --skip-name-resolve
            --innodb-buffer-pool-size=64M "--innodb-log-file-size=$MYSQL_REDO_LOG"
            --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci
            "--sql-mode=$MYSQL_SQL_MODE" "--tmpdir=$MYSQL_DIR")
        if [[ -n $MYSQL_GENERAL_LOG ]]; then
            args+=(--general-log=1 "--general-log-file=$MYSQL_GENERAL_LOG")
            log "MariaDB logs every statement to $MYSQL_GENERAL_LOG"
        fi
        if [[ $MYSQL_TLS == on ]]; then
            mysql_tls_make
            # TLS only over TCP; the unix socket (stack.sh's own admin SQL)
            # counts as secure transport.
            args+=("--ssl-ca=$TLS_DIR/ca.pem" "--ssl-cert=$TLS_DIR/mysql-server.pem"
                "--ssl-key=$TLS_DIR/mysql-server.key" --require-secure-transport=ON)
        fi
        # mariadbd refuses to run as root unless told to
        ((EUID != 0)) || args+=(--user=root)
        log "starting MariaDB on 127.0.0.1:$MYSQL_PORT"
        launch "$MYSQL_PIDFILE" "$MYSQL_DIR/stdout.log" "--datadir=$MYSQL_DATA" "$MARIADBD" "${args[@]}"
    fi
    deadline=$((SECONDS + MYSQL_READY_TIMEOUT))
    while :; do
        if ! pid=$(mysql_pid); then
            show_log_tail "$MYSQL_DIR/stdout.log" "$MYSQL_ERRLOG"
            die "MariaDB is not running (exited during startup?); log: $MYSQL_ERRLOG"
        fi
        if [[ -S $MYSQL_SOCK ]] && mysql_answers; then break; fi
        if ((SECONDS >= deadline)); then
            show_log_tail "$MYSQL_ERRLOG"
            die "MariaDB (pid $pid) does not answer on 127.0.0.1:$MYSQL_PORT within ${MYSQL_READY_TIMEOUT}s (started with another port? try 'stack.sh down' first)"
        fi
        sleep "$POLL"
    done
    mysql_init_sql
    log "MariaDB is up on 127.0.0.1:$MYSQL_PORT (pid $pid), database $MYSQL_DB"
}

mysql_stop() {
    local pid
    if [[ -n $MYSQL_URL_EXTERNAL ]]; then
        log "MySQL is external ($(redact_url "$MYSQL_URL_EXTERNAL")); not stopping it"
    fi
    if ! pid=$(mysql_pid); then
        [[ -n $MYSQL_URL_EXTERNAL ]] || log "MariaDB is not running"
        return 0
    fi
    stop_proc MariaDB "$pid" "--datadir=$MYSQL_DATA" "$opt_kill" "$MYSQL_PORT"
    rm -f "$MYSQL_PIDFILE"
}
