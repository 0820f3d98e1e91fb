/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db migrate --print: the migrations built in, statement by
 * statement, as the migrator would send them; no connection. */
#ifndef DB_MIGRATE_PRINT_H
#define DB_MIGRATE_PRINT_H

#include "cli.h"

/* Prints every statement of every migration built in, as the migrator
 * sends them (its own split), each after its guard. tools/sqlcheck parses
 * this output. The exit code. */
int kd_db_migrate_print(kd_cli_t *cli);

#endif
