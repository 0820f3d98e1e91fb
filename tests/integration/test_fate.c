/* Integration: the fate protocol against a real MariaDB: cancel, status,
 * the forwarder's batched claim and mark-fired, schema checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_env.h"
#include "kd_conf.h"
#include "kd_fate.h"
#include "kd_mysql.h"
#include "kd_schema.h"
#include "kd_test.h"
#include "kd_util.h"

static char db[64], url[256];
static kdelay_client_t *client;
static kd_fate_store_t *store; /* plays the forwarder */
static kdelay_conf_t *store_conf;

static int suite_init(void)
{
        char errstr[256];
        if (it_env_init())
                return -1;
        it_unique(db, sizeof(db), "kdit_fate");
        if (it_db_create(db, 1, url, sizeof(url)))
                return -1;
        kdelay_conf_t *conf = it_conf_new(NULL, url);
        store_conf = it_conf_new(NULL, url);
        if (!conf || !store_conf ||
            kdelay_client_new(&client, conf, errstr, sizeof(errstr)) ||
            kd_fate_store_new(&store, store_conf))
                return -1;
        return 0;
}

static int suite_cleanup(void)
{
        kdelay_client_destroy(client);
        kd_fate_store_destroy(store);
        kdelay_conf_destroy(store_conf);
        it_db_drop(db);
        return 0;
}

static void new_id(char *buf, size_t size)
{
        it_unique(buf, size, "task-");
}

static kdelay_fate_t claim_one(const char *id, int64_t fire_at)
{
        kd_fate_claim_t c = {id, strlen(id), fire_at, KDELAY_FATE_UNDECIDED};
        char errstr[256];
        CU_ASSERT_EQUAL(
            kd_fate_claim(store, &c, 1, "fw-test", errstr, sizeof(errstr)),
            KDELAY_OK);
        return c.fate;
}

static void mark_fired(const char *id)
{
        size_t len = strlen(id);
        char errstr[256];
        CU_ASSERT_EQUAL(
            kd_fate_mark_fired(store, &id, &len, 1, errstr, sizeof(errstr)),
            KDELAY_OK);
}

static void test_status_of_unknown_task_is_undecided(void)
{
        char id[64], errstr[256];
        kdelay_status_t st;
        new_id(id, sizeof(id));
        CU_ASSERT_EQUAL_FATAL(
            kdelay_status(client, id, &st, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(st.decided_at_ms, -1);
        CU_ASSERT_EQUAL(st.owner[0], '\0');
}

static void test_cancel_before_claim_wins(void)
{
        char id[64], errstr[256];
        kdelay_status_t st;
        new_id(id, sizeof(id));
        int64_t before = kd_now_ms();
        CU_ASSERT_EQUAL(kdelay_cancel(client, id, errstr, sizeof(errstr)),
                        KDELAY_OK);
        /* Cancelling again is still a success. */
        CU_ASSERT_EQUAL(kdelay_cancel(client, id, errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_status(client, id, &st, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT(st.decided_at_ms >= before &&
                  st.decided_at_ms <= kd_now_ms());
        /* The forwarder's claim now finds the task cancelled. */
        CU_ASSERT_EQUAL(claim_one(id, before), KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_status(client, id, &st, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_CANCELLED);
}

static void test_cancel_after_claim_is_too_late(void)
{
        char id[64], errstr[256];
        kdelay_status_t st;
        new_id(id, sizeof(id));
        int64_t fire_at = kd_now_ms() + 1234;
        CU_ASSERT_EQUAL(claim_one(id, fire_at), KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(kdelay_cancel(client, id, errstr, sizeof(errstr)),
                        KDELAY_ERR_TOO_LATE);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "FIRING"));
        CU_ASSERT_EQUAL_FATAL(
            kdelay_status(client, id, &st, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(st.fire_at_ms, fire_at);
        CU_ASSERT_STRING_EQUAL(st.owner, "fw-test");
        /* A second claim (another forwarder after a crash) fires again. */
        CU_ASSERT_EQUAL(claim_one(id, fire_at), KDELAY_FATE_FIRING);
        mark_fired(id);
        CU_ASSERT_EQUAL(kdelay_cancel(client, id, errstr, sizeof(errstr)),
                        KDELAY_ERR_TOO_LATE);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "FIRED"));
        CU_ASSERT_EQUAL_FATAL(
            kdelay_status(client, id, &st, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_FIRED);
        CU_ASSERT(st.updated_at_ms >= st.decided_at_ms);
        /* Re-claiming a fired task says so: skip, already delivered. */
        CU_ASSERT_EQUAL(claim_one(id, fire_at), KDELAY_FATE_FIRED);
}

static void test_batch_claim_uses_two_statements(void)
{
        enum { N = 200 };
        static char ids[N][64];
        static kd_fate_claim_t items[N];
        char errstr[256];
        for (int i = 0; i < N; i++) {
                new_id(ids[i], sizeof(ids[i]));
                if (i % 10 == 0)
                        CU_ASSERT_EQUAL(kdelay_cancel(client, ids[i], errstr,
                                                      sizeof(errstr)),
                                        KDELAY_OK);
                if (i % 10 == 1) {
                        CU_ASSERT_EQUAL(claim_one(ids[i], 1),
                                        KDELAY_FATE_FIRING);
                        mark_fired(ids[i]);
                }
                items[i] = (kd_fate_claim_t){ids[i], strlen(ids[i]), 42,
                                             KDELAY_FATE_UNDECIDED};
        }
        uint64_t before = kd_fate_statements(store);
        CU_ASSERT_EQUAL_FATAL(
            kd_fate_claim(store, items, N, "fw-batch", errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_statements(store) - before, 2);
        for (int i = 0; i < N; i++) {
                kdelay_fate_t want = i % 10 == 0   ? KDELAY_FATE_CANCELLED
                                     : i % 10 == 1 ? KDELAY_FATE_FIRED
                                                   : KDELAY_FATE_FIRING;
                CU_ASSERT_EQUAL(items[i].fate, want);
        }
        /* Mark the claimed ones fired in one statement. */
        const char *fired[N];
        size_t lens[N], nf = 0;
        for (int i = 0; i < N; i++)
                if (items[i].fate == KDELAY_FATE_FIRING) {
                        fired[nf] = ids[i];
                        lens[nf++] = strlen(ids[i]);
                }
        before = kd_fate_statements(store);
        CU_ASSERT_EQUAL(
            kd_fate_mark_fired(store, fired, lens, nf, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_statements(store) - before, 1);
        kdelay_status_t st;
        CU_ASSERT_EQUAL(
            kdelay_status(client, ids[5], &st, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_FIRED);
}

/* Takeover is a compare-and-set on the owner: of two forwarders that both
 * think the claimer died, exactly one wins. */
static void test_takeover_is_compare_and_set(void)
{
        char id[64], errstr[256];
        new_id(id, sizeof(id));
        kd_fate_claim_t c = {id,          strlen(id), 5, KDELAY_FATE_UNDECIDED,
                             "dead-fw:1", ""};
        CU_ASSERT_EQUAL_FATAL(
            kd_fate_claim(store, &c, 1, NULL, errstr, sizeof(errstr)), 0);
        CU_ASSERT_STRING_EQUAL(c.row_owner, "dead-fw:1");
        /* Two contenders saw owner dead-fw:1. */
        kd_fate_claim_t x = c, y = c;
        x.token = "fw-x:7";
        y.token = "fw-y:9";
        CU_ASSERT_EQUAL(kd_fate_takeover(store, &x, 1, errstr, sizeof(errstr)),
                        0);
        CU_ASSERT_EQUAL(x.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(x.row_owner, "fw-x:7");
        CU_ASSERT_EQUAL(kd_fate_takeover(store, &y, 1, errstr, sizeof(errstr)),
                        0);
        CU_ASSERT_STRING_EQUAL(y.row_owner, "fw-x:7"); /* y lost */
        /* A claim again (INSERT IGNORE) keeps the owner. */
        kd_fate_claim_t z = {id,       strlen(id), 5, KDELAY_FATE_UNDECIDED,
                             "fw-z:1", ""};
        CU_ASSERT_EQUAL(
            kd_fate_claim(store, &z, 1, NULL, errstr, sizeof(errstr)), 0);
        CU_ASSERT_STRING_EQUAL(z.row_owner, "fw-x:7");
        /* A FIRED row is not taken over. */
        mark_fired(id);
        kd_fate_claim_t w = x;
        w.token = "fw-w:1";
        CU_ASSERT_EQUAL(kd_fate_takeover(store, &w, 1, errstr, sizeof(errstr)),
                        0);
        CU_ASSERT_EQUAL(w.fate, KDELAY_FATE_FIRED);
        CU_ASSERT_STRING_EQUAL(w.row_owner, "fw-x:7");
}

/* gc deletes rows of tasks long past due, in batches, and keeps cancels
 * whose due time is unknown (the task may still be pending). */
static void test_gc_deletes_only_expired_rows(void)
{
        MYSQL *conn = NULL;
        kdelay_conf_t *conf = it_conf_new(NULL, url);
        char errstr[256], sql[512];
        CU_ASSERT_EQUAL_FATAL(
            kd_mysql_connect(conf, &conn, errstr, sizeof(errstr)), KDELAY_OK);
        int64_t now = kd_now_ms(), day = 86400000LL;
        const struct {
                const char *id, *state;
                int64_t fire_at; /* -1 = NULL */
                int64_t decided;
                int kept;
        } rows[] = {
            {"gc-old-fired", "FIRED", now - 40 * day, now - 40 * day, 0},
            {"gc-old-firing", "FIRING", now - 31 * day, now - 31 * day, 0},
            {"gc-old-seen-cancel", "CANCELLED", now - 35 * day, now - 60 * day,
             0},
            {"gc-new-fired", "FIRED", now - 29 * day, now - 29 * day, 1},
            {"gc-future-cancel", "CANCELLED", now + 90 * day, now - 60 * day,
             1},
            {"gc-unseen-cancel", "CANCELLED", -1, now - 400 * day, 1},
        };
        size_t n = sizeof(rows) / sizeof(rows[0]);
        for (size_t i = 0; i < n; i++) {
                char fa[24] = "NULL";
                if (rows[i].fire_at >= 0)
                        snprintf(fa, sizeof(fa), "%lld",
                                 (long long)rows[i].fire_at);
                snprintf(sql, sizeof(sql),
                         "INSERT INTO kdelay_fate (task_id, state, fire_at_ms,"
                         " decided_at_ms, updated_at_ms) VALUES ('%s', '%s', "
                         "%s, %lld, %lld)",
                         rows[i].id, rows[i].state, fa,
                         (long long)rows[i].decided,
                         (long long)rows[i].decided);
                CU_ASSERT_EQUAL_FATAL(mysql_query(conn, sql), 0);
        }
        /* Batches of 2: the three expired rows need two statements. */
        uint64_t total = 0, got;
        int calls = 0;
        int64_t keep = 30 * day;
        do {
                CU_ASSERT_EQUAL_FATAL(
                    kd_fate_gc(store, now - keep,
                               now - KDELAY_MAX_DELAY_MS - keep, 2, &got,
                               errstr, sizeof(errstr)),
                    KDELAY_OK);
                total += got;
                calls++;
        } while (got == 2);
        CU_ASSERT(total >= 3); /* earlier tests' rows are young: kept */
        CU_ASSERT(calls >= 2);
        for (size_t i = 0; i < n; i++) {
                kdelay_status_t st;
                CU_ASSERT_EQUAL(kdelay_status(client, rows[i].id, &st, errstr,
                                              sizeof(errstr)),
                                KDELAY_OK);
                CU_ASSERT_EQUAL(st.fate != KDELAY_FATE_UNDECIDED, rows[i].kept);
        }
        mysql_close(conn);
        kdelay_conf_destroy(conf);
}

/* The forwarder records the due time of a cancelled task it drops. */
static void test_note_cancelled_sets_due_time_once(void)
{
        char id[64], errstr[256];
        kdelay_status_t st;
        new_id(id, sizeof(id));
        CU_ASSERT_EQUAL(kdelay_cancel(client, id, errstr, sizeof(errstr)),
                        KDELAY_OK);
        const char *ids[] = {id};
        size_t lens[] = {strlen(id)};
        int64_t fa[] = {1234567};
        CU_ASSERT_EQUAL(kd_fate_note_cancelled(store, ids, lens, fa, 1, errstr,
                                               sizeof(errstr)),
                        KDELAY_OK);
        fa[0] = 7654321; /* a second note does not move it */
        CU_ASSERT_EQUAL(kd_fate_note_cancelled(store, ids, lens, fa, 1, errstr,
                                               sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_status(client, id, &st, errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(st.fire_at_ms, 1234567);
}

static void test_ids_with_sql_metacharacters(void)
{
        const char *ids[] = {"quote'id", "back\\slash", "semi;colon--",
                             "\xe6\x97\xa5\xe6\x9c\xac", "x' OR '1'='1"};
        char errstr[256];
        for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
                char id[128];
                kdelay_status_t st;
                snprintf(id, sizeof(id), "%s-%lld", ids[i],
                         (long long)kd_now_ms());
                CU_ASSERT_EQUAL(
                    kdelay_cancel(client, id, errstr, sizeof(errstr)),
                    KDELAY_OK);
                CU_ASSERT_EQUAL(
                    kdelay_status(client, id, &st, errstr, sizeof(errstr)),
                    KDELAY_OK);
                CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_CANCELLED);
        }
}

static void test_invalid_ids_rejected(void)
{
        char errstr[256], big[KDELAY_ID_MAX + 2];
        kdelay_status_t st;
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        CU_ASSERT_EQUAL(kdelay_cancel(client, "", errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_ID);
        CU_ASSERT_EQUAL(kdelay_cancel(client, big, errstr, sizeof(errstr)),
                        KDELAY_ERR_INVALID_ID);
        CU_ASSERT_EQUAL(
            kdelay_status(client, "\xff", &st, errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_ID);
}

static void test_migrate_is_idempotent(void)
{
        MYSQL *conn = NULL;
        kdelay_conf_t *conf = it_conf_new(NULL, url);
        char errstr[256];
        int from = -1, to = -1;
        CU_ASSERT_EQUAL_FATAL(
            kd_mysql_connect(conf, &conn, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_schema_migrate(conn, NULL, NULL, &from, &to, errstr,
                                          sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(from, kd_schema_latest());
        CU_ASSERT_EQUAL(to, kd_schema_latest());
        CU_ASSERT_EQUAL(kd_schema_check(conn, errstr, sizeof(errstr)),
                        KDELAY_OK);
        mysql_close(conn);
        kdelay_conf_destroy(conf);
}

static void test_missing_schema_is_reported(void)
{
        char empty_db[64], empty_url[256], errstr[256];
        kdelay_client_t *c = NULL;
        it_unique(empty_db, sizeof(empty_db), "kdit_empty");
        CU_ASSERT_EQUAL_FATAL(
            it_db_create(empty_db, 0, empty_url, sizeof(empty_url)), 0);
        CU_ASSERT_EQUAL_FATAL(kdelay_client_new(&c,
                                                it_conf_new(NULL, empty_url),
                                                errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_cancel(c, "some-task", errstr, sizeof(errstr)),
                        KDELAY_ERR_SCHEMA);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "kdelayctl db migrate"));
        kdelay_client_destroy(c);
        it_db_drop(empty_db);
}

static void test_unreachable_mysql_is_retriable_error(void)
{
        char errstr[256];
        kdelay_client_t *c = NULL;
        kdelay_conf_t *conf =
            it_conf_new(NULL, "mysql://root@127.0.0.1:1/kdelay");
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        kdelay_err_t err =
            kdelay_cancel(c, "some-task", errstr, sizeof(errstr));
        CU_ASSERT_EQUAL(err, KDELAY_ERR_MYSQL);
        CU_ASSERT(kdelay_err_is_retriable(err));
        kdelay_client_destroy(c);

        /* No MySQL configured at all. */
        conf = it_conf_new(NULL, NULL);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.url", "", NULL, 0),
                        KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_cancel(c, "t", errstr, sizeof(errstr)),
                        KDELAY_ERR_NOT_CONFIGURED);
        kdelay_client_destroy(c);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_status_of_unknown_task_is_undecided),
            KD_TEST(test_cancel_before_claim_wins),
            KD_TEST(test_cancel_after_claim_is_too_late),
            KD_TEST(test_batch_claim_uses_two_statements),
            KD_TEST(test_takeover_is_compare_and_set),
            KD_TEST(test_gc_deletes_only_expired_rows),
            KD_TEST(test_note_cancelled_sets_due_time_once),
            KD_TEST(test_ids_with_sql_metacharacters),
            KD_TEST(test_invalid_ids_rejected),
            KD_TEST(test_migrate_is_idempotent),
            KD_TEST(test_missing_schema_is_reported),
            KD_TEST(test_unreachable_mysql_is_retriable_error),
            KD_TEST_END};
        return kd_test_run("fate", cases, suite_init, suite_cleanup);
}
