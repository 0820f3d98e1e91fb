/* SPDX-License-Identifier: Apache-2.0 */
/* A migration script split into statements and their guards
 * (kd_schema_steps.h), and every migration this build embeds: each parses,
 * and no statement adds a column or an index without a guard (MySQL has
 * no ADD COLUMN/ADD INDEX IF NOT EXISTS). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_schema.h"
#include "kd_schema_migrate.h"
#include "kd_schema_steps.h"
#include "kd_test.h"

static int next(const char **pos, kd_schema_step_t *st)
{
        char errstr[256] = "";
        return kd_schema_step_next(pos, st, errstr, sizeof(errstr));
}

static int sql_is(const kd_schema_step_t *st, const char *want)
{
        return st->sql_len == strlen(want) &&
               !memcmp(st->sql, want, st->sql_len);
}

static void test_split_and_guards(void)
{
        const char *script = "-- header; with a semicolon;\n"
                             "CREATE TABLE t (a INT,\n  b INT);\n"
                             "\n-- kdelay: unless column t.c\n"
                             "-- a plain comment between\n"
                             "ALTER TABLE t ADD COLUMN c INT NULL;  \n"
                             "--   kdelay: unless index t.t_c\n"
                             "ALTER TABLE t ADD INDEX t_c (c);\n"
                             "-- kdelay: if index t.t_d\n"
                             "ALTER TABLE t DROP INDEX t_d";
        const char *pos = script;
        kd_schema_step_t st;
        CU_ASSERT_EQUAL(next(&pos, &st), 1);
        CU_ASSERT(sql_is(&st, "CREATE TABLE t (a INT,\n  b INT)"));
        CU_ASSERT_EQUAL(st.guard, KD_SCHEMA_GUARD_NONE);
        CU_ASSERT_EQUAL(next(&pos, &st), 1);
        CU_ASSERT(sql_is(&st, "ALTER TABLE t ADD COLUMN c INT NULL"));
        CU_ASSERT_EQUAL(st.guard, KD_SCHEMA_GUARD_COLUMN);
        CU_ASSERT_STRING_EQUAL(st.table, "t");
        CU_ASSERT_STRING_EQUAL(st.name, "c");
        /* "--   kdelay:" is a plain comment: a directive starts exactly
         * "-- kdelay:". */
        CU_ASSERT_EQUAL(next(&pos, &st), 1);
        CU_ASSERT(sql_is(&st, "ALTER TABLE t ADD INDEX t_c (c)"));
        CU_ASSERT_EQUAL(st.guard, KD_SCHEMA_GUARD_NONE);
        CU_ASSERT_EQUAL(next(&pos, &st), 1);
        CU_ASSERT(sql_is(&st, "ALTER TABLE t DROP INDEX t_d"));
        CU_ASSERT_EQUAL(st.guard, KD_SCHEMA_GUARD_IF_INDEX);
        CU_ASSERT_STRING_EQUAL(st.name, "t_d");
        CU_ASSERT_EQUAL(next(&pos, &st), 0);
        CU_ASSERT_EQUAL(next(&pos, &st), 0);
}

/* What `kdelayctl db migrate --print` writes before a guarded statement
 * parses back to the same guard, for every guard there is. */
static void test_guard_names(void)
{
        static const kd_schema_guard_t guards[] = {KD_SCHEMA_GUARD_COLUMN,
                                                   KD_SCHEMA_GUARD_INDEX,
                                                   KD_SCHEMA_GUARD_IF_INDEX};
        CU_ASSERT_STRING_EQUAL(kd_schema_guard_name(KD_SCHEMA_GUARD_NONE), "");
        for (size_t i = 0; i < sizeof(guards) / sizeof(guards[0]); i++) {
                char script[128];
                const char *pos = script;
                kd_schema_step_t st;
                snprintf(script, sizeof(script),
                         "-- kdelay: %s t.n\nALTER TABLE t ADD COLUMN n INT;",
                         kd_schema_guard_name(guards[i]));
                CU_ASSERT_EQUAL(next(&pos, &st), 1);
                CU_ASSERT_EQUAL(st.guard, guards[i]);
                CU_ASSERT_STRING_EQUAL(st.name, "n");
        }
}

static void test_bad_directives(void)
{
        static const char *const bad[] = {
            "-- kdelay: unless column t\nALTER TABLE t ADD COLUMN c INT;",
            "-- kdelay: unless table t.c\nCREATE TABLE c (a INT);",
            "-- kdelay: unless column t.c x\nALTER TABLE t ADD COLUMN c INT;",
            "-- kdelay: unless column t.c-d\nALTER TABLE t ADD COLUMN c INT;",
            "-- kdelay: unless column t.c\n-- kdelay: unless index t.i\n"
            "ALTER TABLE t ADD COLUMN c INT;",
            "-- kdelay: unless column t.c\n\n-- nothing after it\n",
            "-- kdelay: unless column "
            "t.c12345678901234567890123456789012345678901234567890123456789012"
            "345\nALTER TABLE t ADD COLUMN c INT;",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                const char *pos = bad[i];
                kd_schema_step_t st;
                char errstr[256] = "";
                CU_ASSERT_EQUAL(
                    kd_schema_step_next(&pos, &st, errstr, sizeof(errstr)), -1);
                CU_ASSERT(strlen(errstr) > 0);
        }
}

/* The statement's text folded to upper case, blanks to one space. */
static void fold(const kd_schema_step_t *st, char *out, size_t size)
{
        size_t n = 0;
        for (size_t i = 0; i < st->sql_len && n + 1 < size; i++) {
                char c = (char)toupper((unsigned char)st->sql[i]);
                if (isspace((unsigned char)c)) {
                        if (n && out[n - 1] == ' ')
                                continue;
                        c = ' ';
                }
                out[n++] = c;
        }
        out[n] = '\0';
}

static void test_embedded_migrations(void)
{
        CU_ASSERT(kd_migrations_cnt >= 5);
        for (size_t i = 0; i < kd_migrations_cnt; i++) {
                const char *pos = kd_migrations[i].sql;
                kd_schema_step_t st;
                char errstr[256] = "", text[4096];
                int rc, steps = 0;
                while ((rc = kd_schema_step_next(&pos, &st, errstr,
                                                 sizeof(errstr))) > 0) {
                        steps++;
                        fold(&st, text, sizeof(text));
                        CU_ASSERT_PTR_NULL(strstr(text, "IF NOT EXISTS") &&
                                                   !strstr(text, "CREATE TABLE")
                                               ? text
                                               : NULL);
                        int adds = strstr(text, " ADD COLUMN ") ||
                                   strstr(text, " ADD INDEX ") ||
                                   strstr(text, " ADD KEY ") ||
                                   strstr(text, " DROP INDEX ");
                        if (adds && st.guard == KD_SCHEMA_GUARD_NONE)
                                printf("\n%s: unguarded: %s\n",
                                       kd_migrations[i].name, text);
                        CU_ASSERT(!adds || st.guard != KD_SCHEMA_GUARD_NONE);
                }
                CU_ASSERT_EQUAL(rc, 0);
                /* Only an opt-in step may be a switch without DDL. */
                CU_ASSERT(steps > 0 ||
                          kd_schema_opt_in(&kd_migrations[i], NULL, 0));
        }
}

/* -- kdelay: opt-in NAME: one per script, [a-z0-9-]{1,31}, no guard of
 * a statement. */
static void test_opt_in(void)
{
        char name[KD_SCHEMA_OPT_IN_MAX + 1];
        CU_ASSERT_EQUAL(kd_schema_opt_in_of("-- x\n-- kdelay: floor 0.4.0\n"
                                            "-- kdelay: opt-in lean-fate \n",
                                            name, sizeof(name)),
                        1);
        CU_ASSERT_STRING_EQUAL(name, "lean-fate");
        CU_ASSERT_EQUAL(
            kd_schema_opt_in_of("CREATE TABLE t (a INT);", name, sizeof(name)),
            0);
        static const char *const bad[] = {
            "-- kdelay: opt-in \n",
            "-- kdelay: opt-in Lean\n",
            "-- kdelay: opt-in a b\n",
            "-- kdelay: opt-in a_b\n",
            "-- kdelay: opt-in a\n-- kdelay: opt-in b\n",
            "-- kdelay: opt-in 0123456789012345678901234567890123\n",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CU_ASSERT_EQUAL(kd_schema_opt_in_of(bad[i], name, sizeof(name)),
                                -1);
        /* Too long for the caller's buffer. */
        CU_ASSERT_EQUAL(
            kd_schema_opt_in_of("-- kdelay: opt-in lean-fate\n", name, 4), -1);
        /* Not a statement's guard; a script of directives alone has no
         * statement. */
        const char *pos = "-- kdelay: floor 0.4.0\n-- kdelay: opt-in x\n";
        kd_schema_step_t st;
        char errstr[256] = "";
        CU_ASSERT_EQUAL(kd_schema_step_next(&pos, &st, errstr, sizeof(errstr)),
                        0);
        pos = "-- kdelay: opt-in x\nCREATE TABLE t (a INT);";
        CU_ASSERT_EQUAL(kd_schema_step_next(&pos, &st, errstr, sizeof(errstr)),
                        1);
        CU_ASSERT_EQUAL(st.guard, KD_SCHEMA_GUARD_NONE);
}

/* Version 11 (lean-fate, floor 0.4.0) is this build's one opt-in step,
 * and its last: the build works with 10, migrate stops before 11. */
static void test_embedded_opt_in(void)
{
        char name[KD_SCHEMA_OPT_IN_MAX + 1] = "";
        int v[3], want[3] = {0, 4, 0};
        CU_ASSERT_EQUAL_FATAL(kd_schema_latest(), 11);
        CU_ASSERT_EQUAL(kd_schema_needed(), 10);
        const kd_migration_t *m = kd_schema_waiting(10, name, sizeof(name));
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_EQUAL(m->version, 11);
        CU_ASSERT_STRING_EQUAL(name, "lean-fate");
        CU_ASSERT_EQUAL(kd_schema_floor_of(m->sql, v), 1);
        CU_ASSERT_EQUAL(kd_release_cmp(v, want), 0);
        CU_ASSERT_PTR_NULL(kd_schema_waiting(9, name, sizeof(name)));
        CU_ASSERT_PTR_NULL(kd_schema_waiting(0, name, sizeof(name)));
        CU_ASSERT_PTR_NULL(kd_schema_waiting(11, name, sizeof(name)));
        CU_ASSERT(kd_schema_opt_in_known("lean-fate"));
        CU_ASSERT(!kd_schema_opt_in_known("lean"));
        size_t opt = 0;
        for (size_t i = 0; i < kd_migrations_cnt; i++)
                opt += (size_t)kd_schema_opt_in(&kd_migrations[i], NULL, 0);
        CU_ASSERT_EQUAL(opt, 1);
}

static void test_releases(void)
{
        int a[3], b[3];
        CU_ASSERT_EQUAL(kd_release_parse("0.2.0", a), 0);
        CU_ASSERT_EQUAL(kd_release_parse("0.10.1", b), 0);
        CU_ASSERT(kd_release_cmp(a, b) < 0);
        CU_ASSERT(kd_release_cmp(b, a) > 0);
        CU_ASSERT_EQUAL(kd_release_cmp(a, a), 0);
        static const char *const bad[] = {"",          "1",       "1.2",
                                          "1.2.",      "1.2.3.4", "v1.2.3",
                                          "1.2.3-rc1", "1..3",    "100000.0.0"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CU_ASSERT_EQUAL(kd_release_parse(bad[i], a), -1);
        CU_ASSERT_EQUAL(kd_schema_floor_of("-- x\n-- kdelay: floor 1.2.3 \n"
                                           "-- kdelay: unless column t.c\n"
                                           "ALTER TABLE t ADD COLUMN c INT;",
                                           a),
                        1);
        CU_ASSERT(a[0] == 1 && a[1] == 2 && a[2] == 3);
        CU_ASSERT_EQUAL(kd_schema_floor_of("CREATE TABLE t (a INT);", a), 0);
        CU_ASSERT_EQUAL(kd_schema_floor_of("-- kdelay: floor 1.2\n", a), -1);
        CU_ASSERT_EQUAL(kd_schema_floor_of("-- kdelay: floor 1.2.3\n"
                                           "-- kdelay: floor 1.2.4\n",
                                           a),
                        -1);
        /* A floor line is not a statement's guard. */
        const char *pos = "-- kdelay: floor 1.2.3\nCREATE TABLE t (a INT);";
        kd_schema_step_t st;
        CU_ASSERT_EQUAL(next(&pos, &st), 1);
        CU_ASSERT_EQUAL(st.guard, KD_SCHEMA_GUARD_NONE);
}

/* Every migration from KD_SCHEMA_FLOOR_SINCE on declares the oldest
 * release that can use it, and no floor is above this release: a release
 * can use the schema it ships (docs/upgrading.md). */
static void test_embedded_floors(void)
{
        int me[3], v[3];
        CU_ASSERT_EQUAL_FATAL(kd_release_parse(KDELAY_VERSION_STR, me), 0);
        for (size_t i = 0; i < kd_migrations_cnt; i++) {
                const kd_migration_t *m = &kd_migrations[i];
                int rc = kd_schema_floor_of(m->sql, v);
                if (m->version < KD_SCHEMA_FLOOR_SINCE) {
                        CU_ASSERT_EQUAL(rc, 0);
                        continue;
                }
                if (rc != 1)
                        printf("\n%s: no floor\n", m->name);
                CU_ASSERT_EQUAL(rc, 1);
                CU_ASSERT(rc != 1 || kd_release_cmp(v, me) <= 0);
        }
}

/* A migration MySQL refused to this user names the version this build
 * needs (kd_schema_needed: 10, where the latest, 11, is an opt-in step),
 * not the latest; past it, the opt-in step's goal. */
static void test_a_refused_migration_names_the_needed_version(void)
{
        char errstr[512], want[64], latest[64];
        int needed = kd_schema_needed();
        CU_ASSERT_FATAL(needed > 1);
        snprintf(want, sizeof(want), "this kdelay needs %d,", needed);
        snprintf(latest, sizeof(latest), "needs %d", kd_schema_latest());
        CU_ASSERT_EQUAL(kd_schema_denied(KDELAY_ERR_MYSQL, needed - 1,
                                         kd_schema_latest(), "denied", errstr,
                                         sizeof(errstr)),
                        KDELAY_ERR_MYSQL);
        printf("\n  %s\n", errstr);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, want));
        CU_ASSERT(needed == kd_schema_latest() || !strstr(errstr, latest));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "may not migrate it"));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "--role migrate"));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, ": denied"));
        /* At the needed version, refused the opt-in step asked for. */
        CU_ASSERT_EQUAL(kd_schema_denied(KDELAY_ERR_MYSQL, needed, needed + 1,
                                         "denied", errstr, sizeof(errstr)),
                        KDELAY_ERR_MYSQL);
        printf("  %s\n", errstr);
        snprintf(want, sizeof(want), "schema version %d (this kdelay needs %d)",
                 needed, needed);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, want));
        snprintf(want, sizeof(want), "to %d by an opt-in step", needed + 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, want));
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_split_and_guards),
            KD_TEST(test_guard_names),
            KD_TEST(test_bad_directives),
            KD_TEST(test_embedded_migrations),
            KD_TEST(test_releases),
            KD_TEST(test_embedded_floors),
            KD_TEST(test_opt_in),
            KD_TEST(test_embedded_opt_in),
            KD_TEST(test_a_refused_migration_names_the_needed_version),
            KD_TEST_END};
        return kd_test_run("schema_steps", cases, NULL, NULL);
}
