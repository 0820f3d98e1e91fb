/* SPDX-License-Identifier: Apache-2.0 */
/* Integration: pending tasks found, listed and rescheduled from the tier
 * topics (kdelayctl tasks find/list, status --scan, reschedule), and the
 * audit of claims a crash left FIRING (kdelayctl audit --fix).
 *
 * The scan cases run without a forwarder: every task stays pending,
 * spread over several tiers; a task copied into a shorter tier stands for
 * a hop in flight; one task is cancelled, one FIRED. The audit case kills
 * an exactly_once forwarder right after its first committed transaction
 * with fires (forwarder.fault.kill_after_commit=1), before it marks them
 * FIRED: audit finds those rows delivered and --fix marks them; after a
 * restart no FIRING row is left and every task arrived once. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <kdelay/producer.h>

#include "it_env.h"
#include "kd_fate.h"
#include "kd_test.h"
#include "kd_util.h"

#define SEC 1000LL
#define MIN (60 * SEC)

static char prefix[40], db[64], url[256], target[96], target2[96];
static kdelay_client_t *client; /* owned */
static kdelay_conf_t *conf;     /* owned: the client's twin */
static char *out, *err;         /* the last kdelayctl run's output */

static int suite_init(void)
{
        if (it_env_init())
                return -1;
        it_unique(prefix, sizeof(prefix), "ittsk");
        it_unique(db, sizeof(db), "kdit_tsk");
        snprintf(target, sizeof(target), "%s.target", prefix);
        snprintf(target2, sizeof(target2), "%s.other", prefix);
        char errstr[512];
        if (it_db_create(db, 1, url, sizeof(url)) ||
            it_tiers_create(prefix, url, 2) || it_create_topic(target, 2) ||
            it_create_topic(target2, 1) || !(conf = it_conf_new(prefix, url)))
                return -1;
        return kdelay_client_new(&client, it_conf_new(prefix, url), errstr,
                                 sizeof(errstr))
                   ? -1
                   : 0;
}

static int suite_cleanup(void)
{
        kdelay_client_destroy(client);
        kdelay_conf_destroy(conf);
        free(out);
        free(err);
        it_db_drop(db);
        return 0;
}

#define ctl(...) it_ctl(KDELAY_CTL, prefix, url, &out, &err, __VA_ARGS__, NULL)

/* Schedules id to topic at fire_at with key "k-<id>", value "v-<id>" and
 * user header h=1. */
static void schedule(const char *id, const char *topic, int64_t fire_at)
{
        char key[64], value[64], errstr[512];
        snprintf(key, sizeof(key), "k-%s", id);
        snprintf(value, sizeof(value), "v-%s", id);
        kdelay_header_t h = {"h", "1", 1};
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = topic;
        t.key = key;
        t.key_len = strlen(key);
        t.value = value;
        t.value_len = strlen(value);
        t.headers = &h;
        t.header_cnt = 1;
        t.fire_at_ms = fire_at;
        t.id = id;
        CU_ASSERT_EQUAL_FATAL(
            kdelay_schedule(client, &t, NULL, 0, errstr, sizeof(errstr)),
            KDELAY_OK);
}

/* A hop in flight: task id's record, as scheduled, copied into the tier
 * of a task due at `as_if` (a shorter one). Its topic into tier. */
static void copy_to_shorter_tier(const char *id, int64_t fire_at, int64_t as_if,
                                 char *tier, size_t tier_size)
{
        char topic[256], errstr[512];
        rd_kafka_headers_t *hdrs = NULL;
        kdelay_task_t t;
        kdelay_task_init(&t);
        t.topic = target;
        t.fire_at_ms = as_if;
        t.id = id;
        CU_ASSERT_EQUAL_FATAL(kdelay_task_record(conf, &t, tier, tier_size,
                                                 &hdrs, NULL, 0, errstr,
                                                 sizeof(errstr)),
                              KDELAY_OK);
        rd_kafka_headers_destroy(hdrs);
        t.fire_at_ms = fire_at;
        CU_ASSERT_EQUAL_FATAL(kdelay_task_record(conf, &t, topic, sizeof(topic),
                                                 &hdrs, NULL, 0, errstr,
                                                 sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_STRING_NOT_EQUAL(topic, tier);
        rd_kafka_t *p = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(rd_kafka_producev(
                            p, RD_KAFKA_V_TOPIC(tier), RD_KAFKA_V_HEADERS(hdrs),
                            RD_KAFKA_V_VALUE("v", 1), RD_KAFKA_V_END),
                        RD_KAFKA_RESP_ERR_NO_ERROR);
        CU_ASSERT_EQUAL(rd_kafka_flush(p, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(p);
}

/* The JSON lines of the last run's stdout: how many, and the object of
 * id (a new reference, NULL when absent; the caller deletes it). */
static int json_lines(const char *id, cJSON **objp)
{
        int n = 0;
        *objp = NULL;
        char *text = out ? strdup(out) : NULL, *save = NULL;
        for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l;
             l = strtok_r(NULL, "\n", &save)) {
                cJSON *o = cJSON_Parse(l);
                CU_ASSERT_PTR_NOT_NULL(o);
                n++;
                cJSON *oid = cJSON_GetObjectItem(o, "id");
                if (id && !*objp && cJSON_IsString(oid) &&
                    !strcmp(oid->valuestring, id))
                        *objp = o;
                else
                        cJSON_Delete(o);
        }
        free(text);
        return n;
}

static const char *str_of(const cJSON *o, const char *name)
{
        const cJSON *v = cJSON_GetObjectItem(o, name);
        return cJSON_IsString(v) ? v->valuestring : "";
}

/* Marks id FIRED in the fate table, as a forwarder would. */
static void mark_fired(const char *id)
{
        kd_fate_store_t *store = NULL;
        char errstr[256];
        CU_ASSERT_EQUAL_FATAL(kd_fate_store_new(&store, conf), KDELAY_OK);
        kd_fate_claim_t c = {id, strlen(id), 1, KDELAY_FATE_UNDECIDED};
        size_t len = strlen(id);
        CU_ASSERT_EQUAL(
            kd_fate_claim(store, &c, 1, "fw-test", errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(
            kd_fate_mark_fired(store, &id, &len, 1, errstr, sizeof(errstr)),
            KDELAY_OK);
        kd_fate_store_destroy(store);
}

static void test_list_find_and_reschedule(void)
{
        char ids[5][64], tier_a[256], errstr[512];
        const char *names[] = {"a", "b", "c", "d", "e"};
        for (int i = 0; i < 5; i++)
                snprintf(ids[i], sizeof(ids[i]), "%s-%s", prefix, names[i]);
        int64_t now = kd_now_ms();
        schedule(ids[0], target, now + 60 * MIN);
        schedule(ids[1], target, now + 3 * MIN);
        schedule(ids[2], target, now + 20 * SEC);
        schedule(ids[3], target, now + 60 * MIN);
        schedule(ids[4], target2, now + 10 * MIN);
        CU_ASSERT_EQUAL(kdelay_cancel(client, ids[3], errstr, sizeof(errstr)),
                        KDELAY_OK);
        copy_to_shorter_tier(ids[0], now + 60 * MIN, now + 20 * SEC, tier_a,
                             sizeof(tier_a));

        /* Every pending task once; the cancelled one not; the hop where
         * it goes. */
        cJSON *o;
        CU_ASSERT_EQUAL(ctl("tasks", "list", "--json", "--limit", "0"), 0);
        CU_ASSERT_EQUAL(json_lines(ids[0], &o), 4);
        CU_ASSERT_STRING_EQUAL(str_of(o, "tier_topic"), tier_a);
        CU_ASSERT_STRING_EQUAL(str_of(o, "state"), "PENDING");
        CU_ASSERT_STRING_EQUAL(str_of(o, "target"), target);
        cJSON_Delete(o);
        json_lines(ids[3], &o);
        CU_ASSERT_PTR_NULL(o);
        printf("\n  tasks list:\n%s", out);
        /* stats reads the heads back: pending ones have an age; the task
         * due in 20 s is within the hold horizon (30 s), so due to be
         * handled at once: overdue, with no forwarder (exit 1). */
        CU_ASSERT_EQUAL(ctl("stats", "--json"), 1);
        cJSON *stats = out ? cJSON_Parse(out) : NULL;
        int aged = 0, overdue = 0;
        const cJSON *tier;
        cJSON_ArrayForEach(tier,
                           cJSON_GetObjectItemCaseSensitive(stats, "tiers"))
        {
                const cJSON *age = cJSON_GetObjectItemCaseSensitive(
                    tier, "oldest_head_age_ms");
                const cJSON *over = cJSON_GetObjectItemCaseSensitive(
                    tier, "oldest_head_overdue_ms");
                aged += cJSON_IsNumber(age) && age->valuedouble >= 0;
                overdue += cJSON_IsNumber(over) && over->valuedouble > 0;
        }
        printf("\n  stats: %d tiers with a pending head, %d overdue", aged,
               overdue);
        CU_ASSERT(aged >= 2);
        CU_ASSERT(overdue >= 1 && overdue < aged);
        cJSON_Delete(stats);
        /* The text form: one line per task, by due time. */
        CU_ASSERT_EQUAL(ctl("tasks", "list"), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, ids[2]));
        CU_ASSERT(strstr(out, ids[2]) < strstr(out, ids[1]));
        CU_ASSERT(strstr(out, ids[1]) < strstr(out, ids[4]));

        /* Filters. */
        CU_ASSERT_EQUAL(ctl("tasks", "list", "--json", "--target", target2), 0);
        CU_ASSERT_EQUAL(json_lines(ids[4], &o), 1);
        CU_ASSERT_PTR_NOT_NULL(o);
        cJSON_Delete(o);
        char before[32], after[32];
        snprintf(before, sizeof(before), "%lld", (long long)(now + 5 * MIN));
        snprintf(after, sizeof(after), "%lld", (long long)(now + MIN));
        CU_ASSERT_EQUAL(ctl("tasks", "list", "--json", "--due-before", before),
                        0);
        CU_ASSERT_EQUAL(json_lines(NULL, &o), 2);
        CU_ASSERT_EQUAL(ctl("tasks", "list", "--json", "--due-after", after,
                            "--due-before", before),
                        0);
        CU_ASSERT_EQUAL(json_lines(ids[1], &o), 1);
        CU_ASSERT_PTR_NOT_NULL(o);
        cJSON_Delete(o);
        CU_ASSERT_EQUAL(ctl("tasks", "list", "--json", "--limit", "2"), 0);
        CU_ASSERT_EQUAL(json_lines(NULL, &o), 2);

        /* find and status --scan. */
        CU_ASSERT_EQUAL(ctl("tasks", "find", ids[1]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "PENDING"));
        CU_ASSERT_EQUAL(ctl("tasks", "find", ids[3]), 4);
        CU_ASSERT_EQUAL(ctl("tasks", "find", "nobody"), 4);
        CU_ASSERT_EQUAL(ctl("status", "--scan", "--json", ids[1]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"state\":\"PENDING\""));
        CU_ASSERT_EQUAL(ctl("status", "--scan", ids[3]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "CANCELLED"));
        CU_ASSERT_EQUAL(ctl("tasks", "list", "--limit", "x"), 2);

        /* reschedule: the old id cancelled, a new task with its content
         * and a link back. */
        CU_ASSERT_EQUAL(ctl("reschedule", "--delay", "2h", ids[1]), 0);
        char new_id[KDELAY_ID_MAX + 1];
        kd_strlcpy(new_id, out ? out : "", sizeof(new_id));
        new_id[strcspn(new_id, "\n")] = '\0';
        printf("  rescheduled %s as %s\n", ids[1], new_id);
        kdelay_status_t st;
        CU_ASSERT_EQUAL(
            kdelay_status(client, ids[1], &st, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(st.fate, KDELAY_FATE_CANCELLED);
        kdelay_pending_t p;
        CU_ASSERT_EQUAL_FATAL(
            kdelay_find(client, new_id, 30000, &p, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(p.target, target);
        CU_ASSERT(p.fire_at_ms >= now + 2 * 60 * MIN);
        const char *tiers[] = {p.tier_topic, NULL};
        it_msg_t *msgs = NULL;
        size_t cnt = it_consume_all(tiers, &msgs, 2000, 20000);
        int found = 0;
        for (size_t i = 0; i < cnt; i++) {
                char *id = it_header(&msgs[i], KDELAY_HDR_ID);
                if (id && !strcmp(id, new_id)) {
                        char *from =
                            it_header(&msgs[i], KDELAY_HDR_RESCHEDULED_FROM);
                        char *h = it_header(&msgs[i], "h");
                        found++;
                        CU_ASSERT(from && !strcmp(from, ids[1]));
                        CU_ASSERT(h && !strcmp(h, "1"));
                        CU_ASSERT(msgs[i].key_len == strlen(ids[1]) + 2 &&
                                  !memcmp(msgs[i].key, "k-", 2));
                        CU_ASSERT(msgs[i].len == strlen(ids[1]) + 2 &&
                                  !memcmp(msgs[i].value, "v-", 2));
                        free(from);
                        free(h);
                }
                free(id);
                it_msg_free(&msgs[i]);
        }
        free(msgs);
        CU_ASSERT_EQUAL(found, 1);
        /* Again: the old task is cancelled now, nothing pending. */
        CU_ASSERT_EQUAL(ctl("reschedule", "--delay", "2h", ids[1]), 4);
        /* Fired first: too late, nothing scheduled. */
        mark_fired(ids[4]);
        CU_ASSERT_EQUAL(ctl("reschedule", "--delay", "2h", ids[4]), 3);
        CU_ASSERT_EQUAL(ctl("tasks", "list", "--json", "--target", target2), 0);
        CU_ASSERT_EQUAL(json_lines(NULL, &o), 0);
        /* Finishing a reschedule whose new task was not written: the old
         * one is cancelled, its record pending; the same new id again. */
        char resumed[80];
        snprintf(resumed, sizeof(resumed), "%s-resumed", ids[2]);
        CU_ASSERT_EQUAL(kdelay_cancel(client, ids[2], errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(
            ctl("reschedule", "--delay", "1h", "--new-id", resumed, ids[2]), 0);
        CU_ASSERT_EQUAL(ctl("tasks", "find", resumed), 0);
        CU_ASSERT_EQUAL(ctl("reschedule", "--delay", "1h", ids[0]), 0);
        CU_ASSERT_EQUAL(ctl("reschedule", "--at", "x", ids[0]), 2);
        CU_ASSERT_EQUAL(ctl("reschedule", ids[0]), 2);
}

/* FIRING rows of the fate table, by a store of conf. */
static size_t firing_rows(void)
{
        kd_fate_store_t *store = NULL;
        kd_fate_firing_t rows[64];
        size_t n = 0;
        char errstr[256];
        CU_ASSERT_EQUAL_FATAL(kd_fate_store_new(&store, conf), KDELAY_OK);
        CU_ASSERT_EQUAL(kd_fate_firing(store, INT64_MAX, INT64_MAX, rows, 64,
                                       &n, errstr, sizeof(errstr)),
                        KDELAY_OK);
        kd_fate_store_destroy(store);
        return n;
}

static double summary_of(const char *name)
{
        cJSON *o = out ? cJSON_Parse(out) : NULL;
        const cJSON *v =
            cJSON_GetObjectItem(cJSON_GetObjectItem(o, "summary"), name);
        double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
        cJSON_Delete(o);
        return d;
}

#define N_AUDIT 40

static void test_audit_fixes_claims_of_a_killed_forwarder(void)
{
        char group[64], grp_prop[96], aud_target[96], errstr[512];
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(grp_prop, sizeof(grp_prop), "forwarder.group_id=%s", group);
        snprintf(aud_target, sizeof(aud_target), "%s.audited", prefix);
        CU_ASSERT_EQUAL_FATAL(it_create_topic(aud_target, 2), 0);
        it_fwd_t f = {.instance = "fwAUDIT", .pid = -1};
        const char *faulty[] = {"forwarder.delivery=exactly_once",
                                "forwarder.static_membership=1",
                                "forwarder.fault.kill_after_commit=1", NULL};
        const char *props[] = {"forwarder.delivery=exactly_once",
                               "forwarder.static_membership=1", NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, faulty), 0);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(f.log, "event=partitions_assigned", 30000), 0);
        int64_t due = kd_now_ms() + 3 * SEC;
        for (long i = 0; i < N_AUDIT; i++)
                CU_ASSERT_EQUAL_FATAL(it_schedule_v(client, aud_target, prefix,
                                                    100 + i, due, errstr,
                                                    sizeof(errstr)),
                                      KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_flush(client, 30000), KDELAY_OK);
        /* Killed by its fault right after its first commit with fires. */
        CU_ASSERT_EQUAL(it_wait_pid(f.pid, 60000), 128 + SIGKILL);
        f.pid = -1;
        CU_ASSERT_EQUAL(
            it_log_count(f.log, "event=fault_injected what=kill_after_commit"),
            1);
        size_t stuck = firing_rows();
        CU_ASSERT_EQUAL(
            ctl("audit", "-X", grp_prop, "--older-than", "0s", "--json"), 1);
        double delivered = summary_of("delivered");
        printf("\n  killed after its first commit: %zu FIRING rows, audit: "
               "%s",
               stuck, out);
        CU_ASSERT(delivered >= 1);
        CU_ASSERT(delivered <= (double)stuck);
        CU_ASSERT_EQUAL(summary_of("fixed"), 0);
        /* Fixed rows are no findings; rows claimed for the transaction
         * that never committed are pending: their records are re-read. */
        CU_ASSERT_EQUAL(
            ctl("audit", "-X", grp_prop, "--older-than", "0s", "--fix"),
            stuck > (size_t)delivered ? 1 : 0);
        printf("  audit --fix: %s", out);
        /* The findings table: a delivered row, fixed. */
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "FIRING_ID "));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, " delivered     fixed "));
        CU_ASSERT_EQUAL(firing_rows(), stuck - (size_t)delivered);

        /* Restarted: the rest fire; then nothing is left to audit. */
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, props), 0);
        const char *topics[] = {aud_target, NULL};
        CU_ASSERT_EQUAL(it_wait_records(topics, N_AUDIT, 60000), N_AUDIT);
        int64_t until = kd_now_ms() + 30 * SEC;
        while (firing_rows() > 0 && kd_now_ms() < until)
                it_sleep_until(kd_now_ms() + 200);
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);
        size_t left = firing_rows();
        CU_ASSERT_EQUAL(left, 0);
        it_msg_t *msgs = NULL;
        size_t cnt = it_consume_all(topics, &msgs, 3000, 30000);
        for (size_t i = 0; i < cnt; i++)
                it_msg_free(&msgs[i]);
        free(msgs);
        CU_ASSERT_EQUAL(cnt, N_AUDIT);
        int rc = ctl("audit", "-X", grp_prop, "--older-than", "0s");
        printf("  after the restart: %zu records for %d tasks, FIRING rows "
               "%zu; audit exit %d: %s",
               cnt, N_AUDIT, left, rc, out);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "firing=0 "));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "overdue_partitions=0 "));
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_list_find_and_reschedule),
            KD_TEST(test_audit_fixes_claims_of_a_killed_forwarder),
            KD_TEST_END};
        return kd_test_run("tasks", cases, suite_init, suite_cleanup);
}
