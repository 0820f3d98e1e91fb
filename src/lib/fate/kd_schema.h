/* SPDX-License-Identifier: Apache-2.0 */
/* MySQL schema: versioned migrations from deploy/mysql/, embedded at build
 * time, applied in order and recorded in table kdelay_schema. What the
 * library needs of them is here: the versions this build knows and
 * needs, the database's, the check. Applying them is kdelayctl's alone
 * (kd_schema_migrate.h, src/lib/ctlonly/). */
#ifndef KD_SCHEMA_H
#define KD_SCHEMA_H

#include <stddef.h>

#include <mysql.h>

#include <kdelay/conf.h>
#include <kdelay/error.h>

typedef struct kd_migration {
        int version;
        const char *name; /* "001_fate" */
        const char *sql;  /* one or more statements */
} kd_migration_t;

extern const kd_migration_t kd_migrations[]; /* ascending version */
extern const size_t kd_migrations_cnt;

/* Highest version this build knows. */
int kd_schema_latest(void);

/* The lowest version this build works with: the latest, less the opt-in
 * steps the list ends with (kd_schema_steps.h), which an operator takes
 * on purpose (`kdelayctl db migrate --enable NAME`). */
int kd_schema_needed(void);

/* 1 when migration m is opt-in (its name into name, size bytes, when
 * name is not NULL), else 0. */
int kd_schema_opt_in(const kd_migration_t *m, char *name, size_t size);

/* The first version whose migration declares a release floor and whose
 * kdelay_schema row records it (compat_floor). */
#define KD_SCHEMA_FLOOR_SINCE 6

/* Applied version (0 = none) into *versionp. */
kdelay_err_t kd_schema_version(MYSQL *conn, int *versionp, char *errstr,
                               size_t errstr_size);

/* KDELAY_OK when the database has at least the version this build needs
 * (kd_schema_needed: opt-in steps may wait), or a
 * newer one this release may use (every newer version's floor at or below
 * KDELAY_VERSION_STR); KDELAY_ERR_SCHEMA with advice otherwise. */
kdelay_err_t kd_schema_check(MYSQL *conn, char *errstr, size_t errstr_size);

/* A database at version newer than this build knows (kd_schema_latest):
 * KDELAY_OK when this release may use it (every newer version's
 * compat_floor at or below KDELAY_VERSION_STR), KDELAY_ERR_SCHEMA naming
 * the floor otherwise. kd_schema_check and migrate ask it. */
kdelay_err_t kd_schema_newer_usable(MYSQL *conn, int version, char *errstr,
                                    size_t errstr_size);

#endif
