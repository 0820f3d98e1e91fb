#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# healthcheck.sh of the stand-in MariaDB: `--connect` (the server answers
# on its socket) and `--innodb_initialized` (InnoDB is up), the two checks
# of the official image's healthcheck.sh that compose.yaml asks for; other
# arguments are ignored. Runs as OS root (unix_socket authentication).
set -eu
out=$(mariadb --protocol=socket -uroot -N -e \
    "SELECT COUNT(*) FROM information_schema.ENGINES WHERE ENGINE = 'InnoDB' AND SUPPORT IN ('YES', 'DEFAULT')") || exit 1
[ "$out" = 1 ]
