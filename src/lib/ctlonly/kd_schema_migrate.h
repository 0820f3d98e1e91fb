/* SPDX-License-Identifier: Apache-2.0 */
/* Migrations applied to a database (kd_schema.h: the migrations, the
 * versions): `kdelayctl db migrate`, and the tests that make their
 * databases as it does. kdelayctl's alone, so not in libkdelay
 * (kd_ctlonly). */
#ifndef KD_SCHEMA_MIGRATE_H
#define KD_SCHEMA_MIGRATE_H

#include <stddef.h>

#include <mysql.h>

#include <kdelay/error.h>

#include "kd_schema.h"

/* The opt-in migration a database at version waits for (the next one
 * above version, when it is opt-in; its name into name), else NULL. */
const kd_migration_t *kd_schema_waiting(int version, char *name, size_t size);

/* 1 when a migration of this build is opt-in under name. */
int kd_schema_opt_in_known(const char *name);

/* Progress callback of kd_schema_migrate: called before each migration. */
typedef void(kd_schema_progress_cb_t)(const kd_migration_t *m, void *opaque);

/* Applies every migration above the current version up to the first
 * opt-in one (kd_schema_migrate_opt), holding a named lock
 * so concurrent runs wait for each other. *fromp / *top get the versions
 * before and after. A database newer than this build is left as it is
 * when this release may use it (each newer version's floor at or below
 * KDELAY_VERSION_STR: a previous release's `db migrate` beside a newer
 * one's); KDELAY_ERR_SCHEMA when not. */
kdelay_err_t kd_schema_migrate(MYSQL *conn, kd_schema_progress_cb_t *cb,
                               void *opaque, int *fromp, int *top, char *errstr,
                               size_t errstr_size);

/* kd_schema_migrate, taking the opt-in step named enable (NULL: none)
 * too. Without it, migrate stops before an opt-in step (a success: *top
 * is the version before it, kd_schema_waiting names it), unless the
 * database had no schema at all when the call began: a fresh install
 * takes every step. */
kdelay_err_t kd_schema_migrate_opt(MYSQL *conn, kd_schema_progress_cb_t *cb,
                                   void *opaque, const char *enable, int *fromp,
                                   int *top, char *errstr, size_t errstr_size);

/* Fills errstr with a migration's refusal by MySQL (its words why): the
 * database at version, migrate bringing it to goal, and this MySQL user
 * not allowed to. Names the version this build needs (kd_schema_needed)
 * while the database is below it, else the opt-in step's goal (a step
 * an operator asked for, or a fresh install's). Returns err. */
kdelay_err_t kd_schema_denied(kdelay_err_t err, int version, int goal,
                              const char *why, char *errstr,
                              size_t errstr_size);

#endif
