/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: the kdelayctl binary against the real stack — exit codes,
 * stdout/stderr, topics, schema, schedule, cancel and status. */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "it_env.h"
#include "kd_fate.h"
#include "kd_schema.h"
#include "kd_test.h"
#include "kd_util.h"

static char prefix[64], db[64], url[256];
/* A target topic that exists: schedule refuses one that does not. */
static char ctl_target[96];
static char *out, *err;

static int suite_init(void)
{
        if (it_env_init())
                return -1;
        it_unique(prefix, sizeof(prefix), "itctl");
        it_unique(db, sizeof(db), "kdit_ctl");
        snprintf(ctl_target, sizeof(ctl_target), "%s.target", prefix);
        if (it_create_topic(ctl_target, 1))
                return -1;
        return it_db_create(db, 0, url, sizeof(url));
}

static int suite_cleanup(void)
{
        it_db_drop(db);
        return 0;
}

/* Runs kdelayctl with args, common options appended: --brokers, --mysql,
 * -X topic_prefix=... Output in out/err. */
#define ctl(...) it_ctl(KDELAY_CTL, prefix, url, &out, &err, __VA_ARGS__, NULL)

/* Runs kdelayctl with exactly these arguments. */
static int ctl_raw(const char *a0, ...)
{
        char *argv[32];
        int n = 0;
        va_list ap;
        free(out);
        free(err);
        out = err = NULL;
        argv[n++] = KDELAY_CTL;
        argv[n++] = (char *)a0;
        va_start(ap, a0);
        for (const char *a; (a = va_arg(ap, const char *));)
                argv[n++] = (char *)a;
        va_end(ap);
        argv[n] = NULL;
        return it_run(argv, NULL, &out, &err);
}

static void test_usage_errors_exit_2(void)
{
        char *noverb[] = {KDELAY_CTL, NULL};
        free(out);
        free(err);
        CU_ASSERT_EQUAL(it_run(noverb, NULL, &out, &err), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "verb is required"));
        CU_ASSERT_EQUAL(ctl_raw("frobnicate", NULL), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown verb"));
        CU_ASSERT_EQUAL(ctl("schedule", "--value", "v", "--delay", "1s"), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "--topic is required"));
        CU_ASSERT_EQUAL(ctl("schedule", "--topic", "t", "--value", "v"), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "exactly one of --delay"));
        CU_ASSERT_EQUAL(ctl("schedule", "--topic", "t", "--value", "v",
                            "--delay", "1s", "--at", "1700000000000"),
                        2);
        CU_ASSERT_EQUAL(
            ctl("schedule", "--topic", "t", "--value", "v", "--delay", "soon"),
            2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "not a duration"));
        CU_ASSERT_EQUAL(
            ctl("schedule", "--topic", "t", "--value", "v", "--at", "tomorrow"),
            2);
        CU_ASSERT_EQUAL(ctl("schedule", "--topic", "t", "--value", "v",
                            "--delay", "11000d"),
                        2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "10 years"));
        CU_ASSERT_EQUAL(ctl("schedule", "--topic", "bad/topic", "--value", "v",
                            "--delay", "1s"),
                        2);
        CU_ASSERT_EQUAL(ctl("schedule", "--topic", "t", "--value", "v",
                            "--delay", "1s", "--header", "novalue"),
                        2);
        CU_ASSERT_EQUAL(ctl("schedule", "--topic", "t", "--value", "v",
                            "--delay", "1s", "--header", "kdelay-id=x"),
                        2);
        CU_ASSERT_EQUAL(ctl("schedule", "--bogus"), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown option"));
        CU_ASSERT_EQUAL(ctl("schedule", "--topic"), 2);
        CU_ASSERT_EQUAL(ctl("cancel"), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "task ID is required"));
        CU_ASSERT_EQUAL(ctl("cancel", "a", "b"), 2);
        CU_ASSERT_EQUAL(ctl("cancel", ""), 2);
        CU_ASSERT_EQUAL(ctl("status"), 2);
        CU_ASSERT_EQUAL(ctl("topics", "destroy"), 2);
        CU_ASSERT_EQUAL(ctl_raw("topics", NULL), 2);
        CU_ASSERT_EQUAL(ctl("db", "drop"), 2);
        CU_ASSERT_EQUAL(ctl_raw("status", "-X", "noequals", "id", NULL), 2);
        CU_ASSERT_EQUAL(
            ctl_raw("status", "-X", "no.such.property=1", "id", NULL), 2);
        CU_ASSERT_EQUAL(
            ctl_raw("status", "--mysql", "postgres://x", "id", NULL), 2);
        CU_ASSERT_EQUAL(
            ctl_raw("status", "-c", "/nonexistent.conf", "id", NULL), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent.conf"));
}

static void test_help_on_every_verb(void)
{
        const char *verbs[][2] = {{"schedule", NULL},  {"cancel", NULL},
                                  {"status", NULL},    {"topics", "create"},
                                  {"topics", "check"}, {"db", "migrate"},
                                  {"topics", NULL},    {"db", NULL}};
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
                int rc = verbs[i][1]
                             ? ctl_raw(verbs[i][0], verbs[i][1], "--help", NULL)
                             : ctl_raw(verbs[i][0], "--help", NULL);
                CU_ASSERT_EQUAL(rc, 0);
                CU_ASSERT_PTR_NOT_NULL(strstr(out, "Usage:"));
                CU_ASSERT_PTR_NOT_NULL(strstr(out, "--brokers"));
        }
        CU_ASSERT_EQUAL(ctl_raw("--help", NULL), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "schedule"));
}

/* Runs sql on the test's database; for a statement that returns one
 * number (a count), *value gets it. 0 on success. */
static int db_sql(const char *sql, long long *value)
{
        char use[96];
        int rc = -1;
        MYSQL *conn = it_mysql_connect();
        if (!conn)
                return -1;
        snprintf(use, sizeof(use), "USE `%s`", db);
        if (mysql_query(conn, use) || mysql_query(conn, sql))
                goto out;
        if (value) {
                MYSQL_RES *res = mysql_store_result(conn);
                MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
                if (row && row[0]) {
                        *value = atoll(row[0]);
                        rc = 0;
                }
                if (res)
                        mysql_free_result(res);
                goto out;
        }
        rc = 0;
out:
        if (rc)
                fprintf(stderr, "\n%s: %s\n", sql, mysql_error(conn));
        mysql_close(conn);
        return rc;
}

/* db gc deletes exactly the expired rows, in the batches it says. */
static void gc_deletes_exact_counts(void)
{
        long long now = (long long)kd_now_ms(), day = 86400000LL, left = -1;
        char sql[1024];
        /* Expired: due 40 and 31 days ago (FIRED, FIRING), a cancel whose
         * due time 35 days ago a forwarder noted. Kept: due 29 days ago,
         * a cancel due in 90 days, a cancel never seen (no due time), and
         * a task due 31 days ago but cancelled yesterday (scheduled with
         * an old fire-at: its record is still in its tier topic, and
         * without the row a re-read would fire it). */
        snprintf(sql, sizeof(sql),
                 "INSERT INTO kdelay_fate (task_id, state, fire_at_ms, "
                 "decided_at_ms, updated_at_ms) VALUES "
                 "('gc-1', 'FIRED', %lld, %lld, %lld), "
                 "('gc-2', 'FIRING', %lld, %lld, %lld), "
                 "('gc-3', 'CANCELLED', %lld, %lld, %lld), "
                 "('keep-1', 'FIRED', %lld, %lld, %lld), "
                 "('keep-2', 'CANCELLED', %lld, %lld, %lld), "
                 "('keep-3', 'CANCELLED', NULL, %lld, %lld), "
                 "('keep-4', 'CANCELLED', %lld, %lld, %lld)",
                 now - 40 * day, now - 40 * day, now - 40 * day, now - 31 * day,
                 now - 31 * day, now - 31 * day, now - 35 * day, now - 60 * day,
                 now - 60 * day, now - 29 * day, now - 29 * day, now - 29 * day,
                 now + 90 * day, now - 60 * day, now - 60 * day, now - day,
                 now - day, now - 31 * day, now - day, now - day);
        CU_ASSERT_EQUAL_FATAL(db_sql(sql, NULL), 0);
        /* Runs of delivered claims: one recorded 31 days ago goes, one of
         * 29 days ago stays (the rows' horizon). */
        snprintf(sql, sizeof(sql),
                 "INSERT INTO kdelay_fired_run (owner_prefix, seq_lo, "
                 "seq_hi, created_at_ms) VALUES ('gc:1.1', 1, 5, %lld), "
                 "('gc:1.1', 6, 9, %lld)",
                 now - 31 * day, now - 29 * day);
        CU_ASSERT_EQUAL_FATAL(db_sql(sql, NULL), 0);
        /* Batches of 2: 2, then 1 (below the batch: done). */
        CU_ASSERT_EQUAL(ctl("db", "gc", "--batch", "2"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "deleted 3 rows in 2 batches"));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(out, "deleted 1 runs of delivered claims"));
        /* One closing line on stderr (progress lines only every 5 s). */
        CU_ASSERT_PTR_NOT_NULL(err && strstr(err, "event=gc_done deleted=3 "
                                                  "unclaimed_deleted=0 "
                                                  "runs_deleted=1 "
                                                  "batches=2"));
        CU_ASSERT_EQUAL(db_sql("SELECT seq_lo FROM kdelay_fired_run", &left),
                        0);
        CU_ASSERT_EQUAL(left, 6);
        CU_ASSERT_EQUAL(db_sql("DELETE FROM kdelay_fired_run", NULL), 0);
        CU_ASSERT_EQUAL(
            db_sql("SELECT COUNT(*) FROM kdelay_fate WHERE task_id LIKE "
                   "'keep-%'",
                   &left),
            0);
        CU_ASSERT_EQUAL(left, 4);
        CU_ASSERT_EQUAL(db_sql("SELECT COUNT(*) FROM kdelay_fate", &left), 0);
        CU_ASSERT_EQUAL(left, 4);
        /* Again: nothing left to delete. */
        CU_ASSERT_EQUAL(ctl("db", "gc", "--batch", "2"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "deleted 0 rows in 1 batches"));
        CU_ASSERT_EQUAL(db_sql("DELETE FROM kdelay_fate WHERE task_id LIKE "
                               "'keep-%'",
                               NULL),
                        0);
}

static void test_db_migrate_then_version(void)
{
        CU_ASSERT_EQUAL(ctl("db", "version"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "database 0"));
        CU_ASSERT_EQUAL_FATAL(ctl("db", "migrate"), 0);
        char want[64];
        int latest = kd_schema_latest();
        CU_ASSERT(latest >= 2);
        snprintf(want, sizeof(want), "schema version %d (was 0)", latest);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "event=migration_apply"));
        CU_ASSERT_EQUAL(ctl("db", "migrate"), 0);
        snprintf(want, sizeof(want), "schema version %d (was %d)", latest,
                 latest);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
        CU_ASSERT_EQUAL(ctl("db", "version"), 0);
        snprintf(want, sizeof(want), "database %d", latest);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
        /* gc on this young table deletes nothing, in one batch. */
        CU_ASSERT_EQUAL(ctl("db", "gc", "--batch", "10"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "deleted 0 rows in 1 batches"));
        gc_deletes_exact_counts();
        CU_ASSERT_EQUAL(ctl("db", "gc", "--older-than", "soon"), 2);
        /* Shorter than the 7d tier's retention (2 x 7d + 7d): refused. */
        CU_ASSERT_EQUAL(ctl("db", "gc", "--older-than", "0s"), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "longest tier topic's (21d)"));
        CU_ASSERT_EQUAL(ctl("db", "gc", "--older-than", "20d"), 2);
        CU_ASSERT_EQUAL(ctl("db", "gc", "--older-than", "21d"), 0);
        CU_ASSERT_EQUAL(ctl("db", "gc", "--batch", "0"), 2);
        CU_ASSERT_EQUAL(ctl("db", "gc", "--pause", "-1"), 2);
        CU_ASSERT_EQUAL(ctl("db", "gc", "--pause", "fast"), 2);
        CU_ASSERT_EQUAL(ctl("db", "gc", "--pause", "0"), 0);
}

/* A member of consumer group `group` with client.id `client_id`, joined
 * (its assignment in); NULL on failure. */
static rd_kafka_t *member_join(const char *group, const char *client_id)
{
        const char *props[] = {"group.id", group, "client.id", client_id, NULL};
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_CONSUMER, props);
        if (!rk)
                return NULL;
        rd_kafka_poll_set_consumer(rk);
        rd_kafka_topic_partition_list_t *t =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(t, ctl_target, RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, t);
        rd_kafka_topic_partition_list_destroy(t);
        int64_t deadline = kd_mono_ms() + 30000;
        int joined = 0;
        while (!e && !joined && kd_mono_ms() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
                if (m)
                        rd_kafka_message_destroy(m);
                rd_kafka_topic_partition_list_t *a = NULL;
                if (!rd_kafka_assignment(rk, &a) && a) {
                        joined = a->cnt > 0;
                        rd_kafka_topic_partition_list_destroy(a);
                }
        }
        if (joined)
                return rk;
        rd_kafka_destroy(rk);
        return NULL;
}

static void member_leave(rd_kafka_t *rk)
{
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
}

/* Forgets every version of database dbname above v. */
static void forget_above(const char *dbname, int v)
{
        char sql[200];
        MYSQL *conn = it_mysql_connect();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
        snprintf(sql, sizeof(sql),
                 "DELETE FROM `%s`.kdelay_schema WHERE version > %d", dbname,
                 v);
        CU_ASSERT_EQUAL(mysql_query(conn, sql), 0);
        mysql_close(conn);
}

/* The opt-in step lean-fate (schema 11) on a database that had a schema:
 * migrate stops before it and says how to take it; --enable lean-fate
 * is refused (2) while a forwarder group member does not say it runs
 * 0.4.0 (a 0.3.0 forwarder's client.id is its instance), --force takes
 * it all the same, and with members of 0.4.0 only it goes. */
static void test_db_enable_lean_fate_asks_the_group(void)
{
        char dbname[64], dburl[256], group[96], gprop[128];
        it_unique(dbname, sizeof(dbname), "kdit_lean");
        it_unique(group, sizeof(group), "itctl_lean");
        snprintf(gprop, sizeof(gprop), "forwarder.group_id=%s", group);
        CU_ASSERT_EQUAL_FATAL(it_db_create(dbname, 1, dburl, sizeof(dburl)), 0);
#define CTL_DB(...)                                                            \
        it_ctl(KDELAY_CTL, prefix, dburl, &out, &err, __VA_ARGS__, "-X",       \
               gprop, NULL)
        forget_above(dbname, 10);
        CU_ASSERT_EQUAL(CTL_DB("db", "migrate"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "schema version 10 (was 10)"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "waiting 11 lean-fate"));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(out, "kdelayctl db migrate --enable lean-fate"));
        CU_ASSERT_EQUAL(CTL_DB("db", "version", "--json"), 0);
        cJSON *o = cJSON_Parse(out);
        cJSON *w = cJSON_GetObjectItem(o, "waiting");
        CU_ASSERT_EQUAL(cJSON_GetNumberValue(cJSON_GetObjectItem(w, "version")),
                        11);
        CU_ASSERT_STRING_EQUAL(
            cJSON_GetStringValue(cJSON_GetObjectItem(w, "step")), "lean-fate");
        cJSON_Delete(o);
        rd_kafka_t *old = member_join(group, "fw-old");
        CU_ASSERT_PTR_NOT_NULL_FATAL(old);
        CU_ASSERT_EQUAL(CTL_DB("db", "migrate", "--enable", "lean-fate"), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "refused"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "fw-old@"));
        CU_ASSERT_EQUAL(CTL_DB("db", "version"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "database 10"));
        CU_ASSERT_EQUAL(
            CTL_DB("db", "migrate", "--enable", "lean-fate", "--force"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "schema version 11 (was 10)"));
        CU_ASSERT_PTR_NULL(strstr(out, "waiting"));
        forget_above(dbname, 10);
        member_leave(old);
        char id[128];
        snprintf(id, sizeof(id), "kdelay-forwarder/%s/fw-new",
                 KDELAY_VERSION_STR);
        rd_kafka_t *cur = member_join(group, id);
        CU_ASSERT_PTR_NOT_NULL_FATAL(cur);
        CU_ASSERT_EQUAL(CTL_DB("db", "migrate", "--enable", "lean-fate"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "schema version 11 (was 10)"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "members=1 older=0"));
        member_leave(cur);
#undef CTL_DB
        it_db_drop(dbname);
}

/* How many lines of s are JSON objects; -1 when a non-empty line is not. */
static int json_lines(const char *s)
{
        int n = 0;
        for (const char *l = s; l && *l;) {
                const char *nl = strchr(l, '\n');
                size_t len = nl ? (size_t)(nl - l) : strlen(l);
                if (len) {
                        char *line = strndup(l, len);
                        cJSON *o = line ? cJSON_Parse(line) : NULL;
                        int ok = cJSON_IsObject(o);
                        cJSON_Delete(o);
                        free(line);
                        if (!ok)
                                return -1;
                        n++;
                }
                l = nl ? nl + 1 : l + len;
        }
        return n;
}

/* --json on every verb: JSON objects only, one per line: one document
 * for one answer, JSON lines for a stream. */
static void test_json_on_every_verb(void)
{
        char id[96];
        static const struct {
                const char *args[8];
                int rc; /* its exit code here */
        } runs[] = {
            {{"db", "version", "--json"}, 0},
            {{"db", "migrate", "--json"}, 0},
            {{"db", "gc", "--json"}, 0},
            {{"db", "grants", "--role", "admin", "--json"}, 0},
            {{"topics", "check", "--json"}, 0},
            {{"topics", "create", "--json"}, 0},
            {{"tiers", "plan", "--json"}, 0},
            {{"stats", "--json"}, 1}, /* no forwarder: no member */
            {{"dead", "list", "--json"}, 0},
        };
        for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
                const char *const *a = runs[i].args;
                int rc = ctl(a[0], a[1], a[2], a[3], a[4], a[5]);
                int lines = json_lines(out);
                if (rc != runs[i].rc || lines < 1)
                        printf("\n  %s %s: exit %d, %d JSON lines: %s%s", a[0],
                               a[1], rc, lines, out ? out : "", err ? err : "");
                CU_ASSERT_EQUAL(rc, runs[i].rc);
                CU_ASSERT(lines >= 1);
        }
        /* A task's life in JSON: schedule, status, reschedule, cancel. */
        CU_ASSERT_EQUAL_FATAL(ctl("schedule", "--topic", ctl_target, "--value",
                                  "v", "--delay", "1h", "--json"),
                              0);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        cJSON *o = cJSON_Parse(out);
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, "id");
        CU_ASSERT_FATAL(cJSON_IsString(j));
        snprintf(id, sizeof(id), "%s", j->valuestring);
        cJSON_Delete(o);
        CU_ASSERT_EQUAL(ctl("status", id, "--json"), 0);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        CU_ASSERT_EQUAL(ctl("tasks", "list", "--json", "--limit", "0"), 0);
        CU_ASSERT(json_lines(out) >= 1);
        CU_ASSERT_PTR_NOT_NULL(out && strstr(out, id));
        /* The text form: a table with a header row; --no-headers: rows
         * only; -q: no informational line on stderr. */
        CU_ASSERT_EQUAL(ctl("tasks", "list", "--limit", "0"), 0);
        CU_ASSERT(out && !strncmp(out, "ID ", 3) && strstr(out, id));
        CU_ASSERT_PTR_NOT_NULL(err && strstr(err, "event=tasks_listed"));
        CU_ASSERT_EQUAL(
            ctl("tasks", "list", "--limit", "0", "-q", "--no-headers"), 0);
        CU_ASSERT(out && strncmp(out, "ID ", 3) && strstr(out, id));
        CU_ASSERT(err && !strstr(err, "level=info"));
        CU_ASSERT_EQUAL(ctl("reschedule", id, "--delay", "2h", "--json"), 0);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        o = cJSON_Parse(out);
        j = cJSON_GetObjectItemCaseSensitive(o, "new_id");
        CU_ASSERT_FATAL(cJSON_IsString(j));
        snprintf(id, sizeof(id), "%s", j->valuestring);
        cJSON_Delete(o);
        CU_ASSERT_EQUAL(ctl("cancel", id, "--json"), 0);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "\"CANCELLED\""));
        CU_ASSERT_EQUAL(ctl("audit", "--json"), 0);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        /* One answer, one document: topics check. */
        CU_ASSERT_EQUAL(ctl("topics", "check", "--json"), 0);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "{\"topics\":[{"));
}

/* 1 when s is well-formed UTF-8 (what a JSON reader in strict mode, such
 * as Python's json.loads on decoded text, takes). */
static int utf8_valid(const char *s)
{
        size_t len = s ? strlen(s) : 0;
        for (size_t i = 0, k; i < len; i += k) {
                uint32_t cp;
                if ((k = kd_utf8_seq((const unsigned char *)s + i, len - i,
                                     &cp)) == 0)
                        return 0;
        }
        return s != NULL;
}

/* The string `name` of the one JSON object in out; NULL when not one. */
static char *json_str(const char *name)
{
        cJSON *o = cJSON_Parse(out ? out : "");
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
        char *v = cJSON_IsString(j) ? strdup(j->valuestring) : NULL;
        cJSON_Delete(o);
        return v;
}

/* status --json and cancel --json print exactly one JSON object whatever
 * happens, in valid UTF-8: an id of invalid UTF-8 (each bad byte as
 * U+FFFD), an unknown id, usage errors, MySQL down. */
static void test_json_answers_always(void)
{
        static const char bad[] = "bad\xff\xc0\xaf-id";
        static const char shown[] =
            "bad\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd-id";
        char *v;
        /* Alone (KD_TEST_ONLY) too: the schema and the tier topics. */
        CU_ASSERT_EQUAL_FATAL(ctl("db", "migrate"), 0);
        CU_ASSERT_EQUAL_FATAL(ctl("topics", "create"), 0);
        CU_ASSERT_EQUAL(ctl("status", "--json", bad), 2);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        CU_ASSERT(utf8_valid(out));
        CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "\"fate\":null"));
        v = json_str("id");
        CU_ASSERT(v && !strcmp(v, shown));
        free(v);
        v = json_str("error");
        CU_ASSERT(v && strstr(v, "invalid task id"));
        free(v);
        CU_ASSERT_EQUAL(ctl("cancel", "--json", bad), 2);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        CU_ASSERT(utf8_valid(out));
        v = json_str("id");
        CU_ASSERT(v && !strcmp(v, shown));
        free(v);
        v = json_str("result");
        CU_ASSERT(v && !strcmp(v, "ERROR"));
        free(v);
        /* An id no one knows: UNDECIDED, with --scan too. */
        char unknown[64];
        it_unique(unknown, sizeof(unknown), "ctl-unknown-");
        CU_ASSERT_EQUAL(ctl("status", "--json", unknown), 0);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        v = json_str("fate");
        CU_ASSERT(v && !strcmp(v, "UNDECIDED"));
        free(v);
        CU_ASSERT_EQUAL(ctl("status", "--json", "--scan", unknown), 0);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        /* Usage errors and MySQL down: one object too. */
        CU_ASSERT_EQUAL(ctl("status", "--json"), 2);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        CU_ASSERT_EQUAL(ctl("status", "--json", "--frob", unknown), 2);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        CU_ASSERT_EQUAL(ctl("cancel", "--json", "a", "b"), 2);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        CU_ASSERT_EQUAL(ctl_raw("status", "--json", "--mysql",
                                "mysql://root@127.0.0.1:1/x", unknown, NULL),
                        1);
        CU_ASSERT_EQUAL(json_lines(out), 1);
        v = json_str("error");
        CU_ASSERT(v && strstr(v, "MySQL error"));
        free(v);
        CU_ASSERT_EQUAL(ctl_raw("cancel", "--json", "--mysql",
                                "mysql://root@127.0.0.1:1/x", unknown, NULL),
                        1);
        CU_ASSERT_EQUAL(json_lines(out), 1);

        /* What a user's script sees: Python's json.loads of the text
         * decoded as strict UTF-8 (the reported failure), for status and
         * for each line of cancel -. */
        char cmd[2048], pfx[96];
        snprintf(pfx, sizeof(pfx), "topic_prefix=%s", prefix);
        snprintf(
            cmd, sizeof(cmd),
            "set -e; ctl() { '%s' \"$@\" --brokers '%s' --mysql '%s' "
            "-X '%s' || true; }; "
            "ctl status --json \"$(printf 'bad\\377id')\" >\"$T/s\"; "
            "printf 'bad\\377id\\n%%s\\n' '%s' | ctl cancel --json - "
            ">\"$T/c\"; "
            "python3 -c 'import json, sys\n"
            "s = json.loads(open(sys.argv[1], \"rb\").read()"
            ".decode(\"utf-8\"))\n"
            "assert s[\"id\"] == \"bad\\ufffdid\" and s[\"fate\"] is None, s\n"
            "c = [json.loads(l) for l in open(sys.argv[2], \"rb\").read()"
            ".decode(\"utf-8\").splitlines()]\n"
            "assert [(x[\"id\"], x[\"result\"]) for x in c] == "
            "[(\"bad\\ufffdid\", \"ERROR\"), (sys.argv[3], \"CANCELLED\")], c\n"
            "print(\"json ok\")' \"$T/s\" \"$T/c\" '%s'",
            KDELAY_CTL, it_brokers(), url, pfx, unknown, unknown);
        char tdir[] = "/tmp/kdelay-it-json-XXXXXX";
        CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tdir));
        char tenv[64];
        snprintf(tenv, sizeof(tenv), "T=%s", tdir);
        char *sh[] = {"/bin/sh", "-c", cmd, NULL};
        char *env[] = {tenv, NULL};
        free(out);
        free(err);
        out = err = NULL;
        int rc = it_run(sh, env, &out, &err);
        if (rc != 0 || !out || !strstr(out, "json ok"))
                printf("\n  python check: exit %d\n%s%s", rc, out ? out : "",
                       err ? err : "");
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "json ok"));
        char f[96];
        snprintf(f, sizeof(f), "%s/s", tdir);
        unlink(f);
        snprintf(f, sizeof(f), "%s/c", tdir);
        unlink(f);
        rmdir(tdir);
}

static void test_topics_create_then_check(void)
{
        CU_ASSERT_EQUAL(ctl("topics", "check"), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "missing"));
        CU_ASSERT_EQUAL_FATAL(ctl("topics", "create", "--partitions", "3",
                                  "--replication-factor", "1"),
                              0);
        /* The default ladder, named as durations are written (90s:
         * 1m30s). */
        const char *tiers[] = {"1s",  "30s", "1m", "1m30s", "2m",
                               "3m",  "5m",  "8m", "12m",   "20m",
                               "30m", "45m", "1h", "1h30m", "4h",
                               "6h",  "16h", "1d", "2d12h", "7d"};
        for (int i = 0; i < 20; i++) {
                char line[160];
                snprintf(line, sizeof(line), "%s.tier.%s", prefix, tiers[i]);
                CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
        }
        CU_ASSERT_PTR_NOT_NULL(strstr(out, ".dead"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "created"));
        CU_ASSERT_PTR_NULL(strstr(out, "exists"));
        /* Again: everything exists already, nothing fails. */
        CU_ASSERT_EQUAL(ctl("topics", "create"), 0);
        CU_ASSERT_PTR_NULL(strstr(out, "created"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "exists"));
        CU_ASSERT_EQUAL(ctl("topics", "check"), 0);
        CU_ASSERT_PTR_NULL(strstr(out, "missing"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, " 3 "));
        /* A tier added to the config is found missing. */
        CU_ASSERT_EQUAL(ctl("topics", "check", "-X", "tiers=1s,45s,1m,30m,7d"),
                        1);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "tier.45s"));
}

/* A tier topic someone created by hand with CreateTime and compaction. */
static void test_topics_check_finds_bad_config(void)
{
        char bad_prefix[64], topic[128], errstr[256];
        it_unique(bad_prefix, sizeof(bad_prefix), "itbad");
        snprintf(topic, sizeof(topic), "%s.tier.1s", bad_prefix);
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        rd_kafka_NewTopic_t *nt =
            rd_kafka_NewTopic_new(topic, 1, 1, errstr, sizeof(errstr));
        rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
        rd_kafka_NewTopic_set_config(nt, "retention.ms", "1000");
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
        size_t n;
        const rd_kafka_topic_result_t **res =
            rd_kafka_CreateTopics_result_topics(
                rd_kafka_event_CreateTopics_result(ev), &n);
        CU_ASSERT_EQUAL_FATAL(n, 1);
        CU_ASSERT_EQUAL_FATAL(rd_kafka_topic_result_error(res[0]), 0);
        rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
        rd_kafka_destroy(rk);
        CU_ASSERT_EQUAL_FATAL(it_wait_topic(topic), 0);

        char pfx[96];
        snprintf(pfx, sizeof(pfx), "topic_prefix=%s", bad_prefix);
        CU_ASSERT_EQUAL(ctl_raw("topics", "check", "--brokers", it_brokers(),
                                "-X", pfx, "-X", "tiers=1s", NULL),
                        1);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "must be LogAppendTime"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "cleanup.policy is compact"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "retention.ms is 1000"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "misconfigured"));
}

static void test_schedule_prints_id_and_writes_record(void)
{
        int rc = ctl("schedule", "--topic", ctl_target, "--key", "k1",
                     "--value", "hello", "--delay", "75s", "--header",
                     "trace=t-1", "--header", "tenant=acme");
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        char id[64];
        CU_ASSERT_EQUAL(sscanf(out, "%63s", id), 1);
        CU_ASSERT_EQUAL(strlen(id), KDELAY_ID_GEN_LEN);
        CU_ASSERT_EQUAL(strlen(out), KDELAY_ID_GEN_LEN + 1); /* id + \n */

        /* And one at an RFC 3339 time with a given id. */
        rc = ctl("schedule", "--topic", ctl_target, "--value", "at", "--at",
                 "2031-01-02T03:04:05.678+01:00", "--id", "ctl-at-1");
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_STRING_EQUAL(out, "ctl-at-1\n");

        char t1m[128], t7d[128];
        snprintf(t1m, sizeof(t1m), "%s.tier.1m", prefix);
        snprintf(t7d, sizeof(t7d), "%s.tier.7d", prefix);
        const char *tl[] = {t1m, t7d, NULL};
        it_msg_t msgs[4];
        size_t got = it_consume(tl, msgs, 2, 20000);
        CU_ASSERT_EQUAL_FATAL(got, 2);
        for (size_t i = 0; i < got; i++) {
                char *hid = it_header(&msgs[i], KDELAY_HDR_ID);
                char *fa = it_header(&msgs[i], KDELAY_HDR_FIRE_AT);
                char *tr = it_header(&msgs[i], "trace");
                const char *topic = msgs[i].topic;
                if (!strcmp(hid, id)) {
                        CU_ASSERT_STRING_EQUAL(topic, t1m);
                        CU_ASSERT_STRING_EQUAL(tr, "t-1");
                        char *tn = it_header(&msgs[i], "tenant");
                        CU_ASSERT_STRING_EQUAL(tn, "acme");
                        free(tn);
                        CU_ASSERT(msgs[i].key_len == 2 &&
                                  !memcmp(msgs[i].key, "k1", 2));
                        CU_ASSERT(msgs[i].len == 5 &&
                                  !memcmp(msgs[i].value, "hello", 5));
                } else {
                        CU_ASSERT_STRING_EQUAL(hid, "ctl-at-1");
                        CU_ASSERT_STRING_EQUAL(topic, t7d);
                        /* 2031-01-02T02:04:05.678Z */
                        CU_ASSERT_STRING_EQUAL(fa, "1925085845678");
                        CU_ASSERT_PTR_NULL(tr);
                }
                free(hid);
                free(fa);
                free(tr);
                it_msg_free(&msgs[i]);
        }
}

/* A topic that does not exist is refused at once, named, exit 1: the
 * target (unless --no-target-check) and the tier topic (a wrong
 * topic_prefix), never a "Message timed out" 30 s later. */
static void test_schedule_refuses_missing_topics(void)
{
        char missing[128], want[192], other[96];
        snprintf(missing, sizeof(missing), "%s.no.such.topic", prefix);
        int64_t t0 = kd_now_ms();
        CU_ASSERT_EQUAL(ctl("schedule", "--topic", missing, "--value", "v",
                            "--delay", "1h"),
                        1);
        snprintf(want, sizeof(want), "target topic '%s' does not exist",
                 missing);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "--no-target-check"));
        CU_ASSERT_STRING_EQUAL(out, "");
        /* -X producer.check_target=0 and --no-target-check: accepted. */
        CU_ASSERT_EQUAL(ctl("schedule", "--topic", missing, "--value", "v",
                            "--delay", "1h", "--no-target-check"),
                        0);
        CU_ASSERT_EQUAL(strlen(out), KDELAY_ID_GEN_LEN + 1);
        CU_ASSERT_EQUAL(ctl("schedule", "--topic", missing, "--value", "v",
                            "--delay", "1h", "-X", "producer.check_target=0"),
                        0);
        /* A prefix without tier topics: the tier topic is named, with the
         * command that creates it. */
        snprintf(other, sizeof(other), "%s.none", prefix);
        CU_ASSERT_EQUAL(it_ctl(KDELAY_CTL, other, url, &out, &err, "schedule",
                               "--topic", ctl_target, "--value", "v", "--delay",
                               "1h", "--no-target-check", NULL),
                        1);
        snprintf(want, sizeof(want), "tier topic '%s.tier.", other);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "' does not exist"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "kdelayctl topics create"));
        CU_ASSERT_PTR_NULL(strstr(err, "timed out"));
        /* At once: nowhere near message.timeout.ms (30 s here). */
        CU_ASSERT(kd_now_ms() - t0 < 15000);
}

/* Appends a dead letter of task id (to target, reason, Kafka error err
 * or NULL) to the dead-letter topic as the forwarder writes one: the
 * task's record with kdelay-dead-reason (and kdelay-dead-error). */
static int dead_letter(rd_kafka_t *rk, const char *id, const char *target,
                       const char *key, const char *value, size_t value_len,
                       const char *reason, const char *kerr)
{
        char dead[128], fire_at[32];
        snprintf(dead, sizeof(dead), "%s.dead", prefix);
        snprintf(fire_at, sizeof(fire_at), "%lld",
                 (long long)kd_now_ms() - 60000);
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        rd_kafka_header_add(h, KDELAY_HDR_ID, -1, id, -1);
        rd_kafka_header_add(h, KDELAY_HDR_TARGET, -1, target, -1);
        rd_kafka_header_add(h, KDELAY_HDR_FIRE_AT, -1, fire_at, -1);
        rd_kafka_header_add(h, KDELAY_HDR_VERSION, -1, KDELAY_WIRE_VERSION, -1);
        rd_kafka_header_add(h, "trace", -1, "t-dead", -1);
        rd_kafka_header_add(h, KDELAY_HDR_DEAD_REASON, -1, reason, -1);
        if (kerr)
                rd_kafka_header_add(h, KDELAY_HDR_DEAD_ERROR, -1, kerr, -1);
        rd_kafka_resp_err_t e =
            rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(dead),
                              RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
                              RD_KAFKA_V_VALUE((void *)value, value_len),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
        if (e) {
                rd_kafka_headers_destroy(h);
                printf("\n  dead letter %s: %s", id, rd_kafka_err2str(e));
                return -1;
        }
        return 0;
}

/* The JSON answer about task id among the lines of s (NULL when none);
 * caller deletes it. */
static cJSON *answer_of(const char *s, const char *id)
{
        for (const char *l = s; l && *l;) {
                const char *nl = strchr(l, '\n');
                size_t len = nl ? (size_t)(nl - l) : strlen(l);
                char *line = strndup(l, len);
                cJSON *o = line ? cJSON_Parse(line) : NULL;
                free(line);
                const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, "id");
                if (cJSON_IsString(j) && !strcmp(j->valuestring, id))
                        return o;
                cJSON_Delete(o);
                l = nl ? nl + 1 : l + len;
        }
        return NULL;
}

/* o's string member name, or "" (never NULL). */
static const char *str_of(const cJSON *o, const char *name)
{
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
        return cJSON_IsString(j) ? j->valuestring : "";
}

/* The line of s that begins with id followed by a space; "" when none
 * (copied into buf). */
static const char *line_of(const char *s, const char *id, char *buf,
                           size_t size)
{
        size_t n = strlen(id);
        buf[0] = '\0';
        for (const char *l = s; l && *l;) {
                const char *nl = strchr(l, '\n');
                size_t len = nl ? (size_t)(nl - l) : strlen(l);
                if (len > n && !strncmp(l, id, n) && l[n] == ' ') {
                        snprintf(buf, size, "%.*s", (int)len, l);
                        break;
                }
                l = nl ? nl + 1 : l + len;
        }
        return buf;
}

/* dead replay checks each target before replaying (issue 19): (a) a
 * keyless record for a compacted topic, (b) 3000 bytes for a topic with
 * max.message.bytes=2000 and (d) a record for a missing topic would fail
 * as they did: WOULD_FAIL in a dry run, REFUSED in a replay, with why;
 * (c) a keyed small record for the compacted topic is replayed. */
static void test_dead_replay_checks_target(void)
{
        char cmp[128], small[128], missing[128], id[4][96];
        snprintf(cmp, sizeof(cmp), "%s-compacted", prefix);
        snprintf(small, sizeof(small), "%s-small", prefix);
        snprintf(missing, sizeof(missing), "%s-missing", prefix);
        for (int i = 0; i < 4; i++)
                snprintf(id[i], sizeof(id[i]), "%s-dead-%c", prefix, 'a' + i);
        CU_ASSERT_EQUAL_FATAL(
            it_create_topic_config(cmp, 1, "cleanup.policy", "compact"), 0);
        CU_ASSERT_EQUAL_FATAL(
            it_create_topic_config(small, 1, "max.message.bytes", "2000"), 0);
        char *big = malloc(3000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(big);
        memset(big, 'x', 3000);
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        CU_ASSERT_EQUAL(dead_letter(rk, id[0], cmp, NULL, "v", 1,
                                    "target-refused", "INVALID_RECORD"),
                        0);
        CU_ASSERT_EQUAL(dead_letter(rk, id[1], small, "k", big, 3000,
                                    "too-large", "MSG_SIZE_TOO_LARGE"),
                        0);
        CU_ASSERT_EQUAL(dead_letter(rk, id[2], cmp, "k", "v", 1,
                                    "target-refused", "INVALID_RECORD"),
                        0);
        CU_ASSERT_EQUAL(dead_letter(rk, id[3], missing, "k", "v", 1,
                                    "target-unavailable", NULL),
                        0);
        CU_ASSERT_EQUAL(rd_kafka_flush(rk, 30000), 0);
        rd_kafka_destroy(rk);
        free(big);

        static const char *const result[4] = {"WOULD_FAIL", "WOULD_FAIL",
                                              "WOULD_REPLAY", "WOULD_FAIL"};
        static const char *const failure[4] = {"needs-key", "too-large", "",
                                               "target-missing"};
        static const char *const why[4] = {"compacted topic needs a key",
                                           "too large for the target (", "",
                                           "target missing"};
        CU_ASSERT_EQUAL(ctl("dead", "replay", "--dry-run", "--json", "--id",
                            id[0], "--id", id[1], "--id", id[2], "--id", id[3]),
                        1);
        printf("\n  dead replay --dry-run --json:\n%s%s", out ? out : "",
               err ? err : "");
        for (int i = 0; i < 4; i++) {
                cJSON *o = answer_of(out, id[i]);
                CU_ASSERT_PTR_NOT_NULL_FATAL(o);
                CU_ASSERT_STRING_EQUAL(str_of(o, "result"), result[i]);
                CU_ASSERT_STRING_EQUAL(str_of(o, "failure"), failure[i]);
                CU_ASSERT_PTR_NOT_NULL(strstr(str_of(o, "why"), why[i]));
                CU_ASSERT_STRING_EQUAL(str_of(o, "target_check"),
                                       i == 2 ? "ok" : "failed");
                cJSON_Delete(o);
        }
        cJSON *o = answer_of(out, id[1]);
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, "size_estimate");
        CU_ASSERT(cJSON_IsNumber(j) && j->valuedouble > 3000);
        j = cJSON_GetObjectItemCaseSensitive(o, "max_message_bytes");
        CU_ASSERT(cJSON_IsNumber(j) && j->valuedouble == 2000);
        CU_ASSERT_PTR_NOT_NULL(
            strstr(str_of(o, "why"), "> max.message.bytes 2000 of \""));
        cJSON_Delete(o);
        o = answer_of(out, id[3]);
        j = cJSON_GetObjectItemCaseSensitive(o, "target_exists");
        CU_ASSERT(cJSON_IsFalse(j));
        cJSON_Delete(o);

        /* The replay: the same answers, only (c) scheduled. */
        CU_ASSERT_EQUAL(ctl("dead", "replay", "--id", id[0], "--id", id[1],
                            "--id", id[2], "--id", id[3]),
                        1);
        printf("  dead replay:\n%s", out ? out : "");
        char line[1024];
        for (int i = 0; i < 4; i++) {
                line_of(out, id[i], line, sizeof(line));
                if (i == 2) {
                        CU_ASSERT_PTR_NOT_NULL(strstr(line, " REPLAYED "));
                        continue;
                }
                CU_ASSERT_PTR_NOT_NULL(strstr(line, " REFUSED "));
                CU_ASSERT_PTR_NOT_NULL(strstr(line, why[i]));
        }
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "target_refused=3"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "replayed=1"));

        /* Once more in JSON: the others refused again; (c) SKIPPED, as
         * the help promises, though no forwarder here gave its copy a
         * fate: the copy is still pending in a tier topic. */
        CU_ASSERT_EQUAL(ctl("dead", "replay", "--json", "--id", id[0], "--id",
                            id[1], "--id", id[2], "--id", id[3]),
                        1);
        for (int i = 0; i < 4; i++) {
                o = answer_of(out, id[i]);
                CU_ASSERT_PTR_NOT_NULL_FATAL(o);
                CU_ASSERT_STRING_EQUAL(str_of(o, "result"),
                                       i == 2 ? "SKIPPED" : "REFUSED");
                if (i == 2) {
                        CU_ASSERT_PTR_NOT_NULL(
                            strstr(str_of(o, "new_id"), "~replay-"));
                        CU_ASSERT_PTR_NOT_NULL(strstr(
                            str_of(o, "why"), "replayed before: pending in "));
                } else {
                        CU_ASSERT_STRING_EQUAL(str_of(o, "failure"),
                                               failure[i]);
                }
                cJSON_Delete(o);
        }
        /* (c) alone: nothing to do, exit 0, SKIPPED in text too. */
        CU_ASSERT_EQUAL(ctl("dead", "replay", "--id", id[2]), 0);
        line_of(out, id[2], line, sizeof(line));
        CU_ASSERT_PTR_NOT_NULL(strstr(line, " SKIPPED "));
        CU_ASSERT_PTR_NOT_NULL(strstr(line, "replayed before: pending in"));
        CU_ASSERT_EQUAL(ctl("dead", "replay", "--dry-run", "--id", id[2]), 0);
        line_of(out, id[2], line, sizeof(line));
        CU_ASSERT_PTR_NOT_NULL(strstr(line, " SKIPPED "));

        /* Only (c) reached a tier topic: once. */
        char t1s[128];
        snprintf(t1s, sizeof(t1s), "%s.tier.1s", prefix);
        const char *tl[] = {t1s, NULL};
        it_msg_t *msgs = NULL;
        size_t got = it_consume_all(tl, &msgs, 3000, 20000);
        int replays[4] = {0}, same_id = 0;
        for (size_t i = 0; i < got; i++) {
                char *of = it_header(&msgs[i], KDELAY_HDR_REPLAY_OF);
                char *nid = it_header(&msgs[i], KDELAY_HDR_ID);
                for (int k = 0; of && k < 4; k++)
                        replays[k] += !strcmp(of, id[k]);
                same_id += of && nid && !strcmp(of, id[2]) &&
                           !strncmp(nid, id[2], strlen(id[2])) &&
                           !strncmp(nid + strlen(id[2]), "~replay-", 8);
                free(of);
                free(nid);
                it_msg_free(&msgs[i]);
        }
        free(msgs);
        printf("  tier records replaying a..d: %d %d %d %d\n", replays[0],
               replays[1], replays[2], replays[3]);
        CU_ASSERT_EQUAL(replays[0], 0);
        CU_ASSERT_EQUAL(replays[1], 0);
        CU_ASSERT_EQUAL(replays[2], 1);
        CU_ASSERT_EQUAL(same_id, 1);
        CU_ASSERT_EQUAL(replays[3], 0);
}

static kd_fate_store_t *forwarder_store(kdelay_conf_t **confp)
{
        kd_fate_store_t *st = NULL;
        *confp = it_conf_new(NULL, url);
        CU_ASSERT_EQUAL(kd_fate_store_new(&st, *confp), KDELAY_OK);
        return st;
}

/* The audit summary's number `name` in JSON output out; -1 when absent. */
static double audit_num(const char *json, const char *name)
{
        cJSON *o = cJSON_Parse(json ? json : "");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "summary");
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(s, name);
        double v = cJSON_IsNumber(j) ? j->valuedouble : -1;
        cJSON_Delete(o);
        return v;
}

/* The JSON audit's dead letter with this id: its state, or NULL. */
static const char *audit_dead_state(const char *json, const char *id, char *buf,
                                    size_t size)
{
        cJSON *o = cJSON_Parse(json ? json : "");
        const cJSON *d;
        const char *found = NULL;
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(o, "dead"))
        {
                const cJSON *i = cJSON_GetObjectItemCaseSensitive(d, "id");
                const cJSON *st = cJSON_GetObjectItemCaseSensitive(d, "state");
                if (cJSON_IsString(i) && !strcmp(i->valuestring, id) &&
                    cJSON_IsString(st)) {
                        kd_strlcpy(buf, st->valuestring, size);
                        found = buf;
                }
        }
        cJSON_Delete(o);
        return found;
}

/* A dead letter still needs action (audit exits 1); once replayed it is
 * history (exit 0, counted as dead_replayed), though its copy has not
 * fired (no forwarder here): the copy is pending in a tier topic. One
 * whose task was cancelled needs none: listed as `cancelled`, counted as
 * dead_cancelled, never a finding. */
static void test_audit_replayed_dead_letters_are_history(void)
{
        char saved[sizeof(prefix)], eid[128], cid[128], st[32];
        memcpy(saved, prefix, sizeof(prefix));
        it_unique(prefix, sizeof(prefix), "itaudit");
        snprintf(eid, sizeof(eid), "%s-dead-e", prefix);
        snprintf(cid, sizeof(cid), "%s-dead-c", prefix);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create(prefix, url, 1), 0);
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        CU_ASSERT_EQUAL(dead_letter(rk, eid, ctl_target, "k", "v", 1,
                                    "target-unavailable", NULL),
                        0);
        CU_ASSERT_EQUAL(dead_letter(rk, cid, ctl_target, "k", "v", 1,
                                    "target-unavailable", NULL),
                        0);
        CU_ASSERT_EQUAL(rd_kafka_flush(rk, 30000), 0);
        rd_kafka_destroy(rk);
        /* Its task cancelled afterwards: nothing left to act on. */
        CU_ASSERT_EQUAL(ctl("cancel", cid), 0);

        CU_ASSERT_EQUAL(ctl("audit", "--json"), 1);
        CU_ASSERT_EQUAL(audit_num(out, "dead_letters"), 2);
        CU_ASSERT_EQUAL(audit_num(out, "dead_replayed"), 0);
        CU_ASSERT_EQUAL(audit_num(out, "dead_cancelled"), 1);
        CU_ASSERT_EQUAL(audit_num(out, "findings"), 1);
        const char *s = audit_dead_state(out, eid, st, sizeof(st));
        CU_ASSERT(s && !strcmp(s, "open"));
        s = audit_dead_state(out, cid, st, sizeof(st));
        CU_ASSERT(s && !strcmp(s, "cancelled"));
        CU_ASSERT_EQUAL(ctl("dead", "replay", "--id", eid), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, " REPLAYED "));
        CU_ASSERT_EQUAL(ctl("audit", "--json"), 0);
        CU_ASSERT_EQUAL(audit_num(out, "dead_letters"), 2);
        CU_ASSERT_EQUAL(audit_num(out, "dead_replayed"), 1);
        CU_ASSERT_EQUAL(audit_num(out, "dead_cancelled"), 1);
        CU_ASSERT_EQUAL(audit_num(out, "findings"), 0);
        CU_ASSERT_PTR_NULL(audit_dead_state(out, eid, st, sizeof(st)));
        s = audit_dead_state(out, cid, st, sizeof(st));
        CU_ASSERT(s && !strcmp(s, "cancelled"));
        CU_ASSERT_EQUAL(ctl("audit"), 0);
        printf("\n  audit after the replay:\n%s", out ? out : "");
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "dead_replayed=1 dead_cancelled=1 "
                                           "fired_after_cancel=0 findings=0"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "replayed=1 cancelled=1 window="));
        char row[200];
        snprintf(row, sizeof(row), "%-40s %-9s ", cid, "cancelled");
        CU_ASSERT_PTR_NOT_NULL(strstr(out, row));
        memcpy(prefix, saved, sizeof(prefix));
}

static void test_cancel_and_status(void)
{
        char id[64], errstr[256];
        it_unique(id, sizeof(id), "ctl-task-");
        CU_ASSERT_EQUAL(ctl("status", id), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "UNDECIDED"));
        CU_ASSERT_EQUAL(ctl("cancel", id), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "CANCELLED"));
        CU_ASSERT_EQUAL(ctl("cancel", id), 0);
        /* An id is the task's identity: scheduling one that has a fate
         * goes ahead, with a warning that the task will be dropped. */
        CU_ASSERT_EQUAL(ctl("schedule", "--topic", ctl_target, "--value", "v",
                            "--delay", "1h", "--id", id),
                        0);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "already has a fate (CANCELLED)"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, id));
        CU_ASSERT_EQUAL_FATAL(ctl("status", "--json", id), 0);
        cJSON *j = cJSON_Parse(out);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(j, "fate")->valuestring,
                               "CANCELLED");
        CU_ASSERT_STRING_EQUAL(cJSON_GetObjectItem(j, "id")->valuestring, id);
        CU_ASSERT(cJSON_IsNumber(cJSON_GetObjectItem(j, "decided_at_ms")));
        CU_ASSERT(cJSON_IsNull(cJSON_GetObjectItem(j, "fire_at_ms")));
        cJSON_Delete(j);

        /* The too-late path: a forwarder claimed the task (FIRING). */
        char late[64];
        kdelay_conf_t *conf;
        kd_fate_store_t *st = forwarder_store(&conf);
        it_unique(late, sizeof(late), "ctl-late-");
        kd_fate_claim_t c = {late, strlen(late), 1700000000000LL,
                             KDELAY_FATE_UNDECIDED};
        CU_ASSERT_EQUAL_FATAL(
            kd_fate_claim(st, &c, 1, "fw-1", errstr, sizeof(errstr)), 0);
        CU_ASSERT_EQUAL(c.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(ctl("cancel", late), 3);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "too late"));
        CU_ASSERT_STRING_EQUAL(out, "");
        const char *ids[] = {late};
        size_t lens[] = {strlen(late)};
        CU_ASSERT_EQUAL(
            kd_fate_mark_fired(st, ids, lens, 1, errstr, sizeof(errstr)), 0);
        CU_ASSERT_EQUAL(ctl("cancel", late), 3);
        CU_ASSERT_EQUAL(ctl("status", late), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "FIRED"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "fw-1"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "2023-11-14T22:13:20.000Z"));
        kd_fate_store_destroy(st);
        kdelay_conf_destroy(conf);

        /* cancel -: ids from standard input, one answer line each; the
         * exit code is the worst answer's (too late: 3). */
        char cmd[1024], pfx[96], fresh[64];
        it_unique(fresh, sizeof(fresh), "ctl-batch-");
        snprintf(pfx, sizeof(pfx), "topic_prefix=%s", prefix);
        snprintf(cmd, sizeof(cmd),
                 "printf '%%s\\n\\n# a comment\\n  %%s  \\n' '%s' '%s' | "
                 "'%s' cancel - --brokers '%s' --mysql '%s' -X '%s'%s",
                 fresh, late, KDELAY_CTL, it_brokers(), url, pfx, "");
        char *sh[] = {"/bin/sh", "-c", cmd, NULL};
        free(out);
        free(err);
        out = err = NULL;
        CU_ASSERT_EQUAL(it_run(sh, NULL, &out, &err), 3);
        char want[160];
        snprintf(want, sizeof(want), "%s CANCELLED\n%s TOO_LATE\n", fresh,
                 late);
        CU_ASSERT_STRING_EQUAL(out, want);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "event=cancel_done ids=2 exit=3"));
        /* A NUL byte makes its line alone an error (reported by number,
         * exit 2): the id on the next line is still cancelled and
         * answered. */
        char after_nul[64];
        it_unique(after_nul, sizeof(after_nul), "ctl-nul-");
        snprintf(cmd, sizeof(cmd),
                 "printf 'a\\000b\\n%%s\\n' '%s' | '%s' cancel - --brokers "
                 "'%s' --mysql '%s' -X '%s'",
                 after_nul, KDELAY_CTL, it_brokers(), url, pfx);
        free(out);
        free(err);
        out = err = NULL;
        CU_ASSERT_EQUAL(it_run(sh, NULL, &out, &err), 2);
        snprintf(want, sizeof(want), "%s CANCELLED\n", after_nul);
        CU_ASSERT_STRING_EQUAL(out, want);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "line 1: holds a NUL byte"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "event=cancel_done ids=1 exit=2"));
        CU_ASSERT_EQUAL(ctl("status", after_nul), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "CANCELLED"));
        /* --json: one object per id. */
        snprintf(cmd, sizeof(cmd),
                 "printf '%%s\\n' '%s' | '%s' cancel --json - --brokers '%s' "
                 "--mysql '%s' -X '%s'",
                 fresh, KDELAY_CTL, it_brokers(), url, pfx);
        free(out);
        free(err);
        out = err = NULL;
        CU_ASSERT_EQUAL(it_run(sh, NULL, &out, &err), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"result\":\"CANCELLED\""));

        /* MySQL down: exit 1, not 0 or 3. */
        CU_ASSERT_EQUAL(ctl_raw("cancel", "--mysql",
                                "mysql://root@127.0.0.1:1/x", id, NULL),
                        1);
}

static void test_password_from_environment(void)
{
        MYSQL *conn = it_mysql_connect();
        char sql[256], user[32], user_url[256];
        CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
        snprintf(user, sizeof(user), "kdit%d", (int)getpid());
        snprintf(sql, sizeof(sql),
                 "CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY 's3cr3t'",
                 user);
        CU_ASSERT_EQUAL_FATAL(mysql_query(conn, sql), 0);
        snprintf(sql, sizeof(sql), "GRANT ALL ON `%s`.* TO '%s'@'%%'", db,
                 user);
        CU_ASSERT_EQUAL(mysql_query(conn, sql), 0);
        /* Same server and database as url, as the new user. */
        const char *at = strrchr(url, '@');
        snprintf(user_url, sizeof(user_url), "mysql://%s%s", user, at);
        char *good[] = {"KDELAY_MYSQL_PASSWORD=s3cr3t", NULL};
        char *bad[] = {"KDELAY_MYSQL_PASSWORD=wrong", NULL};
        char *argv[] = {KDELAY_CTL, "status",  "--mysql",
                        user_url,   "some-id", NULL};
        free(out);
        free(err);
        CU_ASSERT_EQUAL(it_run(argv, good, &out, &err), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "UNDECIDED"));
        free(out);
        free(err);
        CU_ASSERT_EQUAL(it_run(argv, bad, &out, &err), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "Access denied"));
        /* The password never appears in what kdelayctl prints. */
        CU_ASSERT_PTR_NULL(strstr(err, "wrong"));

        /* From a file (systemd's LoadCredential), its first line; one that
         * cannot be read is named, and nothing of a secret shown. */
        char file[64], xfile[96];
        snprintf(file, sizeof(file), "/tmp/kdit-pw-%d", (int)getpid());
        FILE *fp = fopen(file, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
        fputs("s3cr3t\n", fp);
        fclose(fp);
        snprintf(xfile, sizeof(xfile), "mysql.password_file=%s", file);
        char *fargv[] = {KDELAY_CTL, "status", "--mysql", user_url,
                         "-X",       xfile,    "some-id", NULL};
        /* Others may read it: refused (a configuration error), with the
         * fix. */
        CU_ASSERT_EQUAL(chmod(file, 0644), 0);
        free(out);
        free(err);
        CU_ASSERT_EQUAL(it_run(fargv, bad, &out, &err), 2);
        CU_ASSERT_PTR_NOT_NULL(err && strstr(err, "chmod 600"));
        CU_ASSERT_EQUAL(chmod(file, 0600), 0);
        free(out);
        free(err);
        CU_ASSERT_EQUAL(it_run(fargv, bad, &out, &err), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "UNDECIDED"));
        /* The same file as a reference: mysql.password=file:PATH. */
        char xref[96];
        snprintf(xref, sizeof(xref), "mysql.password=file:%s", file);
        char *rargv[] = {KDELAY_CTL, "status", "--mysql", user_url,
                         "-X",       xref,     "some-id", NULL};
        free(out);
        free(err);
        CU_ASSERT_EQUAL(it_run(rargv, bad, &out, &err), 0);
        CU_ASSERT_PTR_NOT_NULL(out && strstr(out, "UNDECIDED"));
        unlink(file);
        free(out);
        free(err);
        CU_ASSERT_NOT_EQUAL(it_run(fargv, NULL, &out, &err), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "mysql.password_file"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, file));
        snprintf(sql, sizeof(sql), "DROP USER '%s'@'%%'", user);
        mysql_query(conn, sql);
        mysql_close(conn);
}

/* tiers plan: the default ladder's cost (issue 44: mean <= 4), with a
 * read lag, the older ladders', bad input. */
static void test_tiers_plan(void)
{
        CU_ASSERT_EQUAL_FATAL(ctl("tiers", "plan", "--json"), 0);
        cJSON *j = cJSON_Parse(out);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        double mean = cJSON_GetObjectItem(j, "writes_mean")->valuedouble;
        double p99 = cJSON_GetObjectItem(j, "writes_p99")->valuedouble;
        printf("\n  default ladder: writes/task mean %.2f p99 %.0f\n", mean,
               p99);
        CU_ASSERT(mean <= 4.0);
        CU_ASSERT(p99 <= 10);
        CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(j, "tiers")),
                        20);
        CU_ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(j, "target_met")));
        CU_ASSERT_EQUAL(cJSON_GetObjectItem(j, "writes_target")->valuedouble,
                        4.0);
        CU_ASSERT_EQUAL(cJSON_GetObjectItem(j, "lag_ms")->valuedouble, 0);
        cJSON_Delete(j);
        CU_ASSERT_EQUAL(ctl("tiers", "plan", "--lag", "1s"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "read lag 1s"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "target        mean <= 4.00: met"));
        CU_ASSERT_EQUAL(ctl("tiers", "plan", "-X",
                            "tiers=1s,5s,15s,1m,5m,10m,30m,2h,6h,1d,3d,7d"),
                        0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "(12 tiers)"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "writes/task   mean 5.64"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "MISSED by 1.64"));
        CU_ASSERT_EQUAL(ctl("tiers", "plan", "-X", "tiers=1s,1m,30m,7d"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "(4 tiers)"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "writes/task   mean 41."));
        CU_ASSERT_EQUAL(ctl("tiers", "plan", "--dist", "normal:1s:2s"), 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown distribution"));
        CU_ASSERT_EQUAL(ctl("tiers", "plan", "--samples", "0"), 2);
        CU_ASSERT_EQUAL(ctl("tiers", "plan", "--lag", "soon"), 2);
        CU_ASSERT_EQUAL(ctl("tiers", "plan", "--target", "0"), 2);
        CU_ASSERT_EQUAL(ctl("tiers", "frob"), 2);
        CU_ASSERT_EQUAL(ctl("tiers", "plan", "--help"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "loguniform:MIN:MAX"));
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_usage_errors_exit_2), KD_TEST(test_tiers_plan),
            KD_TEST(test_help_on_every_verb),
            KD_TEST(test_db_migrate_then_version),
            KD_TEST(test_db_enable_lean_fate_asks_the_group),
            KD_TEST(test_topics_create_then_check),
            KD_TEST(test_topics_check_finds_bad_config),
            KD_TEST(test_schedule_prints_id_and_writes_record),
            KD_TEST(test_schedule_refuses_missing_topics),
            KD_TEST(test_cancel_and_status),
            KD_TEST(test_password_from_environment),
            KD_TEST(test_json_on_every_verb), KD_TEST(test_json_answers_always),
            /* Last: audit finds its dead letters. */
            KD_TEST(test_dead_replay_checks_target),
            KD_TEST(test_audit_replayed_dead_letters_are_history), KD_TEST_END};
        int rc = kd_test_run("kdelayctl", cases, suite_init, suite_cleanup);
        free(out);
        free(err);
        return rc;
}
