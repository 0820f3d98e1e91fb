#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# MySQL 8 as well as MariaDB (docs/fate-protocol.md, "Servers"): the
# checker's own planted statements (ADD COLUMN IF NOT EXISTS, VALUES() in
# ON DUPLICATE KEY UPDATE, the BINARY operator, ...) are rejected, and every
# migration statement and every GRANT of `kdelayctl db grants` parses
# against a MySQL 8 grammar (tools/sqlcheck). The statements a run sends are
# checked by scripts/test.sh from the MariaDB general log.
# Usage: check_sql_mysql8.sh SOURCE_DIR KDELAYCTL
set -euo pipefail
src=${1:?usage: check_sql_mysql8.sh SOURCE_DIR KDELAYCTL}
ctl=${2:?usage: check_sql_mysql8.sh SOURCE_DIR KDELAYCTL}
run=$src/tools/sqlcheck/run.sh
"$run" --self-test
grants=$(mktemp)
migrations=$(mktemp)
trap 'rm -f "$grants" "$migrations"' EXIT
# The migrations as the migrator splits them (no connection needed).
"$ctl" db migrate --print >"$migrations"
# Each guard printed as the migrator reads it back.
if grep '^-- kdelay:' "$migrations" |
    grep -vE '^-- kdelay: (unless column|unless index|if index) [a-z_]+\.[a-z_]+$'; then
  echo "check_sql_mysql8: a guard above is printed in no form the migrator reads" >&2
  exit 1
fi
"$run" --file "$migrations"
for role in forwarder admin client migrate gc; do
  "$ctl" db grants --role "$role" >>"$grants"
done
"$run" --file "$grants"
