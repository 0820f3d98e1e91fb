/* Integration: a Kafka broker crashes under a running forwarder (issue 10
 * point 2). Needs a 3-node stack (stack.sh --nodes 3: replication factor 3,
 * min.insync.replicas=2); on any other stack it prints a skip line and exits
 * IT_SKIP, which ctest reports as skipped.
 *
 * The tier topics (3 partitions each) and the target topic are created with
 * the broker's default replication factor (3). One forwarder holds 300
 * tasks due 5..29 s ahead. Once the first tasks have fired, the node that
 * leads the most tier partitions is killed with SIGKILL (stack.sh node-stop
 * I --kill) and started again 5 s later (node-start I, which returns when it
 * is back in the ISR). Every task must arrive (0 lost), none before its
 * fire-at (0 early), and the forwarder must go on firing while the node is
 * down. Lateness is printed before the kill, inside the failover window
 * (due from the kill until 2 s after the node is back) and after it.
 * KD_FAILOVER_DOWN_MS=n (environment) keeps the node down n ms instead of
 * 5 s, to see the cluster without it for longer. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_env.h"
#include "kd_test.h"
#include "kd_util.h"

#define SEC          1000LL
#define N_TASKS      300
#define FIRST_DUE    (5 * SEC)  /* the first task's fire-at, after t0 */
#define SPAN         (24 * SEC) /* the tasks' fire-ats spread over this */
#define FIRED_BEFORE 20         /* tasks delivered before the kill */
#define KILL_AT      (8 * SEC)  /* the kill, at the earliest */
#define DOWN_FOR     (5 * SEC)  /* the node stays down this long */
#define SETTLE       (2 * SEC)  /* the failover window's end after node-start */
/* Behaviour bounds, not speed: a broker's crash costs the partitions it
 * led about broker.session.timeout.ms (4 s on the stack) until the
 * controller fences it and moves their leadership, plus librdkafka's
 * metadata refresh and retries; 30 s catches a forwarder that waits for a
 * session or transaction timeout, or for the node to come back. After the
 * failover, the cluster is whole again and lateness is back to normal
 * (p99 under 2 s, as test_forwarder's quiet bound with room for the
 * restarted node's catch-up). */
#define MAX_LATE_MS  30000
#define AFTER_P99_MS 2000

/* The broker whose node leads the most partitions of the tier topics of
 * prefix: its node index (node.id - 1, stack.sh's numbering), or -1. */
static int busiest_node(const char *prefix, int *brokers)
{
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_PRODUCER, NULL);
        const struct rd_kafka_metadata *md;
        int led[16] = {0}, best = -1;
        char tier[256];
        snprintf(tier, sizeof(tier), "%s.tier.", prefix);
        *brokers = 0;
        if (!rk || rd_kafka_metadata(rk, 1, NULL, &md, 10000)) {
                if (rk)
                        rd_kafka_destroy(rk);
                return -1;
        }
        *brokers = md->broker_cnt;
        for (int t = 0; t < md->topic_cnt; t++) {
                if (strncmp(md->topics[t].topic, tier, strlen(tier)))
                        continue;
                for (int p = 0; p < md->topics[t].partition_cnt; p++) {
                        int id = md->topics[t].partitions[p].leader;
                        if (id >= 1 && id <= 16)
                                led[id - 1]++;
                }
        }
        for (int i = 0; i < 16; i++)
                if (led[i] && (best < 0 || led[i] > led[best]))
                        best = i;
        if (best >= 0)
                printf("\n  tier partitions led by node %d: %d", best,
                       led[best]);
        rd_kafka_metadata_destroy(md);
        rd_kafka_destroy(rk);
        return best;
}

static void failover(const char *mode)
{
        char prefix[40], group[64], db[64], url[256], target[96], xmode[64];
        it_unique(prefix, sizeof(prefix), "itbf");
        it_unique(db, sizeof(db), "kdit_bf");
        snprintf(group, sizeof(group), "%s-group", prefix);
        snprintf(target, sizeof(target), "%s.target", prefix);
        snprintf(xmode, sizeof(xmode), "forwarder.delivery=%s", mode);
        CU_ASSERT_EQUAL_FATAL(it_db_create(db, 1, url, sizeof(url)), 0);
        CU_ASSERT_EQUAL_FATAL(it_tiers_create_rf(prefix, url, 3, -1), 0);
        CU_ASSERT_EQUAL_FATAL(it_create_topic_rf(target, 3, -1), 0);

        it_fwd_t f = {.instance = "fwFAILOVER", .pid = -1};
        const char *props[] = {xmode, "forwarder.hold_horizon=2s", NULL};
        CU_ASSERT_EQUAL_FATAL(
            it_fwd_start(&f, KDELAY_FORWARDER, prefix, group, url, props), 0);
        CU_ASSERT_EQUAL_FATAL(
            it_wait_log(f.log, "event=partitions_assigned", 30000), 0);

        kdelay_client_t *c = NULL;
        char errstr[512];
        CU_ASSERT_EQUAL_FATAL(kdelay_client_new(&c, it_conf_new(prefix, url),
                                                errstr, sizeof(errstr)),
                              KDELAY_OK);
        int64_t t0 = kd_now_ms(), fire_at[N_TASKS];
        for (int i = 0; i < N_TASKS; i++) {
                fire_at[i] = t0 + FIRST_DUE + i * SPAN / N_TASKS;
                CU_ASSERT_EQUAL_FATAL(it_schedule_v(c, target, prefix, i,
                                                    fire_at[i], errstr,
                                                    sizeof(errstr)),
                                      KDELAY_OK);
        }
        CU_ASSERT_EQUAL(kdelay_flush(c, 30000), KDELAY_OK);
        kdelay_client_destroy(c);

        const char *topics[] = {target, NULL};
        CU_ASSERT(it_wait_records(topics, FIRED_BEFORE, 30000) >= FIRED_BEFORE);
        it_sleep_until(t0 + KILL_AT);
        int brokers;
        int node = busiest_node(prefix, &brokers);
        CU_ASSERT_FATAL(brokers >= 3); /* KDELAY_KAFKA_NODES=3, truly */
        CU_ASSERT_FATAL(node >= 0 && node < brokers);
        char verb[64];
        snprintf(verb, sizeof(verb), "node-stop %d --kill", node);
        int64_t killed = kd_now_ms();
        CU_ASSERT_EQUAL_FATAL(it_stack(verb), 0);
        const char *down_env = getenv("KD_FAILOVER_DOWN_MS");
        it_sleep_until(killed + (down_env ? atoll(down_env) : DOWN_FOR));
        int64_t restarted = kd_now_ms();
        snprintf(verb, sizeof(verb), "node-start %d", node);
        CU_ASSERT_EQUAL_FATAL(it_stack(verb), 0);
        int64_t back = kd_now_ms();

        it_msg_t *msgs = NULL;
        CU_ASSERT_EQUAL(it_wait_records(topics, N_TASKS, 60000), N_TASKS);
        size_t cnt = it_consume_all(topics, &msgs, 3000, 30000);
        int seen[N_TASKS] = {0}, early = 0, fired_down = 0, fired_out = 0;
        int64_t late[3][N_TASKS], all[N_TASKS];
        size_t n_late[3] = {0}, n_all = 0;
        for (size_t k = 0; k < cnt; k++) {
                char *id = it_header(&msgs[k], KDELAY_HDR_ID);
                const char *dash = id ? strrchr(id, '-') : NULL;
                int i = dash ? atoi(dash + 1) : -1;
                if (i >= 0 && i < N_TASKS && !seen[i]++) {
                        int64_t ts = msgs[k].ts, l = ts - fire_at[i];
                        early += ts < fire_at[i];
                        fired_down += ts >= killed && ts < restarted;
                        fired_out += ts >= killed && ts < back;
                        int w = fire_at[i] < killed           ? 0
                                : fire_at[i] <= back + SETTLE ? 1
                                                              : 2;
                        late[w][n_late[w]++] = l;
                        all[n_all++] = l;
                }
                free(id);
                it_msg_free(&msgs[k]);
        }
        free(msgs);
        int missing = 0, dups = 0;
        for (int i = 0; i < N_TASKS; i++) {
                missing += !seen[i];
                dups += seen[i] > 1 ? seen[i] - 1 : 0;
        }
        CU_ASSERT_EQUAL(it_fwd_stop(&f, SIGTERM), 0);

        printf("\n  %s: node %d killed at +%lld ms, restarted %lld ms later, "
               "back in the ISR after %lld ms more; %zu records, missing %d, "
               "early %d, duplicates %d; fired while the node was down %d, "
               "before it was back %d",
               mode, node, (long long)(killed - t0),
               (long long)(restarted - killed), (long long)(back - restarted),
               cnt, missing, early, dups, fired_down, fired_out);
        int64_t p99[3], max[3], p99_all, max_all;
        static const char *const what[3] = {
            "(before the kill)", "(failover window)", "(after failover)"};
        for (int w = 0; w < 3; w++)
                it_report_lateness(what[w], late[w], n_late[w], &p99[w],
                                   &max[w]);
        it_report_lateness("(all)", all, n_all, &p99_all, &max_all);
        printf("\n");
        CU_ASSERT_EQUAL(missing, 0);
        CU_ASSERT_EQUAL(early, 0);
        CU_ASSERT(fired_out > 0);
        CU_ASSERT(max_all < MAX_LATE_MS);
        CU_ASSERT(p99[2] < AFTER_P99_MS);
        it_db_drop(db);
}

static void test_failover_at_least_once(void)
{
        failover("at_least_once");
}

static void test_failover_exactly_once(void)
{
        failover("exactly_once");
}

int main(void)
{
        if (it_kafka_nodes() < 3) {
                printf("test_broker_failover: skipped: needs a 3-node stack "
                       "(stack.sh --nodes 3, KDELAY_KAFKA_NODES=3), got "
                       "KDELAY_KAFKA_NODES=%d\n",
                       it_kafka_nodes());
                return IT_SKIP;
        }
        static const kd_test_case_t cases[] = {
            KD_TEST(test_failover_at_least_once),
            KD_TEST(test_failover_exactly_once), KD_TEST_END};
        return kd_test_run("broker_failover", cases, it_env_init, NULL);
}
