/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db grants, the sub-verb: its --role and --user checked, the
 * statements (db_grants.h) printed as they are or as JSON. */
#ifndef DB_GRANTS_PRINT_H
#define DB_GRANTS_PRINT_H

#include "cli.h"

/* Prints the grants of role (--role; NULL is a usage error) for user
 * (--user, USER[@HOST]; NULL = kdelay_<role>) on the database of
 * mysql.url (default kdelay), from the configuration alone: the
 * statements, or {"role", "account", "statements": [...]} (json). The
 * exit code. */
int kd_db_grants_print(kd_cli_t *cli, const char *role, const char *user,
                       int json);

#endif
