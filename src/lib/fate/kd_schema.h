/* SPDX-License-Identifier: Apache-2.0 */
/* MySQL schema: versioned migrations from deploy/mysql/, embedded at build
 * time, applied in order and recorded in table kdelay_schema. */
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

/* The first version whose migration declares a release floor and whose
 * kdelay_schema row records it (compat_floor). */
#define KD_SCHEMA_FLOOR_SINCE 6

/* Applied version (0 = none) into *versionp. */
kdelay_err_t kd_schema_version(MYSQL *conn, int *versionp, char *errstr,
                               size_t errstr_size);

/* Progress callback of kd_schema_migrate: called before each migration. */
typedef void(kd_schema_progress_cb_t)(const kd_migration_t *m, void *opaque);

/* Applies every migration above the current version, holding a named lock
 * so concurrent runs wait for each other. *fromp / *top get the versions
 * before and after. A database newer than this build is left as it is
 * when this release may use it (each newer version's floor at or below
 * KDELAY_VERSION_STR: a previous release's `db migrate` beside a newer
 * one's); KDELAY_ERR_SCHEMA when not. */
kdelay_err_t kd_schema_migrate(MYSQL *conn, kd_schema_progress_cb_t *cb,
                               void *opaque, int *fromp, int *top, char *errstr,
                               size_t errstr_size);

/* KDELAY_OK when the database has this build's latest version, or a
 * newer one this release may use (every newer version's floor at or below
 * KDELAY_VERSION_STR); KDELAY_ERR_SCHEMA with advice otherwise. */
kdelay_err_t kd_schema_check(MYSQL *conn, char *errstr, size_t errstr_size);

#endif
