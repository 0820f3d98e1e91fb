/* SPDX-License-Identifier: Apache-2.0 */
/* A migration script's statements, one at a time, each with the guard its
 * comment names. MySQL has no ADD COLUMN/ADD INDEX IF NOT EXISTS (MariaDB
 * only), so a re-runnable step says what it adds in a directive comment
 * on the line(s) before it, and the migrator asks information_schema:
 *
 *   -- kdelay: unless column kdelay_fate.lease_until
 *   ALTER TABLE kdelay_fate ADD COLUMN lease_until DATETIME(3) NULL;
 *   -- kdelay: unless index kdelay_fate.kdelay_fate_state
 *   ALTER TABLE kdelay_fate ADD INDEX kdelay_fate_state (state, updated_at_ms);
 *
 * and a step that drops an index names it the other way round:
 *
 *   -- kdelay: if index kdelay_fate.kdelay_fate_state
 *   ALTER TABLE kdelay_fate DROP INDEX kdelay_fate_state;
 *
 * A statement ends at a ';' that ends its line (or the script); quotes
 * are not looked into, so no statement may end a line inside a string.
 *
 * A script from version 6 on also names the oldest kdelay release that
 * can use the schema once it is applied (docs/upgrading.md):
 *
 *   -- kdelay: floor 0.2.0
 *
 * and a step an operator takes on purpose, once every binary that shares
 * the database is a release that understands it (docs/upgrading.md),
 * names itself opt-in:
 *
 *   -- kdelay: opt-in lean-fate
 *
 * `kdelayctl db migrate` stops before such a step unless told
 * `--enable NAME`, or unless the database had no schema at all when it
 * began (a fresh install: nothing older can share it). A release needs
 * the schema only up to before the opt-in steps it ends with
 * (kd_schema_needed): an opt-in step followed by others makes those wait
 * for it too.
 */
#ifndef KD_SCHEMA_STEPS_H
#define KD_SCHEMA_STEPS_H

#include <stddef.h>

#define KD_SCHEMA_NAME_MAX   64 /* MySQL identifier length */
#define KD_SCHEMA_OPT_IN_MAX 31 /* an opt-in step's name */

typedef enum kd_schema_guard {
        KD_SCHEMA_GUARD_NONE,     /* always run */
        KD_SCHEMA_GUARD_COLUMN,   /* skipped when table.name is a column */
        KD_SCHEMA_GUARD_INDEX,    /* skipped when table.name is an index */
        KD_SCHEMA_GUARD_IF_INDEX, /* run only when table.name is an index */
} kd_schema_guard_t;

typedef struct kd_schema_step {
        const char *sql; /* into the script, not NUL-terminated */
        size_t sql_len;  /* without the ';' */
        kd_schema_guard_t guard;
        char table[KD_SCHEMA_NAME_MAX + 1];
        char name[KD_SCHEMA_NAME_MAX + 1];
} kd_schema_step_t;

/* The directive's words for guard ("unless column", "unless index", "if
 * index"; "" for none): a static string. */
const char *kd_schema_guard_name(kd_schema_guard_t guard);

/* The next statement of the script at *posp into *step, advancing *posp:
 * 1 with a statement, 0 at the end (only comments and blanks left), -1
 * on a malformed directive, a directive with no statement after it, or
 * a second directive for one statement (reason in errstr). */
int kd_schema_step_next(const char **posp, kd_schema_step_t *step, char *errstr,
                        size_t errstr_size);

/* The release floor script declares ("-- kdelay: floor X.Y.Z" on a line
 * of its own) into v: 1 found, 0 none, -1 malformed or declared twice. */
int kd_schema_floor_of(const char *script, int v[3]);

/* The name script's opt-in directive gives ("-- kdelay: opt-in NAME" on
 * a line of its own, NAME [a-z0-9-]{1,31}) into name (size bytes): 1
 * found, 0 none, -1 malformed, too long for name or declared twice. */
int kd_schema_opt_in_of(const char *script, char *name, size_t size);

/* "X.Y.Z" (digits only, each below 100000) into v: 0, or -1. */
int kd_release_parse(const char *s, int v[3]);

/* <0, 0, >0 as release a is older than, equal to, newer than b. */
int kd_release_cmp(const int a[3], const int b[3]);

#endif
