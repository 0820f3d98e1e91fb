/* SPDX-License-Identifier: Apache-2.0 */
/* The rebalance stage asks librdkafka for the group's rebalance protocol
 * once (rebalance.c, cooperative()), never again: asked in the revoke
 * that rd_kafka_consumer_close serves at a stop, rd_kafka_rebalance_
 * protocol can block for ever (librdkafka#4041; seen in a clean-clone CI
 * run: a forwarder's SIGTERM hung after event=partitions_revoked, its
 * main thread in rd_kafka_rebalance_protocol under
 * rd_kafka_consumer_close, until the stack went down).
 *
 * The run tracker across a revoke (forwarder.fate_marks=runs; review of
 * issue 44): a claim out on a store too slow to answer within the revoke
 * leaves a seq whose task is dropped, its row FIRING under its token: the
 * seq is parked, never covered by a run, so the row reads FIRING for the
 * next owner, who takes it over (both protocols); under the cooperative
 * protocol, a kept partition's claimed task is parked by the revoke's new
 * generation too (the tracker holds one generation's window), so,
 * delivered after, it marks its row FIRED alone, and its partition's next
 * claims go into the new generation's runs.
 *
 * A forwarder made but never run (kd_test_fwd_vt), its mode started; the
 * test links its own rd_kafka_rebalance_protocol, rd_kafka_assign,
 * rd_kafka_incremental_assign and _unassign and rd_kafka_commit (the
 * consumer never joins a group), which take the place of librdkafka's for
 * the forwarder's calls and count them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/kd_dlist.h"
#include "core/kd_timer.h"
#include "fwd_offline.h"
#include "kd_fate_mem.h"
#include "kd_test.h"
#include "modes/kd_mode.h"
#include "pipeline/kd_claim.h"
#include "pipeline/kd_pipeline_state.h"
#include "pipeline/kd_rebalance.h"
#include "pipeline/kd_runs.h"
#include "pipeline/kd_settle.h"
#include "producer/kd_producer.h"
#include "store/kd_store_state.h"
#include "top/kd_fwd.h"

#define MONO0 1000000
#define WALL0 1700000000000

static struct {
        int protocol, assign, commit;
} calls;

/* What the stand-in answers ("EAGER" unless a test says otherwise). */
static const char *protocol = "EAGER";

const char *rd_kafka_rebalance_protocol(rd_kafka_t *rk)
{
        (void)rk;
        calls.protocol++;
        return protocol;
}

rd_kafka_error_t *
rd_kafka_incremental_assign(rd_kafka_t *rk,
                            const rd_kafka_topic_partition_list_t *l)
{
        (void)rk;
        (void)l;
        calls.assign++;
        return NULL;
}

rd_kafka_error_t *
rd_kafka_incremental_unassign(rd_kafka_t *rk,
                              const rd_kafka_topic_partition_list_t *l)
{
        (void)rk;
        (void)l;
        calls.assign++;
        return NULL;
}

rd_kafka_resp_err_t rd_kafka_assign(rd_kafka_t *rk,
                                    const rd_kafka_topic_partition_list_t *l)
{
        (void)rk;
        (void)l;
        calls.assign++;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_resp_err_t rd_kafka_commit(rd_kafka_t *rk,
                                    const rd_kafka_topic_partition_list_t *l,
                                    int async)
{
        (void)rk;
        (void)l;
        (void)async;
        calls.commit++;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static void test_a_stops_revoke_does_not_ask_the_protocol(void)
{
        kd_fwd_t *f = NULL;
        memset(&calls, 0, sizeof(calls));
        CU_ASSERT_EQUAL_FATAL(kd_test_fwd_vt(&f, "rebal", MONO0, WALL0, NULL),
                              0);
        char why[256];
        CU_ASSERT_EQUAL_FATAL(f->mode->start(&f->mode_ctx, why, sizeof(why)),
                              KDELAY_OK);
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        rd_kafka_topic_partition_list_add(l, "kdelay.tier.1m", 0);
        rd_kafka_topic_partition_list_add(l, "kdelay.tier.1m", 1);
        kd_rebalance_assign(f, l);
        CU_ASSERT_EQUAL(calls.assign, 1);
        int asked = calls.protocol;
        CU_ASSERT(asked >= 1);
        /* A rebalance while running: asked no more. */
        kd_rebalance_revoke(f, l);
        kd_rebalance_assign(f, l);
        CU_ASSERT_EQUAL(calls.assign, 3);
        /* The stop: the close's revoke (shutdown_clean sets the deadline
         * first) never asks. */
        f->shutdown_deadline = kd_fwd_mono_ms(f) + 5000;
        kd_rebalance_revoke(f, l);
        CU_ASSERT_EQUAL(calls.assign, 4);
        CU_ASSERT_EQUAL(calls.protocol - asked,
                        1); /* the second assignment's group_closed check */
        rd_kafka_topic_partition_list_destroy(l);
        kd_fwd_destroy(f);
}

/* --- the run tracker across a revoke ------------------------------------ */

/* claim_ahead 200 ms: a claim goes 100 ms after its task is queued, a
 * revoke waits 200 ms for the store's answers (twice), and a seq is
 * parked KD_RUN_PARK_MS (1 s) after its claim: a revoke's waits do not
 * reach it. */
static const char *const runs_settings[] = {"forwarder.fate_marks",
                                            "runs",
                                            "forwarder.claim_ahead",
                                            "200ms",
                                            "forwarder.claim_batch",
                                            "500",
                                            NULL};

static kd_fwd_t *fwd;

static void serve(int64_t ms)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_step_serving(fwd, ms), 0);
}

static int64_t metric(kd_metric_id_t id)
{
        return kd_metric_get(&fwd->metrics, id);
}

/* As readers see it (a FIRING row a run covers reads FIRED), and as it
 * is. */
static kdelay_fate_t fate_of(const char *id)
{
        kdelay_status_t st;
        if (kd_fate_status(fwd->store->fate, id, strlen(id), &st, NULL, 0))
                return (kdelay_fate_t)-1;
        return st.fate;
}

static kd_fate_mem_row_t row_of(const char *id)
{
        kd_fate_mem_row_t row = {.fate = (kdelay_fate_t)-1};
        CU_ASSERT_EQUAL(kd_fate_mem_get(fwd->store->fate, id, strlen(id), &row),
                        KDELAY_OK);
        return row;
}

/* Partition p of the assignment. */
static kd_part_t *part_of(int32_t p)
{
        for (kd_part_t *q = fwd->intake->parts; q; q = q->next)
                if (q->partition == p)
                        return q;
        return NULL;
}

/* A task of partition p, held and due in a minute, read at offset. */
static kd_task_t *held_in(kd_part_t *p, const char *id, int64_t offset)
{
        kd_task_t *t = kd_test_task(id, "out", WALL0 + 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        t->rec.offset = offset;
        CU_ASSERT_EQUAL_FATAL(kd_offtrack_add(&p->track, offset), 0);
        t->part = p;
        KD_DLIST_PUSH(p->tasks, t);
        t->state = KD_TASK_HELD;
        return t;
}

static void delivered(kd_task_t *t)
{
        t->state = KD_TASK_FIRING;
        kd_settle_delivered(fwd, t);
}

/* While a revoke waits, the clock moves on its own (a millisecond every
 * millisecond or so: the pumps wait in real time, up to 100 ms a turn),
 * as the host's would, so that its pumps end at their deadlines while
 * the store hangs; and what the main producer holds is purged each time
 * (its broker is nowhere): a hop's report comes at once, as from a
 * broker that answers, instead of after the drain's stall (1 s). */
typedef struct mover {
        kd_clocksrc_t *clock;
        rd_kafka_t *rk;
        atomic_int moving;
} mover_t;

static void *clock_mover(void *arg)
{
        mover_t *m = arg;
        while (atomic_load(&m->moving)) {
                rd_kafka_purge(m->rk, RD_KAFKA_PURGE_F_QUEUE |
                                          RD_KAFKA_PURGE_F_INFLIGHT |
                                          RD_KAFKA_PURGE_F_NON_BLOCKING);
                kd_clocksrc_advance(m->clock, 1);
                usleep(1000);
        }
        return NULL;
}

static void revoke_moving(rd_kafka_topic_partition_list_t *l)
{
        pthread_t th;
        mover_t m = {&fwd->timers.clock, kd_producer_main(fwd), 1};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, clock_mover, &m), 0);
        int64_t at = kd_fwd_mono_ms(fwd);
        kd_rebalance_revoke(fwd, l);
        atomic_store(&m.moving, 0);
        pthread_join(th, NULL);
        printf("\n  the revoke took %lld ms\n",
               (long long)(kd_fwd_mono_ms(fwd) - at));
}

/* Revoked: partition 0 (cooperative: partition 1 stays), or both
 * (eager), the clock moving meanwhile. */
static rd_kafka_topic_partition_list_t *revoke_part0(int coop)
{
        rd_kafka_topic_partition_list_t *gone =
            rd_kafka_topic_partition_list_new(2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(gone);
        rd_kafka_topic_partition_list_add(gone, "kdelay.tier.1m", 0);
        if (!coop)
                rd_kafka_topic_partition_list_add(gone, "kdelay.tier.1m", 1);
        revoke_moving(gone);
        CU_ASSERT_PTR_NULL(part_of(0));
        return gone;
}

/* A forwarder at fate_marks=runs, its mode started, partitions 0 and 1
 * of the 1m tier assigned (under protocol coop or eager); into *l. */
static void assigned(int coop, rd_kafka_topic_partition_list_t **l)
{
        protocol = coop ? "COOPERATIVE" : "EAGER";
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&fwd, "rebal", MONO0, WALL0, runs_settings), 0);
        char why[256];
        CU_ASSERT_EQUAL_FATAL(
            fwd->mode->start(&fwd->mode_ctx, why, sizeof(why)), KDELAY_OK);
        *l = rd_kafka_topic_partition_list_new(2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(*l);
        rd_kafka_topic_partition_list_add(*l, "kdelay.tier.1m", 0);
        rd_kafka_topic_partition_list_add(*l, "kdelay.tier.1m", 1);
        kd_rebalance_assign(fwd, *l);
        CU_ASSERT_PTR_NOT_NULL_FATAL(part_of(0));
        CU_ASSERT_PTR_NOT_NULL_FATAL(part_of(1));
}

static void done(rd_kafka_topic_partition_list_t *gone,
                 rd_kafka_topic_partition_list_t *l)
{
        CU_ASSERT_EQUAL(metric(KD_M_TASK_STATE_BUGS), 0);
        rd_kafka_topic_partition_list_destroy(gone);
        rd_kafka_topic_partition_list_destroy(l);
        kd_fwd_destroy(fwd);
        fwd = NULL;
        protocol = "EAGER";
}

/* A revoke while a claim is out and the store does not answer it within
 * the revoke's wait (claim_ahead): its task is handed over (a hop) and
 * dropped; the store, answering later, writes its row FIRING under its
 * token, and the answer finds no task. Its seq is parked, never covered:
 * the row reads FIRING, and the next owner takes it over once the lease
 * passed. A task of the same partition delivered before is covered. */
static void claim_out_at_a_revoke(int coop)
{
        rd_kafka_topic_partition_list_t *l;
        assigned(coop, &l);
        kd_part_t *p0 = part_of(0);
        uint64_t seq0 = fwd->claim->seq;
        kd_task_t *r0 = held_in(p0, "r0", 10);
        kd_claim_enqueue(fwd, r0);
        serve(101);
        CU_ASSERT_EQUAL_FATAL(r0->state, KD_TASK_CLAIMED);
        CU_ASSERT_EQUAL(r0->seq, seq0 + 1);
        delivered(r0);
        serve(300);
        CU_ASSERT_EQUAL(fate_of("r0"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), 1);
        /* The store hangs; r1's claim goes out. */
        CU_ASSERT_EQUAL(kd_fate_mem_set_delay(fwd->store->fate, 600000),
                        KDELAY_OK);
        kd_task_t *r1 = held_in(p0, "r1", 11);
        kd_claim_enqueue(fwd, r1);
        CU_ASSERT_EQUAL_FATAL(kd_test_step(fwd, 100), 0);
        CU_ASSERT_EQUAL_FATAL(r1->where, KD_WHERE_CLAIM_REQ);
        uint64_t r1_seq = r1->seq;
        int64_t r1_at = kd_test_since(fwd, MONO0);
        CU_ASSERT_EQUAL(r1_seq, seq0 + 2);
        char r1_token[sizeof(r1->token)];
        memcpy(r1_token, r1->token, sizeof(r1_token));
        char gen[KD_RUNS_PREFIX_MAX];
        snprintf(gen, sizeof(gen), "%s", kd_runs_prefix(fwd->settle->runs));
        rd_kafka_topic_partition_list_t *gone = revoke_part0(coop);
        CU_ASSERT_EQUAL(metric(KD_M_HANDED_OVER), 1); /* r1, by a hop */
        /* The store answers now: the claim finds its task gone. */
        CU_ASSERT_EQUAL(kd_fate_mem_set_delay(fwd->store->fate, 0), KDELAY_OK);
        CU_ASSERT_EQUAL_FATAL(kd_test_store_answers(fwd), 0);
        kd_fate_mem_row_t row = row_of("r1");
        CU_ASSERT_EQUAL(row.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(row.owner, r1_token);
        /* Its claim went out less than the park time ago. Cooperative:
         * parked by the revoke's new generation. Eager: the generation
         * lasts until the next assignment, and the seq is open until
         * parked by its age. Never covered. */
        CU_ASSERT(kd_test_since(fwd, MONO0) - r1_at < KD_RUN_PARK_MS);
        if (coop) {
                CU_ASSERT_STRING_NOT_EQUAL(kd_runs_prefix(fwd->settle->runs),
                                           gen);
                CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 1);
        } else {
                CU_ASSERT_STRING_EQUAL(kd_runs_prefix(fwd->settle->runs), gen);
                CU_ASSERT(kd_runs_emitted(fwd->settle->runs) < r1_seq);
                CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 0);
        }
        serve(2000);
        CU_ASSERT(kd_runs_emitted(fwd->settle->runs) >= r1_seq);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 1);
        if (!coop) {
                kd_rebalance_assign(fwd, l);
                CU_ASSERT_STRING_NOT_EQUAL(kd_runs_prefix(fwd->settle->runs),
                                           gen);
                serve(300);
        }
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), 1); /* r0's alone */
        CU_ASSERT_EQUAL(fate_of("r1"), KDELAY_FATE_FIRING);
        /* The next owner takes r1 over once its lease passed. */
        serve(5000);
        kd_fate_claim_t it = {.id = "r1",
                              .id_len = 2,
                              .fire_at_ms = WALL0 + 60000,
                              .token = "next:00000001.1:1",
                              .lease_ms = 5000};
        snprintf(it.row_owner, sizeof(it.row_owner), "%s", r1_token);
        CU_ASSERT_EQUAL(kd_fate_takeover(fwd->store->fate, &it, 1, NULL, 0),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(it.fate, KDELAY_FATE_FIRING);
        CU_ASSERT_STRING_EQUAL(it.row_owner, "next:00000001.1:1");
        done(gone, l);
}

static void test_a_claim_out_at_a_cooperative_revoke_is_parked(void)
{
        claim_out_at_a_revoke(1);
}

static void test_a_claim_out_at_an_eager_revoke_is_parked(void)
{
        claim_out_at_a_revoke(0);
}

/* A cooperative revoke keeps partition 1: its tasks stay as they are,
 * but the revoke's new generation restarts the tracker (it holds one
 * generation's window: kd_runs_restart), so the seq of k0, claimed a
 * moment before and not yet delivered, is parked, young as it is; k0,
 * delivered after, is not covered by a run but marks its row FIRED alone
 * (a mark per such task and rebalance). k1, claimed after the revoke,
 * gets the next seq under the new generation, and a run covers it. */
static void test_a_kept_partitions_claim_marks_alone_after_a_revoke(void)
{
        rd_kafka_topic_partition_list_t *l;
        assigned(1, &l);
        kd_part_t *p0 = part_of(0), *p1 = part_of(1);
        uint64_t seq0 = fwd->claim->seq;
        kd_task_t *r0 = held_in(p0, "r0", 10), *k0 = held_in(p1, "k0", 10);
        kd_claim_enqueue(fwd, r0);
        kd_claim_enqueue(fwd, k0);
        serve(101);
        CU_ASSERT_EQUAL_FATAL(k0->state, KD_TASK_CLAIMED);
        CU_ASSERT_EQUAL(k0->seq, seq0 + 2);
        delivered(r0);
        serve(300); /* r0's run; k0's seq open (claimed 300 ms ago) */
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), 1);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 0);
        CU_ASSERT_EQUAL(kd_runs_emitted(fwd->settle->runs), seq0 + 1);
        int64_t at = kd_test_since(fwd, MONO0);
        rd_kafka_topic_partition_list_t *gone = revoke_part0(1);
        /* Nothing waited (the store idle, nothing in flight): k0's seq
         * parked by the new generation, not by its age. */
        CU_ASSERT(kd_test_since(fwd, MONO0) - at < 100);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 1);
        CU_ASSERT_PTR_EQUAL(part_of(1), p1);
        CU_ASSERT_PTR_EQUAL(k0->part, p1);
        CU_ASSERT_EQUAL(k0->state, KD_TASK_CLAIMED);
        kd_task_t *k1 = held_in(p1, "k1", 11);
        kd_claim_enqueue(fwd, k1);
        serve(101);
        CU_ASSERT_EQUAL_FATAL(k1->state, KD_TASK_CLAIMED);
        CU_ASSERT_EQUAL(k1->seq, seq0 + 3);
        delivered(k0);
        delivered(k1);
        CU_ASSERT_EQUAL(kd_settle_queued(fwd), 1); /* k0's own mark */
        serve(300);
        CU_ASSERT_EQUAL(row_of("k0").fate, KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(fate_of("k1"), KDELAY_FATE_FIRED);
        CU_ASSERT_EQUAL(row_of("k1").fate, KDELAY_FATE_FIRING); /* a run's */
        CU_ASSERT_EQUAL(metric(KD_M_FIRED_RUN_SEQS), 2);
        CU_ASSERT_EQUAL(metric(KD_M_RUNS_PARKED), 1);
        done(gone, l);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_a_stops_revoke_does_not_ask_the_protocol),
            KD_TEST(test_a_claim_out_at_a_cooperative_revoke_is_parked),
            KD_TEST(test_a_claim_out_at_an_eager_revoke_is_parked),
            KD_TEST(test_a_kept_partitions_claim_marks_alone_after_a_revoke),
            KD_TEST_END};
        return kd_test_run("rebalance_vt", cases, NULL, NULL);
}
