/* SPDX-License-Identifier: Apache-2.0 */
/* forwarder.commit_interval in virtual time (at_least_once, mode_alo.c): a
 * forwarder made but never run (kd_test_fwd_vt), its mode started and one
 * partition opened as the rebalance stage opens them, records read into
 * the partition's offset tracker and settled by the mode as their reports
 * would settle them. Offsets are committed every commit_interval from the
 * mode's start, on the tick and not a millisecond before, and only when
 * the commit point moved since the last commit sent; a commit the
 * coordinator failed is sent again at the next tick (and only the point
 * last sent is).
 *
 * The consumer never joins its group, so no commit could reach a
 * coordinator (and closing it would wait for one): the test links its own
 * rd_kafka_commit (below), which takes the place of librdkafka's for the
 * forwarder's calls and records what was committed, when, and how. */
#include <stdio.h>
#include <string.h>

#include "core/kd_part.h"
#include "core/kd_timer.h"
#include "fwd_offline.h"
#include "kd_test.h"
#include "modes/kd_mode.h"
#include "pipeline/kd_intake.h"
#include "top/kd_fwd.h"

#define MONO0    1000000
#define WALL0    1700000000000
#define INTERVAL 5000

static const char *const settings[] = {"forwarder.commit_interval", "5s", NULL};

/* The commits sent (rd_kafka_commit's stand-in). */
static struct {
        int calls, async;
        int cnt;        /* the last one's partitions */
        int64_t offset; /* of its first */
        int64_t at[2];  /* of partitions 0 and 1 in it; -1 not in it */
} sent;

rd_kafka_resp_err_t rd_kafka_commit(rd_kafka_t *rk,
                                    const rd_kafka_topic_partition_list_t *l,
                                    int async)
{
        (void)rk;
        sent.calls++;
        sent.async += async != 0;
        sent.cnt = l ? l->cnt : 0;
        sent.offset = l && l->cnt ? l->elems[0].offset : -1;
        sent.at[0] = sent.at[1] = -1;
        for (int i = 0; l && i < l->cnt; i++)
                if (l->elems[i].partition >= 0 && l->elems[i].partition < 2)
                        sent.at[l->elems[i].partition] = l->elems[i].offset;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* Steps the clock a millisecond at a time up to ms since the start,
 * running what is due. */
static void step_to(kd_fwd_t *f, int64_t ms)
{
        CU_ASSERT_EQUAL_FATAL(kd_test_step_to(f, MONO0, ms), 0);
}

/* Commits sent so far: the metric and the calls agree, all async. */
static int64_t commits(const kd_fwd_t *f)
{
        int64_t n = kd_metric_get(&f->metrics, KD_M_COMMITS);
        CU_ASSERT_EQUAL(n, sent.calls);
        CU_ASSERT_EQUAL(sent.async, sent.calls);
        return n;
}

/* Record offset of p read: a task in p's list, its offset tracked. */
static kd_task_t *read_rec(kd_fwd_t *f, kd_part_t *p, int64_t offset)
{
        char id[16];
        snprintf(id, sizeof(id), "r%lld", (long long)offset);
        kd_task_t *t = kd_test_task(id, "out", kd_fwd_now(f) + 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        t->rec.offset = offset;
        CU_ASSERT_EQUAL_FATAL(kd_offtrack_add(&p->track, offset), 0);
        t->part = p;
        t->next = p->tasks;
        if (p->tasks)
                p->tasks->prev = t;
        p->tasks = t;
        return t;
}

/* The coordinator failed the commit of offset for p. */
static void commit_failed(kd_fwd_t *f, const kd_part_t *p, int64_t offset)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        rd_kafka_topic_partition_t *tp =
            rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
        tp->offset = offset;
        tp->err = RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
        f->mode->committed(&f->mode_ctx, RD_KAFKA_RESP_ERR_NO_ERROR, l);
        rd_kafka_topic_partition_list_destroy(l);
}

static void test_offsets_are_committed_every_interval_when_moved(void)
{
        kd_fwd_t *f = NULL;
        memset(&sent, 0, sizeof(sent));
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&f, "commit", MONO0, WALL0, settings), 0);
        CU_ASSERT_STRING_EQUAL(f->mode->name, "at_least_once");
        CU_ASSERT_EQUAL(f->conf->fwd_commit_interval_ms, INTERVAL);
        char why[256];
        CU_ASSERT_EQUAL_FATAL(f->mode->start(&f->mode_ctx, why, sizeof(why)),
                              KDELAY_OK);
        kd_part_t *p = kd_intake_part_open(f, "kdelay-1m", 0, 60000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(f->mode->opened(&f->mode_ctx, p, NULL), 0);
        kd_task_t *t[4];
        for (int i = 0; i < 4; i++)
                t[i] = read_rec(f, p, 10 + i);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&p->track), 10);

        /* 11 and 10 settle at 1,000 ms (out of order): the point is 12,
         * committed at the first tick, not before. */
        step_to(f, 1000);
        f->mode->done(&f->mode_ctx, t[1]);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&p->track), 10);
        f->mode->done(&f->mode_ctx, t[0]);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&p->track), 12);
        step_to(f, INTERVAL - 1);
        CU_ASSERT_EQUAL(commits(f), 0);
        step_to(f, INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 1);
        CU_ASSERT_EQUAL(sent.cnt, 1);
        CU_ASSERT_EQUAL(sent.offset, 12);

        /* 12 settles a millisecond after that commit: it waits for the
         * next tick, a whole interval after the last. */
        step_to(f, INTERVAL + 1);
        f->mode->done(&f->mode_ctx, t[2]);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&p->track), 13);
        step_to(f, 2 * INTERVAL - 1);
        CU_ASSERT_EQUAL(commits(f), 1);
        step_to(f, 2 * INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 2);
        CU_ASSERT_EQUAL(sent.offset, 13);

        /* Nothing moved: the third tick sends nothing. */
        step_to(f, 3 * INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 2);

        /* 13 settles mid-interval: the point (14) goes at the fourth. */
        step_to(f, 3 * INTERVAL + INTERVAL / 2);
        f->mode->done(&f->mode_ctx, t[3]);
        CU_ASSERT_EQUAL(kd_offtrack_commit_point(&p->track), 14);
        step_to(f, 4 * INTERVAL - 1);
        CU_ASSERT_EQUAL(commits(f), 2);
        step_to(f, 4 * INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 3);
        CU_ASSERT_EQUAL(sent.offset, 14);

        /* An earlier commit (13) failed late: 14 went since, nothing is
         * sent again. */
        commit_failed(f, p, 13);
        step_to(f, 5 * INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 3);
        /* The commit of 14 failed: sent again at the next tick, once. */
        step_to(f, 5 * INTERVAL + 1);
        commit_failed(f, p, 14);
        step_to(f, 6 * INTERVAL - 1);
        CU_ASSERT_EQUAL(commits(f), 3);
        step_to(f, 6 * INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 4);
        CU_ASSERT_EQUAL(sent.offset, 14);
        step_to(f, 8 * INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 4);
        CU_ASSERT_EQUAL(kd_metric_get(&f->metrics, KD_M_TASK_STATE_BUGS), 0);
        kd_fwd_destroy(f);
}

/* Two partitions: a tick commits only the one whose point moved. */
static void test_only_partitions_whose_point_moved_are_committed(void)
{
        kd_fwd_t *f = NULL;
        memset(&sent, 0, sizeof(sent));
        CU_ASSERT_EQUAL_FATAL(
            kd_test_fwd_vt(&f, "commit", MONO0, WALL0, settings), 0);
        char why[256];
        CU_ASSERT_EQUAL_FATAL(f->mode->start(&f->mode_ctx, why, sizeof(why)),
                              KDELAY_OK);
        kd_part_t *p[2];
        kd_task_t *t[2][2];
        for (int i = 0; i < 2; i++) {
                p[i] = kd_intake_part_open(f, "kdelay-1m", i, 60000);
                CU_ASSERT_PTR_NOT_NULL_FATAL(p[i]);
                CU_ASSERT_EQUAL(f->mode->opened(&f->mode_ctx, p[i], NULL), 0);
                for (int j = 0; j < 2; j++)
                        t[i][j] = read_rec(f, p[i], 100 * i + j);
        }
        /* The first tick commits both (each its first point: 0 is the
         * point of a partition whose first record is not done). */
        f->mode->done(&f->mode_ctx, t[1][0]);
        step_to(f, INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 1);
        CU_ASSERT_EQUAL(sent.cnt, 2);
        CU_ASSERT_EQUAL(sent.at[0], 0);
        CU_ASSERT_EQUAL(sent.at[1], 101);
        /* Then only the one that moved, each time. */
        f->mode->done(&f->mode_ctx, t[0][0]);
        f->mode->done(&f->mode_ctx, t[0][1]);
        step_to(f, 2 * INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 2);
        CU_ASSERT_EQUAL(sent.cnt, 1);
        CU_ASSERT_EQUAL(sent.at[0], 2);
        f->mode->done(&f->mode_ctx, t[1][1]);
        step_to(f, 3 * INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 3);
        CU_ASSERT_EQUAL(sent.cnt, 1);
        CU_ASSERT_EQUAL(sent.at[1], 102);
        step_to(f, 4 * INTERVAL);
        CU_ASSERT_EQUAL(commits(f), 3);
        kd_fwd_destroy(f);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_offsets_are_committed_every_interval_when_moved),
            KD_TEST(test_only_partitions_whose_point_moved_are_committed),
            KD_TEST_END};
        return kd_test_run("commit_vt", cases, NULL, NULL);
}
