/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db grants: the least MySQL privileges of each kdelay role. */
#ifndef KD_DB_GRANTS_H
#define KD_DB_GRANTS_H

#include <stdio.h>

/* Names of the roles, NULL-ended: forwarder, admin, client, migrate, gc. */
extern const char *const kd_db_grant_roles[];

/* Writes the GRANT statements of role (one of kd_db_grant_roles) on
 * database db to account (already quoted, 'user'@'host') to out, with a
 * comment line naming what the role runs. -1 for an unknown role. */
int kd_db_grants_write(FILE *out, const char *role, const char *db,
                       const char *account);

/* The account 'user'@'host' of spec ("user" or "user@host"; host "%" when
 * absent) into buf; -1 when spec is empty or holds a quote, backslash,
 * backtick or control character. */
int kd_db_grants_account(const char *spec, char *buf, size_t size);

#endif
