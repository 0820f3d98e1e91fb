/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: the fate protocol against a real MariaDB: cancel and
 * status through the client, schema checks, and the fate store contract
 * (tests/common/kd_fate_contract.h) that the in-memory store passes too:
 * claims, takeover, mark-fired, note-cancelled, gc; and the takeover and
 * claim races on two connections at once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kdelay/kdelay.h>

#include "it_env.h"
#include "kd_conf.h"
#include "kd_fate.h"
#include "kd_fate_contract.h"
#include "kd_fate_mysql_int.h"
#include "kd_mysql.h"
#include "kd_schema.h"
#include "kd_schema_migrate.h"
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

/* A migration whose statements ran but whose version was never recorded
 * (a crash between the two) runs again to the end: its guards
 * (-- kdelay: unless column|index) skip what exists, on MySQL as on
 * MariaDB. Simulated by forgetting every version above 1. */
static void test_migrate_reruns_unrecorded(void)
{
        char dbname[64], dburl[256], errstr[256];
        MYSQL *conn = NULL;
        int from = -1, to = -1;
        it_unique(dbname, sizeof(dbname), "kdit_rerun");
        CU_ASSERT_EQUAL_FATAL(it_db_create(dbname, 1, dburl, sizeof(dburl)), 0);
        kdelay_conf_t *conf = it_conf_new(NULL, dburl);
        CU_ASSERT_EQUAL_FATAL(
            kd_mysql_connect(conf, &conn, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_mysql_exec(conn,
                                      "DELETE FROM kdelay_schema WHERE "
                                      "version > 1",
                                      errstr, sizeof(errstr)),
                        KDELAY_OK);
        /* Not a fresh install: it stops before the opt-in step (11). */
        CU_ASSERT_EQUAL(kd_schema_migrate(conn, NULL, NULL, &from, &to, errstr,
                                          sizeof(errstr)),
                        KDELAY_OK);
        if (to != kd_schema_needed())
                printf("\nmigrate: %s\n", errstr);
        CU_ASSERT_EQUAL(from, 1);
        CU_ASSERT_EQUAL(to, kd_schema_needed());
        CU_ASSERT_EQUAL(kd_schema_check(conn, errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_schema_migrate_opt(conn, NULL, NULL, "lean-fate",
                                              &from, &to, errstr,
                                              sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(from, kd_schema_needed());
        CU_ASSERT_EQUAL(to, kd_schema_latest());
        CU_ASSERT_EQUAL(kd_schema_check(conn, errstr, sizeof(errstr)),
                        KDELAY_OK);
        /* Versions 2 and 4 added their indexes again and 8 dropped them
         * again (its "if index" guards): the claim path keeps one. */
        char idx[256];
        it_mysql_value(conn,
                       "SELECT GROUP_CONCAT(DISTINCT INDEX_NAME ORDER BY "
                       "INDEX_NAME) FROM information_schema.STATISTICS WHERE "
                       "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = "
                       "'kdelay_fate'",
                       0, idx, sizeof(idx));
        if (strcmp(idx, "kdelay_fate_decided,PRIMARY"))
                printf("\nkdelay_fate indexes: %s\n", idx);
        CU_ASSERT_STRING_EQUAL(idx, "kdelay_fate_decided,PRIMARY");
        mysql_close(conn);
        kdelay_conf_destroy(conf);
        it_db_drop(dbname);
}

/* Forgets every version above v (the tables stay: each step's guards
 * or IF NOT EXISTS make it run again). */
static void forget_above(MYSQL *conn, int v)
{
        char sql[128], errstr[256];
        snprintf(sql, sizeof(sql),
                 "DELETE FROM kdelay_schema WHERE version > %d", v);
        CU_ASSERT_EQUAL(kd_mysql_exec(conn, sql, errstr, sizeof(errstr)),
                        KDELAY_OK);
}

/* The opt-in step (11, lean-fate): a fresh install takes it; a database
 * that had a schema (9, 10) stops before it, usable by this build, until
 * migrate is told --enable lean-fate; its row records floor 0.4.0. */
static void test_opt_in_step_waits_unless_fresh(void)
{
        char dbname[64], dburl[256], errstr[256], name[32] = "";
        MYSQL *conn = NULL;
        int from = -1, to = -1;
        it_unique(dbname, sizeof(dbname), "kdit_optin");
        CU_ASSERT_EQUAL_FATAL(it_db_create(dbname, 0, dburl, sizeof(dburl)), 0);
        kdelay_conf_t *conf = it_conf_new(NULL, dburl);
        CU_ASSERT_EQUAL_FATAL(
            kd_mysql_connect(conf, &conn, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_schema_migrate(conn, NULL, NULL, &from, &to, errstr,
                                          sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(from, 0);
        CU_ASSERT_EQUAL(to, 11);
        CU_ASSERT_PTR_NULL(kd_schema_waiting(to, name, sizeof(name)));
        for (int v = 9; v <= 10; v++) {
                forget_above(conn, v);
                CU_ASSERT_EQUAL(kd_schema_migrate(conn, NULL, NULL, &from, &to,
                                                  errstr, sizeof(errstr)),
                                KDELAY_OK);
                CU_ASSERT_EQUAL(from, v);
                CU_ASSERT_EQUAL(to, 10);
                CU_ASSERT_EQUAL(kd_schema_check(conn, errstr, sizeof(errstr)),
                                KDELAY_OK);
                CU_ASSERT_PTR_NOT_NULL(
                    kd_schema_waiting(to, name, sizeof(name)));
                CU_ASSERT_STRING_EQUAL(name, "lean-fate");
        }
        /* Told: it takes it, floor recorded. */
        CU_ASSERT_EQUAL(kd_schema_migrate_opt(conn, NULL, NULL, "lean-fate",
                                              &from, &to, errstr,
                                              sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(from, 10);
        CU_ASSERT_EQUAL(to, 11);
        char floor[32];
        it_mysql_value(conn,
                       "SELECT compat_floor FROM kdelay_schema WHERE version "
                       "= 11",
                       0, floor, sizeof(floor));
        CU_ASSERT_STRING_EQUAL(floor, "0.4.0");
        /* At 11 already: nothing to do either way. */
        CU_ASSERT_EQUAL(kd_schema_migrate(conn, NULL, NULL, &from, &to, errstr,
                                          sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(to, 11);
        /* Below what this build needs: refused by the check. */
        forget_above(conn, 9);
        CU_ASSERT_EQUAL(kd_schema_check(conn, errstr, sizeof(errstr)),
                        KDELAY_ERR_SCHEMA);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "needs 10"));
        mysql_close(conn);
        kdelay_conf_destroy(conf);
        it_db_drop(dbname);
}

/* A schema newer than this build (a later release migrated while this
 * one runs): usable when every newer version's release floor is at or
 * below this release — check and migrate both answer OK — and refused
 * with the floor named otherwise (docs/upgrading.md). */
static void test_newer_schema_floor(void)
{
        char dbname[64], dburl[256], errstr[256], sql[256];
        MYSQL *conn = NULL;
        int from = -1, to = -1, next = kd_schema_latest() + 1;
        it_unique(dbname, sizeof(dbname), "kdit_floor");
        CU_ASSERT_EQUAL_FATAL(it_db_create(dbname, 1, dburl, sizeof(dburl)), 0);
        kdelay_conf_t *conf = it_conf_new(NULL, dburl);
        CU_ASSERT_EQUAL_FATAL(
            kd_mysql_connect(conf, &conn, errstr, sizeof(errstr)), KDELAY_OK);
        static const struct {
                const char *floor; /* NULL: none recorded */
                kdelay_err_t want;
                const char *says;
        } cases[] = {
            {"0.1.0", KDELAY_OK, NULL},
            {KDELAY_VERSION_STR, KDELAY_OK, NULL},
            {"99.0.0", KDELAY_ERR_SCHEMA, "needs kdelay 99.0.0 or newer"},
            {NULL, KDELAY_ERR_SCHEMA, "records no release floor"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                snprintf(sql, sizeof(sql),
                         "REPLACE INTO kdelay_schema (version, name, "
                         "applied_at_ms, compat_floor) VALUES (%d, "
                         "'later', 0, %s%s%s)",
                         next, cases[i].floor ? "'" : "",
                         cases[i].floor ? cases[i].floor : "NULL",
                         cases[i].floor ? "'" : "");
                CU_ASSERT_EQUAL_FATAL(
                    kd_mysql_exec(conn, sql, errstr, sizeof(errstr)),
                    KDELAY_OK);
                errstr[0] = '\0';
                CU_ASSERT_EQUAL(kd_schema_check(conn, errstr, sizeof(errstr)),
                                cases[i].want);
                CU_ASSERT(!cases[i].says || strstr(errstr, cases[i].says));
                CU_ASSERT_EQUAL(kd_schema_migrate(conn, NULL, NULL, &from, &to,
                                                  errstr, sizeof(errstr)),
                                cases[i].want);
                CU_ASSERT_EQUAL(from, next);
                CU_ASSERT_EQUAL(to, next);
        }
        mysql_close(conn);
        kdelay_conf_destroy(conf);
        it_db_drop(dbname);
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

/* --- the compare-and-set race on two connections -------------------------
 *
 * Two forwarders that both saw a claim's owner die take it over at the same
 * moment, each on its own connection: the contract's takeover case runs them
 * one after the other on one connection, which cannot show that the
 * UPDATE's compare-and-set holds under real concurrency. Here two threads,
 * each with a store of its own, race for the same rows round after round
 * (per row, then the whole round in one statement), and for fresh ids with
 * claims (INSERT IGNORE); exactly one wins each row, and the row says so. */

/* RACE_ROWS at or above the prepared claim's least row count
 * (fate_claim_prep.c): every claim round after the first races prepared
 * statements. */
enum { RACE_ROUNDS = 60, RACE_ROWS = 40 };

typedef struct racer {
        kd_fate_store_t *store; /* owned: its own connection */
        kdelay_conf_t *conf;    /* owned */
        char token[32];         /* this round's owner */
        kd_fate_claim_t items[RACE_ROWS];
        int failed; /* a call that did not return KDELAY_OK */
        char errstr[256];
} racer_t;

static racer_t racers[2];
static pthread_barrier_t race_start, race_done;
static char race_ids[RACE_ROWS][64];
static int race_round, race_batch, race_claim;

static void *race_thread(void *arg)
{
        racer_t *r = arg;
        for (int round = 0; round < RACE_ROUNDS; round++) {
                pthread_barrier_wait(&race_start);
                kdelay_err_t err = KDELAY_OK;
                if (race_claim) {
                        err = kd_fate_claim(r->store, r->items, RACE_ROWS,
                                            r->token, r->errstr,
                                            sizeof(r->errstr));
                } else if (race_batch) {
                        err = kd_fate_takeover(r->store, r->items, RACE_ROWS,
                                               r->errstr, sizeof(r->errstr));
                } else {
                        for (int i = 0; i < RACE_ROWS && !err; i++)
                                err = kd_fate_takeover(r->store, &r->items[i],
                                                       1, r->errstr,
                                                       sizeof(r->errstr));
                }
                r->failed += err != KDELAY_OK;
                pthread_barrier_wait(&race_done);
        }
        return NULL;
}

static void race_prepare(int round)
{
        char dead[32];
        race_round = round;
        race_claim = round % 3 == 2; /* fresh ids, claimed by both */
        race_batch = round % 3 == 1; /* one statement for all rows */
        snprintf(dead, sizeof(dead), "dead-fw:%d", round);
        for (int i = 0; i < RACE_ROWS; i++) {
                char id[48];
                it_unique(id, sizeof(id), "race-");
                snprintf(race_ids[i], sizeof(race_ids[i]), "%s-%d", id, i);
                if (!race_claim) {
                        /* FIRING under an owner both contenders saw die. */
                        kd_fate_claim_t c = {race_ids[i], strlen(race_ids[i]),
                                             1000 + i,    KDELAY_FATE_UNDECIDED,
                                             dead,        ""};
                        char errstr[256];
                        /* Not fatal: the racers wait at the barrier. */
                        CU_ASSERT_EQUAL(kd_fate_claim(store, &c, 1, NULL,
                                                      errstr, sizeof(errstr)),
                                        KDELAY_OK);
                        CU_ASSERT_STRING_EQUAL(c.row_owner, dead);
                }
        }
        for (int k = 0; k < 2; k++) {
                racer_t *r = &racers[k];
                snprintf(r->token, sizeof(r->token), "fw-%c:%d", 'x' + k,
                         round);
                for (int i = 0; i < RACE_ROWS; i++) {
                        kd_fate_claim_t c = {race_ids[i], strlen(race_ids[i]),
                                             1000 + i,    KDELAY_FATE_UNDECIDED,
                                             r->token,    ""};
                        if (!race_claim)
                                kd_strlcpy(c.row_owner, dead,
                                           sizeof(c.row_owner));
                        r->items[i] = c;
                }
        }
}

/* After a round: every row won by exactly one racer, which the row names;
 * returns how many rows the first racer won. */
static int race_check(void)
{
        int x_wins = 0;
        for (int i = 0; i < RACE_ROWS; i++) {
                int won[2], winner = -1;
                for (int k = 0; k < 2; k++) {
                        const kd_fate_claim_t *c = &racers[k].items[i];
                        CU_ASSERT_EQUAL(c->fate, KDELAY_FATE_FIRING);
                        won[k] = !strcmp(c->row_owner, racers[k].token);
                        if (won[k])
                                winner = k;
                }
                if (won[0] + won[1] != 1)
                        printf("\n  round %d row %d: %d winners (%s, %s)",
                               race_round, i, won[0] + won[1],
                               racers[0].items[i].row_owner,
                               racers[1].items[i].row_owner);
                CU_ASSERT_EQUAL(won[0] + won[1], 1);
                /* Both read back the same owner: the winner's. */
                CU_ASSERT_STRING_EQUAL(racers[0].items[i].row_owner,
                                       racers[1].items[i].row_owner);
                char errstr[256];
                kdelay_status_t st;
                memset(&st, 0, sizeof(st));
                /* Not fatal: the racers wait at the barrier. */
                CU_ASSERT_EQUAL(kd_fate_status(store, race_ids[i],
                                               strlen(race_ids[i]), &st, errstr,
                                               sizeof(errstr)),
                                KDELAY_OK);
                CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_FIRING);
                if (winner >= 0)
                        CU_ASSERT_STRING_EQUAL(st.owner, racers[winner].token);
                x_wins += won[0];
        }
        return x_wins;
}

static void test_takeover_race_on_two_connections(void)
{
        pthread_t th[2];
        char errstr[256];
        int started = 0, x_wins = 0;
        memset(racers, 0, sizeof(racers));
        for (int k = 0; k < 2; k++) {
                racer_t *r = &racers[k];
                r->conf = it_conf_new(NULL, url);
                CU_ASSERT_PTR_NOT_NULL_FATAL(r->conf);
                CU_ASSERT_EQUAL_FATAL(kd_fate_store_new(&r->store, r->conf),
                                      KDELAY_OK);
                /* Connected here, so no thread initialises the client
                 * library. */
                CU_ASSERT_EQUAL_FATAL(
                    kd_fate_store_connect(r->store, errstr, sizeof(errstr)),
                    KDELAY_OK);
        }
        CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&race_start, NULL, 3), 0);
        CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&race_done, NULL, 3), 0);
        for (int k = 0; k < 2; k++)
                if (pthread_create(&th[k], NULL, race_thread, &racers[k]) == 0)
                        started++;
        CU_ASSERT_EQUAL_FATAL(started, 2);
        for (int round = 0; round < RACE_ROUNDS; round++) {
                race_prepare(round);
                pthread_barrier_wait(&race_start);
                pthread_barrier_wait(&race_done);
                x_wins += race_check();
        }
        for (int k = 0; k < 2; k++)
                pthread_join(th[k], NULL);
        pthread_barrier_destroy(&race_start);
        pthread_barrier_destroy(&race_done);
        printf("\n  takeover/claim race: %d rounds x %d rows, first racer won "
               "%d, second %d, failed calls %d+%d",
               RACE_ROUNDS, RACE_ROWS, x_wins, RACE_ROUNDS * RACE_ROWS - x_wins,
               racers[0].failed, racers[1].failed);
        CU_ASSERT_EQUAL(racers[0].failed, 0);
        CU_ASSERT_EQUAL(racers[1].failed, 0);
        /* It was a race: each side won some rows (in practice about half;
         * one side winning all 960 would mean the threads never met). */
        CU_ASSERT(x_wins > 0 && x_wins < RACE_ROUNDS * RACE_ROWS);
        for (int k = 0; k < 2; k++) {
                kd_fate_store_destroy(racers[k].store);
                kdelay_conf_destroy(racers[k].conf);
        }
}

/* The contract's side: a database of its own, emptied for every case. */
static char cdb[64], curl[256];
static kdelay_conf_t *cconf; /* owned */
static MYSQL *cconn;         /* owned: writes rows as other processes */

static int contract_init(void)
{
        char errstr[256];
        if (it_env_init())
                return -1;
        it_unique(cdb, sizeof(cdb), "kdit_fatec");
        if (it_db_create(cdb, 1, curl, sizeof(curl)) ||
            !(cconf = it_conf_new(NULL, curl)) ||
            kd_mysql_connect(cconf, &cconn, errstr, sizeof(errstr)))
                return -1;
        return 0;
}

static int contract_cleanup(void)
{
        if (cconn)
                mysql_close(cconn);
        kdelay_conf_destroy(cconf);
        it_db_drop(cdb);
        return 0;
}

static int mysql_open(kd_fate_store_t **storep)
{
        if (mysql_query(cconn, "DELETE FROM kdelay_fate") ||
            mysql_query(cconn, "DELETE FROM kdelay_unclaimed") ||
            mysql_query(cconn, "DELETE FROM kdelay_reconcile") ||
            mysql_query(cconn, "DELETE FROM kdelay_fired_run"))
                return -1;
        return kd_fate_store_new(storep, cconf) ? -1 : 0;
}

static int mysql_put(kd_fate_store_t *st, const char *id, kdelay_fate_t fate,
                     int64_t fire_at_ms, int64_t decided_at_ms)
{
        char qid[KDELAY_ID_MAX * 2 + 1], fa[24] = "NULL", sql[512];
        size_t len = strlen(id);
        (void)st; /* the row goes in through cconn */
        if (len > KDELAY_ID_MAX ||
            mysql_real_escape_string(cconn, qid, id, (unsigned long)len) ==
                (unsigned long)-1)
                return -1;
        if (fire_at_ms != -1)
                snprintf(fa, sizeof(fa), "%lld", (long long)fire_at_ms);
        snprintf(sql, sizeof(sql),
                 "INSERT INTO kdelay_fate (task_id, state, fire_at_ms, "
                 "decided_at_ms, updated_at_ms) VALUES ('%s', '%s', %s, "
                 "%lld, %lld)",
                 qid, kdelay_fate_str(fate), fa, (long long)decided_at_ms,
                 (long long)decided_at_ms);
        return mysql_query(cconn, sql) ? -1 : 0;
}

/* A demoted primary (SET GLOBAL read_only=1, stack.sh mysql-readonly) as
 * an application user sees it: a cancel or claim fails with a retriable
 * error — never a wrong OK — and the store drops its connection, so that
 * the next call reconnects; once the server is writable, the same store
 * works again. */
static void test_read_only_server_fails_then_recovers(void)
{
        MYSQL *conn = it_mysql_connect();
        char sql[256], user[32], user_url[256], errstr[256];
        CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
        snprintf(user, sizeof(user), "kdro%d", (int)getpid());
        snprintf(sql, sizeof(sql),
                 "CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY 'ro-pw'",
                 user);
        CU_ASSERT_EQUAL_FATAL(mysql_query(conn, sql), 0);
        snprintf(sql, sizeof(sql),
                 "GRANT SELECT, INSERT, UPDATE, DELETE ON `%s`.* TO '%s'@'%%'",
                 db, user);
        CU_ASSERT_EQUAL_FATAL(mysql_query(conn, sql), 0);
        const char *at = strrchr(url, '@');
        snprintf(user_url, sizeof(user_url), "mysql://%s:ro-pw%s", user, at);
        kdelay_conf_t *c = it_conf_new(NULL, user_url);
        kd_fate_store_t *st = NULL;
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_EQUAL_FATAL(kd_fate_store_new(&st, c), KDELAY_OK);
        char a[64], b[64];
        new_id(a, sizeof(a));
        new_id(b, sizeof(b));
        CU_ASSERT_EQUAL(
            kd_fate_cancel(st, a, strlen(a), errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(it_stack("mysql-readonly on"), 0);
        kdelay_err_t err =
            kd_fate_cancel(st, b, strlen(b), errstr, sizeof(errstr));
        CU_ASSERT_EQUAL(err, KDELAY_ERR_MYSQL);
        CU_ASSERT(kdelay_err_is_retriable(err));
        printf("\n  cancel on a read-only server: %s: %s\n",
               kdelay_err_name(err), errstr);
        kd_fate_claim_t item = {b, strlen(b), 1, KDELAY_FATE_UNDECIDED};
        CU_ASSERT_EQUAL(
            kd_fate_claim(st, &item, 1, "fw-ro", errstr, sizeof(errstr)),
            KDELAY_ERR_MYSQL);
        kdelay_status_t s;
        CU_ASSERT_EQUAL(
            kd_fate_status(st, a, strlen(a), &s, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(s.fate, KDELAY_FATE_CANCELLED);
        uint64_t stmts = kd_fate_statements(st);
        CU_ASSERT_EQUAL(it_stack("mysql-readonly off"), 0);
        CU_ASSERT_EQUAL(
            kd_fate_cancel(st, b, strlen(b), errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT(kd_fate_statements(st) > stmts);
        CU_ASSERT_EQUAL(
            kd_fate_status(st, b, strlen(b), &s, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(s.fate, KDELAY_FATE_CANCELLED);
        kd_fate_store_destroy(st);
        kdelay_conf_destroy(c);
        snprintf(sql, sizeof(sql), "DROP USER IF EXISTS '%s'@'%%'", user);
        CU_ASSERT_EQUAL(mysql_query(conn, sql), 0);
        mysql_close(conn);
}

/* Claims of one row count in a row go as a prepared statement
 * (fate_claim_prep.c): the rows it writes are the text claim's (owner,
 * fire-at, lease, source); a batch of rows already its own is renewed and
 * read back; a connection lost under it fails the claim with a retriable
 * error, and the next claim connects and prepares again. */
enum { PREP_ROWS = 40 };
static char prep_ids[PREP_ROWS][64], prep_tokens[PREP_ROWS][32];

static void prep_items(kd_fate_claim_t *items, const char *stem, int fresh)
{
        char u[40];
        it_unique(u, sizeof(u), stem); /* one per batch: its ids' prefix */
        for (int i = 0; i < PREP_ROWS; i++) {
                if (fresh) {
                        snprintf(prep_ids[i], sizeof(prep_ids[i]), "%s-%d", u,
                                 i);
                        snprintf(prep_tokens[i], sizeof(prep_tokens[i]),
                                 "fw-prep:%d", i);
                }
                kd_fate_claim_t c = {prep_ids[i], strlen(prep_ids[i]), 5000 + i,
                                     KDELAY_FATE_UNDECIDED, prep_tokens[i]};
                c.lease_ms = 60000;
                c.fresh = fresh;
                c.src_topic = "kd.tier.1s";
                c.src_partition = 3;
                c.src_offset = 100 + i;
                items[i] = c;
        }
}

static void prep_check_won(const kd_fate_claim_t *items)
{
        for (int i = 0; i < PREP_ROWS; i++) {
                CU_ASSERT_EQUAL(items[i].fate, KDELAY_FATE_FIRING);
                CU_ASSERT_STRING_EQUAL(items[i].row_owner, prep_tokens[i]);
        }
}

/* Rows of this batch (prep_ids) written as the claim asked. */
static long long prep_rows_as_asked(MYSQL *conn)
{
        char sql[512];
        snprintf(sql, sizeof(sql),
                 "SELECT COUNT(*) FROM kdelay_fate WHERE task_id LIKE "
                 "'%.*s%%' AND state = 'FIRING' AND fire_at_ms >= 5000 AND "
                 "owner LIKE 'fw-prep:%%' AND src_topic = 'kd.tier.1s' AND "
                 "src_partition = 3 AND src_offset >= 100 AND lease_until > "
                 "NOW(3) + INTERVAL 50 SECOND",
                 (int)(strrchr(prep_ids[0], '-') - prep_ids[0]), prep_ids[0]);
        return it_mysql_ll(conn, sql, 0);
}

/* A global status counter of the server; -1 unreadable. */
static long long prep_status(MYSQL *conn, const char *name)
{
        char sql[128];
        snprintf(sql, sizeof(sql), "SHOW GLOBAL STATUS LIKE '%s'", name);
        return it_mysql_ll(conn, sql, 1);
}

/* Kills the connections to database name but conn's own; how many. */
static int prep_kill_others(MYSQL *conn, const char *name)
{
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = "
                 "'%s' AND ID <> CONNECTION_ID()",
                 name);
        MYSQL_RES *res = NULL;
        if (mysql_query(conn, sql) || !(res = mysql_store_result(conn)))
                return -1;
        MYSQL_ROW row;
        int killed = 0;
        while ((row = mysql_fetch_row(res))) {
                snprintf(sql, sizeof(sql), "KILL %s", row[0]);
                killed += !mysql_query(conn, sql);
        }
        mysql_free_result(res);
        return killed;
}

/* bulk: MariaDB's array-bound claim (fate_claim_bulk.c), every claim of
 * PREP_ROWS one execute of the one statement prepared on the connection
 * (not counted); else (KDELAY_TEST_CLAIM_BULK_OFF, as against MySQL) the
 * prepared claim of n rows. */
/* A fresh database with a store on it and a connection of the test's
 * own that uses it. */
typedef struct prep_db {
        char name[64];
        kd_fate_store_t *st; /* owned */
        kdelay_conf_t *c;    /* owned: st's conf */
        MYSQL *conn;         /* owned */
} prep_db_t;

static void prep_open(prep_db_t *d)
{
        char purl[256], sql[256];
        it_unique(d->name, sizeof(d->name), "kdit_prep");
        CU_ASSERT_EQUAL_FATAL(it_db_create(d->name, 1, purl, sizeof(purl)), 0);
        d->c = it_conf_new(NULL, purl);
        d->conn = it_mysql_connect();
        snprintf(sql, sizeof(sql), "USE `%s`", d->name);
        CU_ASSERT_FATAL(d->c && d->conn && !mysql_query(d->conn, sql));
        CU_ASSERT_EQUAL_FATAL(kd_fate_store_new(&d->st, d->c), KDELAY_OK);
}

static void prep_close(prep_db_t *d)
{
        kd_fate_store_destroy(d->st);
        kdelay_conf_destroy(d->c);
        mysql_close(d->conn);
        it_db_drop(d->name);
}

/* What a claim cost: statements counted by the store, prepares and
 * executes counted by the server. */
typedef struct prep_cost {
        long long stmts, prepares, executes;
} prep_cost_t;

/* Claims items (PREP_ROWS) on st, its cost into *cost (the server's
 * counters read on conn). */
static kdelay_err_t prep_claim_counted(kd_fate_store_t *st, MYSQL *conn,
                                       kd_fate_claim_t *items,
                                       prep_cost_t *cost)
{
        char errstr[256];
        long long prepares = prep_status(conn, "Com_stmt_prepare");
        long long executes = prep_status(conn, "Com_stmt_execute");
        uint64_t stmts = kd_fate_statements(st);
        kdelay_err_t err =
            kd_fate_claim(st, items, PREP_ROWS, NULL, errstr, sizeof(errstr));
        cost->stmts = (long long)(kd_fate_statements(st) - stmts);
        cost->prepares = prep_status(conn, "Com_stmt_prepare") - prepares;
        cost->executes = prep_status(conn, "Com_stmt_execute") - executes;
        return err;
}

static void claim_batches_prepared(int bulk)
{
        char errstr[256], sql[256];
        kd_fate_claim_t items[PREP_ROWS];
        prep_db_t d;
        prep_open(&d);
        kd_fate_store_t *st = d.st;
        MYSQL *conn = d.conn;
        const char *pdb = d.name;
        /* Without bulk, the first of its count goes as text and the
         * second is prepared: a prepare and an execute. With it, each is
         * one execute (the prepare on the first). No read-back: all
         * fresh. */
        prep_items(items, "prep1-", 1);
        prep_cost_t cost;
        CU_ASSERT_EQUAL(prep_claim_counted(st, conn, items, &cost), KDELAY_OK);
        CU_ASSERT_EQUAL(cost.stmts, 1);
        CU_ASSERT_EQUAL(cost.prepares, bulk ? 1 : 0);
        CU_ASSERT_EQUAL(cost.executes, bulk ? 1 : 0);
        prep_check_won(items);
        CU_ASSERT_EQUAL(prep_rows_as_asked(conn), PREP_ROWS);
        prep_items(items, "prep2-", 1);
        uint64_t stmts = kd_fate_statements(st);
        CU_ASSERT_EQUAL(
            kd_fate_claim(st, items, PREP_ROWS, NULL, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_statements(st) - stmts, bulk ? 1 : 2);
        prep_check_won(items);
        CU_ASSERT_EQUAL(prep_rows_as_asked(conn), PREP_ROWS);
        /* The same rows again, not fresh: the prepared insert adds none;
         * renewed and read back, each still its token's. */
        prep_items(items, "", 0);
        stmts = kd_fate_statements(st);
        CU_ASSERT_EQUAL(
            kd_fate_claim(st, items, PREP_ROWS, NULL, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_statements(st) - stmts, 3);
        prep_check_won(items);
        /* Its connection killed: the claim fails, retriable; the next one
         * reconnects and prepares again. */
        CU_ASSERT_EQUAL(prep_kill_others(conn, pdb), 1);
        prep_items(items, "prep3-", 1);
        kdelay_err_t err =
            kd_fate_claim(st, items, PREP_ROWS, NULL, errstr, sizeof(errstr));
        CU_ASSERT_EQUAL(err, KDELAY_ERR_MYSQL);
        CU_ASSERT(kdelay_err_is_retriable(err));
        printf("\n  prepared claim on a killed connection: %s\n", errstr);
        CU_ASSERT_EQUAL(
            kd_fate_claim(st, items, PREP_ROWS, NULL, errstr, sizeof(errstr)),
            KDELAY_OK);
        prep_check_won(items);
        CU_ASSERT_EQUAL(prep_rows_as_asked(conn), PREP_ROWS);
        /* A server that refuses prepares (max_prepared_stmt_count
         * reached): the claim goes as text and succeeds. */
        long long max_prep =
            it_mysql_ll(conn, "SELECT @@GLOBAL.max_prepared_stmt_count", 0);
        CU_ASSERT_FATAL(max_prep > 0);
        CU_ASSERT_EQUAL(prep_kill_others(conn, pdb), 1);
        CU_ASSERT_EQUAL(
            mysql_query(conn, "SET GLOBAL max_prepared_stmt_count = 0"), 0);
        prep_items(items, "prep4-", 1);
        CU_ASSERT_EQUAL(
            kd_fate_claim(st, items, PREP_ROWS, NULL, errstr, sizeof(errstr)),
            KDELAY_ERR_MYSQL); /* the killed connection */
        err = prep_claim_counted(st, conn, items, &cost);
        /* Refused, then sent as text: nothing executed prepared. */
        CU_ASSERT_EQUAL(cost.executes, 0);
        snprintf(sql, sizeof(sql), "SET GLOBAL max_prepared_stmt_count = %lld",
                 max_prep);
        CU_ASSERT_EQUAL(mysql_query(conn, sql), 0);
        CU_ASSERT_EQUAL(err, KDELAY_OK);
        prep_check_won(items);
        CU_ASSERT_EQUAL(prep_rows_as_asked(conn), PREP_ROWS);
        prep_close(&d);
}

static void test_claim_batches_prepared(void)
{
        claim_batches_prepared(1);
}

static void test_claim_batches_prepared_without_bulk(void)
{
        CU_ASSERT_EQUAL_FATAL(setenv("KDELAY_TEST_CLAIM_BULK_OFF", "1", 1), 0);
        claim_batches_prepared(0);
        unsetenv("KDELAY_TEST_CLAIM_BULK_OFF");
}

/* A server that advertises bulk operations but refuses the command (a
 * proxy; KDELAY_TEST_CLAIM_BULK_REFUSE stands in for one: MariaDB does
 * not refuse it): the claim goes on as n rows in the same call and wins
 * every row; the connection claims without bulk from then on. */
static void test_claim_bulk_refused_falls_back(void)
{
        CU_ASSERT_EQUAL_FATAL(
            setenv("KDELAY_TEST_CLAIM_BULK_REFUSE", "1295", 1), 0);
        kd_fate_claim_t items[PREP_ROWS];
        prep_db_t d;
        prep_open(&d);
        /* The bulk statement prepared, its execute refused, the rows
         * sent as text (the first claim of its count): won. */
        prep_items(items, "refused1-", 1);
        prep_cost_t cost;
        CU_ASSERT_EQUAL(prep_claim_counted(d.st, d.conn, items, &cost),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(cost.prepares, 1);
        CU_ASSERT_EQUAL(cost.executes, 0);
        prep_check_won(items);
        CU_ASSERT_EQUAL(prep_rows_as_asked(d.conn), PREP_ROWS);
        /* The same count again: the claim of n rows, prepared (one
         * prepare, one execute), no bulk tried. */
        prep_items(items, "refused2-", 1);
        CU_ASSERT_EQUAL(prep_claim_counted(d.st, d.conn, items, &cost),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(cost.stmts, 2);
        CU_ASSERT_EQUAL(cost.prepares, 1);
        CU_ASSERT_EQUAL(cost.executes, 1);
        prep_check_won(items);
        CU_ASSERT_EQUAL(prep_rows_as_asked(d.conn), PREP_ROWS);
        prep_close(&d);
        unsetenv("KDELAY_TEST_CLAIM_BULK_REFUSE");
}

/* The session counter name of conn; -1 unreadable. */
static long long session_status(MYSQL *conn, const char *name)
{
        char sql[128];
        snprintf(sql, sizeof(sql), "SHOW SESSION STATUS LIKE '%s'", name);
        return it_mysql_ll(conn, sql, 1);
}

/* Index entries sql reads on conn besides its dives (Handler_read_next
 * and _prev); -1 when it fails. */
static long long entries_walked(MYSQL *conn, const char *sql)
{
        long long next = session_status(conn, "Handler_read_next"),
                  prev = session_status(conn, "Handler_read_prev");
        if (mysql_query(conn, sql)) {
                printf("\n  %s: %s\n", sql, mysql_error(conn));
                return -1;
        }
        MYSQL_RES *res = mysql_store_result(conn);
        mysql_free_result(res);
        return session_status(conn, "Handler_read_next") - next +
               session_status(conn, "Handler_read_prev") - prev;
}

/* The type of access EXPLAIN shows for table alias r in sql, into
 * type[size] (key PRIMARY asserted); 0 when found. */
static int explain_r(MYSQL *conn, const char *sql, char *type, size_t size)
{
        char q[4096];
        snprintf(q, sizeof(q), "EXPLAIN %s", sql);
        if (mysql_query(conn, q))
                return -1;
        MYSQL_RES *res = mysql_store_result(conn);
        MYSQL_ROW row;
        int found = -1;
        /* id, select_type, table, type, possible_keys, key, ... */
        while (res && (row = mysql_fetch_row(res)))
                if (row[2] && !strcmp(row[2], "r")) {
                        CU_ASSERT_STRING_EQUAL(row[5] ? row[5] : "", "PRIMARY");
                        kd_strlcpy(type, row[3] ? row[3] : "", size);
                        found = 0;
                }
        mysql_free_result(res);
        return found;
}

/* A run covers a row in one dive into kdelay_fired_run's primary key
 * (the nearest run at or below the seq): status, whose row is a constant
 * to the subquery, the takeover's guard and the test over many rows of
 * the claim read-back and lookup, built of constants, read no index
 * entry beyond it though 3,000 runs of the prefix come after the seq.
 * (The status test over many rows correlates the subquery with each:
 * MariaDB then reads the prefix's runs from its last one back to the
 * seq; docs/fate-protocol.md, "Runs of delivered claims".) */
static void test_covered_is_one_index_dive(void)
{
        MYSQL *conn = it_mysql_connect();
        char sql[4096], type[32];
        CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
        snprintf(sql, sizeof(sql), "USE `%s`", db);
        CU_ASSERT_EQUAL_FATAL(mysql_query(conn, sql), 0);
        CU_ASSERT_EQUAL_FATAL(
            mysql_query(conn, "INSERT INTO kdelay_fired_run SELECT "
                              "'dive:00000001.1', seq * 10, seq * 10 + 5, 1 "
                              "FROM seq_1_to_3000"),
            0);
        CU_ASSERT_EQUAL_FATAL(
            mysql_query(conn, "INSERT INTO kdelay_fate (task_id, state, "
                              "fire_at_ms, owner, decided_at_ms, "
                              "updated_at_ms) VALUES ('dive-1', 'FIRING', 1, "
                              "'dive:00000001.1:12', 1, 1), ('dive-2', "
                              "'FIRING', 1, 'dive:00000001.1:17', 1, 1)"),
            0);
        kd_sql_t st = {0};
        kd_sql_add(&st, "SELECT task_id, ");
        kd_fate_mysql_add_covered(&st);
        kd_sql_add(&st, " FROM kdelay_fate WHERE task_id = 'dive-1'");
        CU_ASSERT_FATAL(!st.oom);
        CU_ASSERT_EQUAL(explain_r(conn, st.buf, type, sizeof(type)), 0);
        CU_ASSERT_STRING_EQUAL(type, "range");
        CU_ASSERT_EQUAL(entries_walked(conn, st.buf), 0);
        printf("\n  status: kdelay_fired_run %s on PRIMARY, 0 entries walked",
               type);
        free(st.buf);
        kd_sql_t tk = {0};
        kd_sql_add(&tk, "SELECT task_id FROM kdelay_fate WHERE task_id IN "
                        "('dive-1', 'dive-2') AND state = 'FIRING'");
        kd_fate_mysql_add_uncovered(&tk, "dive:00000001.1:17");
        CU_ASSERT_FATAL(!tk.oom);
        CU_ASSERT_EQUAL(explain_r(conn, tk.buf, type, sizeof(type)), 0);
        CU_ASSERT_STRING_EQUAL(type, "range");
        CU_ASSERT_EQUAL(entries_walked(conn, tk.buf), 0);
        free(tk.buf);
        kd_sql_t many = {0};
        kd_sql_add(&many, "SELECT task_id, ");
        kd_fate_mysql_add_covered(&many);
        kd_sql_add(&many, " FROM kdelay_fate WHERE task_id IN ('dive-1', "
                          "'dive-2')");
        long long walked = entries_walked(conn, many.buf);
        printf(", two rows at once: %lld entries walked", walked);
        CU_ASSERT(walked >= 0 && walked <= 2 * 3000);
        free(many.buf);
        /* The claim read-back's and lookup's test: the owners as
         * constants, one dive each, and the answers. */
        const char *own[] = {"dive:00000001.1:12", "dive:00000001.1:17"};
        size_t own_lens[] = {18, 18};
        kd_sql_t of = {0};
        kd_sql_add(&of, "SELECT task_id, ");
        kd_fate_mysql_add_covered_of(&of, own, own_lens, 2);
        kd_sql_add(&of, " FROM kdelay_fate WHERE task_id IN ('dive-1', "
                        "'dive-2') ORDER BY task_id");
        CU_ASSERT_FATAL(!of.oom);
        CU_ASSERT_EQUAL(explain_r(conn, of.buf, type, sizeof(type)), 0);
        CU_ASSERT_STRING_EQUAL(type, "range");
        walked = entries_walked(conn, of.buf);
        CU_ASSERT_EQUAL(walked, 0);
        printf("; by constants: %s, %lld entries walked", type, walked);
        CU_ASSERT_EQUAL(mysql_query(conn, of.buf), 0);
        MYSQL_RES *res = mysql_store_result(conn);
        MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
        CU_ASSERT(row && row[1] && !strcmp(row[1], "1")); /* 12: in 10..15 */
        row = res ? mysql_fetch_row(res) : NULL;
        CU_ASSERT(row && row[1] && !strcmp(row[1], "0")); /* 17: after 15 */
        mysql_free_result(res);
        free(of.buf);
        mysql_query(conn, "DELETE FROM kdelay_fired_run");
        mysql_query(conn,
                    "DELETE FROM kdelay_fate WHERE task_id LIKE 'dive-%'");
        mysql_close(conn);
}

static const kd_fate_contract_t mysql_contract = {
    contract_init, contract_cleanup, mysql_open, mysql_put};

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_status_of_unknown_task_is_undecided),
            KD_TEST(test_cancel_before_claim_wins),
            KD_TEST(test_cancel_after_claim_is_too_late),
            KD_TEST(test_ids_with_sql_metacharacters),
            KD_TEST(test_invalid_ids_rejected),
            KD_TEST(test_migrate_is_idempotent),
            KD_TEST(test_migrate_reruns_unrecorded),
            KD_TEST(test_opt_in_step_waits_unless_fresh),
            KD_TEST(test_newer_schema_floor),
            KD_TEST(test_missing_schema_is_reported),
            KD_TEST(test_unreachable_mysql_is_retriable_error),
            KD_TEST(test_takeover_race_on_two_connections),
            KD_TEST(test_read_only_server_fails_then_recovers),
            KD_TEST(test_claim_batches_prepared),
            KD_TEST(test_claim_batches_prepared_without_bulk),
            KD_TEST(test_claim_bulk_refused_falls_back),
            KD_TEST(test_covered_is_one_index_dive),
            KD_TEST_END};
        const kd_test_suite_t suites[] = {
            {"fate", cases, suite_init, suite_cleanup, NULL, NULL},
            kd_fate_contract_suite("fate_contract_mysql", &mysql_contract),
            {NULL, NULL, NULL, NULL, NULL, NULL}};
        return kd_test_run_suites(suites);
}
