/* SPDX-License-Identifier: Apache-2.0 */
/* The client's error returns that need no broker and no MySQL: each one
 * returns its code and fills errstr, as include/kdelay/kdelay.h promises;
 * nothing is sent and no callback is called. */
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_test.h"

#define UNTOUCHED "untouched"

static char errstr[512];

/* Asserts that call returns want and leaves a message in errstr. */
#define EXPECT_FAIL(call, want)                                                \
        do {                                                                   \
                memcpy(errstr, UNTOUCHED, sizeof(UNTOUCHED));                  \
                CU_ASSERT_EQUAL((call), (want));                               \
                CU_ASSERT_NOT_EQUAL(errstr[0], '\0');                          \
                CU_ASSERT_STRING_NOT_EQUAL(errstr, UNTOUCHED);                 \
        } while (0)

static int cb_calls;

static void count_cb(kdelay_err_t err, const char *task_id, const char *detail,
                     void *opaque)
{
        (void)err;
        (void)task_id;
        (void)detail;
        (void)opaque;
        cb_calls++;
}

/* A client whose producer could reach no broker (port 1) and with no MySQL:
 * none of the calls below may get that far. */
static kdelay_client_t *client_new(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        kdelay_client_t *c = NULL;
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL_FATAL(kdelay_conf_set(conf, "brokers", "127.0.0.1:1",
                                              errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(
            kdelay_client_new(&c, conf, errstr, sizeof(errstr)), KDELAY_OK);
        return c;
}

static void test_null_arguments(void)
{
        kdelay_task_t task;
        kdelay_status_t st;
        kdelay_client_t *c = NULL;
        char id[KDELAY_ID_MAX + 1];
        kdelay_task_init(&task);
        task.topic = "orders";
        task.delay_ms = 1000;

        EXPECT_FAIL(kdelay_client_new(NULL, NULL, errstr, sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);
        EXPECT_FAIL(kdelay_client_new(&c, NULL, errstr, sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_PTR_NULL(c);
        EXPECT_FAIL(kdelay_schedule(NULL, &task, id, sizeof(id), errstr,
                                    sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);
        EXPECT_FAIL(kdelay_schedule_async(NULL, &task, count_cb, NULL, id,
                                          sizeof(id), errstr, sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);
        EXPECT_FAIL(kdelay_cancel(NULL, "a", errstr, sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);
        EXPECT_FAIL(kdelay_status(NULL, "a", &st, errstr, sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);
        /* No errstr at all is allowed. */
        CU_ASSERT_EQUAL(kdelay_cancel(NULL, "a", NULL, 0),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kdelay_flush(NULL, 0), KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kdelay_poll(NULL, 0), 0);
        CU_ASSERT_EQUAL(kdelay_outq_len(NULL), 0);

        c = client_new();
        EXPECT_FAIL(kdelay_status(c, "a", NULL, errstr, sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);
        EXPECT_FAIL(
            kdelay_schedule(c, NULL, id, sizeof(id), errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_ARG);
        EXPECT_FAIL(kdelay_schedule_async(c, NULL, count_cb, NULL, id,
                                          sizeof(id), errstr, sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);
        kdelay_client_destroy(c);
        CU_ASSERT_EQUAL(cb_calls, 0);
}

static void test_bad_ids(void)
{
        kdelay_client_t *c = client_new();
        kdelay_status_t st;
        char longid[KDELAY_ID_MAX + 2];
        memset(longid, 'a', sizeof(longid) - 1);
        longid[sizeof(longid) - 1] = '\0';
        const char *const bad[] = {NULL, "", "\xff\xfe", longid};

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                EXPECT_FAIL(kdelay_cancel(c, bad[i], errstr, sizeof(errstr)),
                            KDELAY_ERR_INVALID_ID);
                EXPECT_FAIL(
                    kdelay_status(c, bad[i], &st, errstr, sizeof(errstr)),
                    KDELAY_ERR_INVALID_ID);
        }
        kdelay_client_destroy(c);
}

/* cancel and status without mysql.url: the store's answer reaches errstr. */
static void test_mysql_not_configured(void)
{
        kdelay_client_t *c = client_new();
        kdelay_status_t st;
        EXPECT_FAIL(kdelay_cancel(c, "task-1", errstr, sizeof(errstr)),
                    KDELAY_ERR_NOT_CONFIGURED);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "mysql.url"));
        EXPECT_FAIL(kdelay_status(c, "task-1", &st, errstr, sizeof(errstr)),
                    KDELAY_ERR_NOT_CONFIGURED);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "mysql.url"));
        kdelay_client_destroy(c);
}

/* Each task is refused, by schedule and schedule_async alike, before
 * anything is enqueued. */
static void test_bad_tasks(void)
{
        static const kdelay_header_t reserved = {"kdelay-id", "x", 1};
        static const kdelay_header_t no_value = {"h", NULL, 3};
        kdelay_client_t *c = client_new();
        char id[KDELAY_ID_MAX + 1];
        struct {
                kdelay_task_t t;
                kdelay_err_t want;
        } cases[13];
        size_t n = 0;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                kdelay_task_init(&cases[i].t);
                cases[i].t.topic = "orders";
                cases[i].t.delay_ms = 1000;
        }
        cases[n].t.topic = NULL;
        cases[n++].want = KDELAY_ERR_INVALID_ARG;
        cases[n].t.topic = "no spaces";
        cases[n++].want = KDELAY_ERR_INVALID_TOPIC;
        cases[n].t.topic = "kdelay.dead";
        cases[n++].want = KDELAY_ERR_INVALID_TOPIC;
        cases[n].t.topic = "__consumer_offsets"; /* Kafka's internal */
        cases[n++].want = KDELAY_ERR_INVALID_TOPIC;
        cases[n].t.topic = "__anything";
        cases[n++].want = KDELAY_ERR_INVALID_TOPIC;
        cases[n].t.value_len = 4;
        cases[n++].want = KDELAY_ERR_INVALID_ARG;
        cases[n].t.headers = &reserved;
        cases[n].t.header_cnt = 1;
        cases[n++].want = KDELAY_ERR_INVALID_HEADER;
        cases[n].t.headers = &no_value;
        cases[n].t.header_cnt = 1;
        cases[n++].want = KDELAY_ERR_INVALID_HEADER;
        cases[n].t.delay_ms = KDELAY_TIME_UNSET;
        cases[n++].want = KDELAY_ERR_INVALID_ARG;
        cases[n].t.fire_at_ms = 1;
        cases[n++].want = KDELAY_ERR_INVALID_ARG;
        cases[n].t.delay_ms = -1;
        cases[n++].want = KDELAY_ERR_INVALID_TIME;
        cases[n].t.delay_ms = KDELAY_MAX_DELAY_MS + 1;
        cases[n++].want = KDELAY_ERR_INVALID_TIME;
        cases[n].t.id = "";
        cases[n++].want = KDELAY_ERR_INVALID_ID;
        CU_ASSERT_EQUAL_FATAL(n, sizeof(cases) / sizeof(cases[0]));

        for (size_t i = 0; i < n; i++) {
                EXPECT_FAIL(kdelay_schedule(c, &cases[i].t, id, sizeof(id),
                                            errstr, sizeof(errstr)),
                            cases[i].want);
                EXPECT_FAIL(kdelay_schedule_async(c, &cases[i].t, count_cb,
                                                  NULL, id, sizeof(id), errstr,
                                                  sizeof(errstr)),
                            cases[i].want);
        }
        /* An id_out too small for the id is refused before sending. */
        kdelay_task_t ok;
        kdelay_task_init(&ok);
        ok.topic = "orders";
        ok.delay_ms = 1000;
        ok.id = "a-task-id";
        EXPECT_FAIL(kdelay_schedule(c, &ok, id, 4, errstr, sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);
        EXPECT_FAIL(kdelay_schedule_async(c, &ok, count_cb, NULL, id, 4, errstr,
                                          sizeof(errstr)),
                    KDELAY_ERR_INVALID_ARG);

        CU_ASSERT_EQUAL(kdelay_outq_len(c), 0);
        CU_ASSERT_EQUAL(kdelay_flush(c, 0), KDELAY_OK);
        kdelay_client_destroy(c);
        CU_ASSERT_EQUAL(cb_calls, 0);
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_null_arguments),
    KD_TEST(test_bad_ids),
    KD_TEST(test_mysql_not_configured),
    KD_TEST(test_bad_tasks),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("client", cases, NULL, NULL);
}
