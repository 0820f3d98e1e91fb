#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The stand-in MariaDB's start (deploy/docker/standin/mariadb/Dockerfile):
# the first start creates the data directory and, on a server without
# networking, the root password, MARIADB_DATABASE and MARIADB_USER (as the
# official image's entrypoint); then mariadbd runs in the foreground as
# user mysql, listening on every address.
set -eu
datadir=/var/lib/mysql
sql_str() { # a quoted SQL string literal of $1
    printf "'%s'" "$(printf '%s' "$1" | sed "s/\\\\/\\\\\\\\/g; s/'/''/g")"
}
# shellcheck disable=SC2016 # literal backquotes: a quoted SQL identifier
sql_id() { printf '`%s`' "$(printf '%s' "$1" | sed 's/`/``/g')"; }

if [ ! -d "$datadir/mysql" ]; then
    : "${MARIADB_ROOT_PASSWORD:?MARIADB_ROOT_PASSWORD is not set}"
    mariadb-install-db --user=mysql --datadir="$datadir" --skip-test-db >/dev/null
    sock=/run/mysqld/init.sock
    mariadbd --user=mysql --datadir="$datadir" --skip-networking --socket="$sock" &
    pid=$!
    i=0
    until mariadb --protocol=socket --socket="$sock" -uroot -e 'SELECT 1' >/dev/null 2>&1; do
        i=$((i + 1))
        [ "$i" -lt 300 ] || { echo "mariadb stand-in: the init server did not start" >&2; exit 1; }
        sleep 0.1
    done
    {
        # root: the socket as OS root (the health check) or the password
        echo "ALTER USER root@localhost IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD($(sql_str "$MARIADB_ROOT_PASSWORD"));"
        echo "CREATE USER root@'%' IDENTIFIED BY $(sql_str "$MARIADB_ROOT_PASSWORD");"
        echo "GRANT ALL ON *.* TO root@'%' WITH GRANT OPTION;"
        if [ -n "${MARIADB_DATABASE:-}" ]; then
            echo "CREATE DATABASE IF NOT EXISTS $(sql_id "$MARIADB_DATABASE");"
        fi
        if [ -n "${MARIADB_USER:-}" ]; then
            echo "CREATE USER $(sql_str "$MARIADB_USER")@'%' IDENTIFIED BY $(sql_str "${MARIADB_PASSWORD:?MARIADB_PASSWORD is not set}");"
            if [ -n "${MARIADB_DATABASE:-}" ]; then
                echo "GRANT ALL ON $(sql_id "$MARIADB_DATABASE").* TO $(sql_str "$MARIADB_USER")@'%';"
            fi
        fi
    } | mariadb --protocol=socket --socket="$sock" -uroot
    kill "$pid"
    wait "$pid" || true
fi
exec mariadbd --user=mysql --datadir="$datadir" --bind-address=0.0.0.0 --port=3306
