/* SPDX-License-Identifier: Apache-2.0 */
/* The in-memory fate store: the fate store contract (as the MySQL store
 * passes it in tests/integration/test_fate.c), then what only it has:
 * fault injection, delay, call counts, rows read and written directly,
 * and its mutex under threads. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kd_conf.h"
#include "kd_fate_contract.h"
#include "kd_fate_mem.h"
#include "kd_test.h"
#include "kd_util.h"

static int mem_open(kd_fate_store_t **storep)
{
        return kd_fate_mem_new(storep) ? -1 : 0;
}

static int mem_put(kd_fate_store_t *store, const char *id, kdelay_fate_t fate,
                   int64_t fire_at_ms, int64_t decided_at_ms)
{
        kd_fate_mem_row_t row = {fate, fire_at_ms, decided_at_ms, decided_at_ms,
                                 ""};
        return kd_fate_mem_put(store, id, strlen(id), &row) ? -1 : 0;
}

static const kd_fate_contract_t mem_contract = {NULL, NULL, mem_open, mem_put};

static kd_fate_store_t *store; /* owned: this case's */
static char errstr[256];

static void setup(void)
{
        if (kd_fate_mem_new(&store))
                store = NULL;
}

static void teardown(void)
{
        kd_fate_store_destroy(store);
        store = NULL;
}

static kdelay_err_t claim1(const char *id, const char *owner,
                           kd_fate_claim_t *c)
{
        *c = (kd_fate_claim_t){id,   strlen(id), 5, KDELAY_FATE_UNDECIDED,
                               NULL, ""};
        return kd_fate_claim(store, c, 1, owner, errstr, sizeof(errstr));
}

static kdelay_fate_t fate_of(const char *id)
{
        kd_fate_mem_row_t row;
        CU_ASSERT_EQUAL(kd_fate_mem_get(store, id, strlen(id), &row),
                        KDELAY_OK);
        return row.fate;
}

static void test_fail_next_fails_calls_and_changes_nothing(void)
{
        kd_fate_claim_t c;
        CU_ASSERT_PTR_NOT_NULL_FATAL(store);
        CU_ASSERT_EQUAL(kd_fate_mem_fail_next(store, 2, KDELAY_ERR_MYSQL),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(claim1("a", "fw-1", &c), KDELAY_ERR_MYSQL);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "KDELAY_ERR_MYSQL"));
        CU_ASSERT_EQUAL(kd_fate_cancel(store, "b", 1, errstr, sizeof(errstr)),
                        KDELAY_ERR_MYSQL);
        CU_ASSERT_EQUAL(fate_of("a"), KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(fate_of("b"), KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(kd_fate_statements(store), 0);
        /* The third call goes through. */
        CU_ASSERT_EQUAL(claim1("a", "fw-1", &c), KDELAY_OK);
        CU_ASSERT_EQUAL(c.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(kd_fate_mem_calls(store), 3);
        CU_ASSERT_EQUAL(kd_fate_statements(store), 2);
        /* n = 0 ends an injection. */
        CU_ASSERT_EQUAL(kd_fate_mem_fail_next(store, 5, KDELAY_ERR_SCHEMA),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_store_connect(store, errstr, sizeof(errstr)),
                        KDELAY_ERR_SCHEMA);
        CU_ASSERT_EQUAL(kd_fate_mem_fail_next(store, 0, KDELAY_ERR_MYSQL),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_store_connect(store, errstr, sizeof(errstr)),
                        KDELAY_OK);
}

static void test_every_operation_can_fail(void)
{
        const char *id = "x";
        size_t len = 1;
        int64_t fa = 1;
        uint64_t got, lo = 1, hi = 2;
        kdelay_status_t st;
        kd_fate_claim_t c = {id, 1, 1, KDELAY_FATE_UNDECIDED, "tok", ""};
        CU_ASSERT_PTR_NOT_NULL_FATAL(store);
        CU_ASSERT_EQUAL(kd_fate_mem_fail_next(store, 10, KDELAY_ERR_TIMED_OUT),
                        KDELAY_OK);
        kdelay_err_t errs[] = {
            kd_fate_store_connect(store, errstr, sizeof(errstr)),
            kd_fate_cancel(store, id, len, errstr, sizeof(errstr)),
            kd_fate_status(store, id, len, &st, errstr, sizeof(errstr)),
            kd_fate_claim(store, &c, 1, NULL, errstr, sizeof(errstr)),
            kd_fate_takeover(store, &c, 1, errstr, sizeof(errstr)),
            kd_fate_mark_fired(store, &id, &len, 1, errstr, sizeof(errstr)),
            kd_fate_note_cancelled(store, &id, &len, &fa, 1, errstr,
                                   sizeof(errstr)),
            kd_fate_gc(store, 0, 0, 1, &got, errstr, sizeof(errstr)),
            kd_fate_mark_runs(store, "fw:1.1", &lo, &hi, 1, errstr,
                              sizeof(errstr)),
            kd_fate_gc_runs(store, 0, 1, &got, errstr, sizeof(errstr))};
        for (size_t i = 0; i < KD_ARRAY_LEN(errs); i++)
                CU_ASSERT_EQUAL(errs[i], KDELAY_ERR_TIMED_OUT);
        CU_ASSERT_EQUAL(kd_fate_mem_calls(store), 10);
        CU_ASSERT_EQUAL(kd_fate_statements(store), 0);
        CU_ASSERT_EQUAL(
            kd_fate_status(store, id, len, &st, errstr, sizeof(errstr)),
            KDELAY_OK);
}

static void test_delay_slows_every_call(void)
{
        kd_fate_claim_t c;
        CU_ASSERT_PTR_NOT_NULL_FATAL(store);
        CU_ASSERT_EQUAL(kd_fate_mem_set_delay(store, 60), KDELAY_OK);
        int64_t t0 = kd_mono_ms();
        CU_ASSERT_EQUAL(claim1("a", "fw-1", &c), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_store_connect(store, errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT(kd_mono_ms() - t0 >= 120);
        /* A fault still waits first: a slow failure. */
        CU_ASSERT_EQUAL(kd_fate_mem_fail_next(store, 1, KDELAY_ERR_MYSQL),
                        KDELAY_OK);
        t0 = kd_mono_ms();
        CU_ASSERT_EQUAL(claim1("b", "fw-1", &c), KDELAY_ERR_MYSQL);
        CU_ASSERT(kd_mono_ms() - t0 >= 60);
        CU_ASSERT_EQUAL(kd_fate_mem_set_delay(store, 0), KDELAY_OK);
        t0 = kd_mono_ms();
        CU_ASSERT_EQUAL(claim1("b", "fw-1", &c), KDELAY_OK);
        CU_ASSERT(kd_mono_ms() - t0 < 60);
}

/* Refused arguments and empty batches never reach the store. */
static void test_calls_count_what_reaches_the_store(void)
{
        char big[KDELAY_ID_MAX + 1];
        memset(big, 'b', sizeof(big));
        CU_ASSERT_PTR_NOT_NULL_FATAL(store);
        CU_ASSERT_EQUAL(
            kd_fate_claim(store, NULL, 0, "fw", errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(
            kd_fate_cancel(store, big, sizeof(big), errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_ID);
        CU_ASSERT_EQUAL(kd_fate_mem_calls(store), 0);
        CU_ASSERT_EQUAL(kd_fate_cancel(store, "c", 1, errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_statements(store), 1);
        CU_ASSERT_EQUAL(kd_fate_mem_calls(store), 1);
}

static void test_get_and_put_rows(void)
{
        kd_fate_claim_t c;
        kd_fate_mem_row_t row = {KDELAY_FATE_FIRING, 77, 10, 20, "fw-9"};
        CU_ASSERT_PTR_NOT_NULL_FATAL(store);
        CU_ASSERT_EQUAL(kd_fate_mem_put(store, "p", 1, &row), KDELAY_OK);
        CU_ASSERT_EQUAL(claim1("p", "fw-1", &c), KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(c.row_owner, "fw-9");
        kd_fate_mem_row_t got;
        CU_ASSERT_EQUAL(kd_fate_mem_get(store, "p", 1, &got), KDELAY_OK);
        CU_ASSERT_EQUAL(got.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_EQUAL(got.fire_at_ms, 77);
        CU_ASSERT_EQUAL(got.decided_at_ms, 10);
        CU_ASSERT_EQUAL(got.updated_at_ms, 20);
        CU_ASSERT_STRING_EQUAL(got.owner, "fw-9");
        /* Rewritten: CANCELLED without due time or owner. */
        row = (kd_fate_mem_row_t){KDELAY_FATE_CANCELLED, -1, 30, 30, ""};
        CU_ASSERT_EQUAL(kd_fate_mem_put(store, "p", 1, &row), KDELAY_OK);
        CU_ASSERT_EQUAL(claim1("p", "fw-1", &c), KDELAY_OK);
        CU_ASSERT_EQUAL(c.fate, KDELAY_FATE_CANCELLED);
        CU_ASSERT_EQUAL(kd_fate_mem_get(store, "p", 1, &got), KDELAY_OK);
        CU_ASSERT_EQUAL(got.fire_at_ms, -1);
        CU_ASSERT_STRING_EQUAL(got.owner, "");
        /* UNDECIDED deletes; get and put are not calls. */
        row.fate = KDELAY_FATE_UNDECIDED;
        CU_ASSERT_EQUAL(kd_fate_mem_put(store, "p", 1, &row), KDELAY_OK);
        CU_ASSERT_EQUAL(fate_of("p"), KDELAY_FATE_UNDECIDED);
        CU_ASSERT_EQUAL(kd_fate_mem_calls(store), 2);
}

static void test_hooks_refuse_bad_arguments(void)
{
        kd_fate_store_t *my = NULL;
        kdelay_conf_t *conf = kdelay_conf_new();
        kd_fate_mem_row_t row;
        char big[KDELAY_ID_MAX + 1] = {0};
        CU_ASSERT_PTR_NOT_NULL_FATAL(store);
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        /* A MySQL store connects on first use: this one never does. */
        CU_ASSERT_EQUAL_FATAL(kd_fate_store_new(&my, conf), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_mem_fail_next(my, 1, KDELAY_ERR_MYSQL),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fate_mem_set_delay(my, 1), KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fate_mem_calls(my), 0);
        CU_ASSERT_EQUAL(kd_fate_mem_get(my, "a", 1, &row),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fate_mem_put(my, "a", 1, &row),
                        KDELAY_ERR_INVALID_ARG);
        kd_fate_store_destroy(my);
        kdelay_conf_destroy(conf);
        CU_ASSERT_EQUAL(kd_fate_mem_fail_next(store, 1, KDELAY_OK),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fate_mem_set_delay(store, -1),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kd_fate_mem_get(store, big, sizeof(big), &row),
                        KDELAY_ERR_INVALID_ID);
}

/* Enough rows to grow the table many times, then gc takes them all. */
static void test_many_rows(void)
{
        enum { N = 20000, B = 500 };
        static char ids[N][16];
        static kd_fate_claim_t items[B];
        CU_ASSERT_PTR_NOT_NULL_FATAL(store);
        for (int i = 0; i < N; i += B) {
                for (int j = 0; j < B; j++) {
                        snprintf(ids[i + j], sizeof(ids[0]), "m%d", i + j);
                        items[j] =
                            (kd_fate_claim_t){ids[i + j], strlen(ids[i + j]),
                                              i + j,      KDELAY_FATE_UNDECIDED,
                                              NULL,       ""};
                }
                CU_ASSERT_EQUAL_FATAL(kd_fate_claim(store, items, B, "fw",
                                                    errstr, sizeof(errstr)),
                                      KDELAY_OK);
        }
        int firing = 0;
        for (int i = 0; i < N; i++)
                firing += fate_of(ids[i]) == KDELAY_FATE_FIRING;
        CU_ASSERT_EQUAL(firing, N);
        uint64_t got = 0, total = 0;
        do {
                CU_ASSERT_EQUAL_FATAL(kd_fate_gc(store, kd_now_ms() + 1000, 0,
                                                 3000, &got, errstr,
                                                 sizeof(errstr)),
                                      KDELAY_OK);
                total += got;
        } while (got == 3000);
        CU_ASSERT_EQUAL(total, N);
        CU_ASSERT_EQUAL(fate_of(ids[N - 1]), KDELAY_FATE_UNDECIDED);
}

enum { KD_RACERS = 4, KD_RACE_IDS = 300 };
static char race_ids[KD_RACE_IDS][16];
static int race_wins[KD_RACERS];

/* One forwarder: claims every id one at a time; counts what it won. */
static void *racer(void *arg)
{
        int me = (int)(intptr_t)arg;
        char owner[16], err[128];
        snprintf(owner, sizeof(owner), "fw-%d", me);
        for (int i = 0; i < KD_RACE_IDS; i++) {
                kd_fate_claim_t c = {race_ids[i], strlen(race_ids[i]),
                                     1,           KDELAY_FATE_UNDECIDED,
                                     NULL,        ""};
                if (kd_fate_claim(store, &c, 1, owner, err, sizeof(err)))
                        return NULL;
                race_wins[me] += !strcmp(c.row_owner, owner);
        }
        return NULL;
}

/* Claims from threads at once: every id is won exactly once. */
static void test_concurrent_claims_win_once(void)
{
        pthread_t t[KD_RACERS];
        CU_ASSERT_PTR_NOT_NULL_FATAL(store);
        for (int i = 0; i < KD_RACE_IDS; i++)
                snprintf(race_ids[i], sizeof(race_ids[i]), "r%d", i);
        for (int i = 0; i < KD_RACERS; i++) {
                race_wins[i] = 0;
                CU_ASSERT_EQUAL_FATAL(
                    pthread_create(&t[i], NULL, racer, (void *)(intptr_t)i), 0);
        }
        for (int i = 0; i < KD_RACERS; i++)
                pthread_join(t[i], NULL);
        int total = 0;
        for (int i = 0; i < KD_RACERS; i++)
                total += race_wins[i];
        CU_ASSERT_EQUAL(total, KD_RACE_IDS);
        CU_ASSERT_EQUAL(kd_fate_mem_calls(store), KD_RACERS * KD_RACE_IDS);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_fail_next_fails_calls_and_changes_nothing),
            KD_TEST(test_every_operation_can_fail),
            KD_TEST(test_delay_slows_every_call),
            KD_TEST(test_calls_count_what_reaches_the_store),
            KD_TEST(test_get_and_put_rows),
            KD_TEST(test_hooks_refuse_bad_arguments),
            KD_TEST(test_many_rows),
            KD_TEST(test_concurrent_claims_win_once),
            KD_TEST_END};
        const kd_test_suite_t suites[] = {
            kd_fate_contract_suite("fate_contract_mem", &mem_contract),
            {"fate_mem", cases, NULL, NULL, setup, teardown},
            {NULL, NULL, NULL, NULL, NULL, NULL}};
        return kd_test_run_suites(suites);
}
