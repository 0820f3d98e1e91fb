/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db migrate --enable STEP without --force: is the forwarder
 * group ready for the opt-in step (does each member say it runs the
 * step's release or newer)? */
#ifndef DB_MIGRATE_ENABLE_H
#define DB_MIGRATE_ENABLE_H

#include <mysql.h>

#include "cli.h"

/* KD_EXIT_OK to go on, else the exit code after saying why:
 * KD_EXIT_USAGE while the forwarder group has a member that does not say
 * it runs the step's release floor or newer, KD_EXIT_ERROR when the group
 * cannot be read. Nothing is asked of a database (conn) with no schema
 * (fresh: nothing old shares it) or one that has the step already. */
int kd_db_migrate_enable_check(kd_cli_t *cli, MYSQL *conn, const char *step);

#endif
