/* SPDX-License-Identifier: Apache-2.0 */
/* Delivery mode at_least_once (kd_mode.h): idempotent produces; a task's
 * offset is done when its produce is reported delivered, and offsets are
 * committed every forwarder.commit_interval and on revoke. A crash between
 * a delivery and the next commit re-reads, and the fate table mostly
 * stops a second fire (docs/reliability.md). Owns its commit timer. */
#define KD_MODE_SEAM 1 /* kd_mode_ctx.h: the forwarder stays out */

#include <stdlib.h>
#include <string.h>

#include "core/kd_dlist.h"
#include "core/kd_perr.h"
#include "core/kd_refusals.h"
#include "kd_log.h"
#include "kd_mode.h"
#include "kd_util.h"

/* Producer defaults the user may override. A report within 30 s: a fire
 * whose target is missing goes to the dead letters in about that time,
 * not librdkafka's default 300 s. message.max.bytes: the broker's default
 * record limit (1048588), so that every record it accepted into a tier
 * topic can be produced again, and a larger one fails here, at once, and
 * goes to the dead letters. */
static const char *const alo_producer_defaults[] = {"linger.ms",
                                                    "1",
                                                    "partitioner",
                                                    "murmur2_random",
                                                    "message.timeout.ms",
                                                    "30000",
                                                    "message.max.bytes",
                                                    "1048588",
                                                    NULL};

/* A partition as this mode sees it (p->mode). */
typedef struct alo_part {
        kd_part_t *part;              /* borrowed: the partition */
        struct alo_part *prev, *next; /* alo_state_t.parts */
        int64_t committed;            /* last commit point sent, -1 none */
} alo_part_t;

typedef struct alo_state {
        kd_timer_t commit; /* monotonic, every commit_interval */
        alo_part_t *parts; /* the open partitions */
} alo_state_t;

/* Commits every partition whose commit point moved, async; sync (on
 * revoke) every partition with a commit point, so that one whose last
 * async commit is still out or failed unseen is committed before it
 * goes. */
static void commit(kd_mode_ctx_t *m, int sync)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(8);
        if (!l) {
                kd_log(m->conf, KDELAY_LOG_ERROR,
                       "event=out_of_memory what=commit action=retry");
                return;
        }
        const alo_state_t *s = m->state;
        for (alo_part_t *ap = s->parts; ap; ap = ap->next) {
                const kd_part_t *p = ap->part;
                int64_t cp = kd_offtrack_commit_point(&p->track);
                if (cp < 0 || (!sync && cp <= ap->committed))
                        continue;
                rd_kafka_topic_partition_list_add(l, p->topic, p->partition)
                    ->offset = cp;
                ap->committed = cp;
        }
        if (l->cnt > 0) {
                rd_kafka_resp_err_t err = kd_mode_commit(m, l, sync ? 0 : 1);
                kd_metric_inc(m->metrics, KD_M_COMMITS);
                if (err)
                        kd_log(m->conf, KDELAY_LOG_WARNING,
                               "event=commit_failed partitions=%d err=\"%s\"",
                               l->cnt, rd_kafka_err2str(err));
        }
        rd_kafka_topic_partition_list_destroy(l);
}

static void commit_cb(kd_timer_t *tm, void *arg)
{
        kd_mode_ctx_t *m = arg;
        commit(m, 0);
        if (kd_timer_arm(m->timers, tm, KD_CLOCK_MONO,
                         kd_mode_mono_ms(m) + m->conf->fwd_commit_interval_ms,
                         commit_cb, m))
                kd_mode_oom(m, "commit_timer");
}

static kdelay_err_t alo_init(kd_mode_ctx_t *m, const char *const **defaults,
                             const char *const **forced, char *errstr,
                             size_t errstr_size)
{
        alo_state_t *s = calloc(1, sizeof(*s));
        if (!s)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        kd_timer_init(&s->commit, commit_cb, m);
        m->state = s;
        *defaults = alo_producer_defaults;
        *forced = kd_producer_forced;
        return KDELAY_OK;
}

static void alo_destroy(kd_mode_ctx_t *m)
{
        alo_state_t *s = m->state;
        if (!s)
                return;
        kd_timer_disarm(m->timers, &s->commit);
        free(s);
        m->state = NULL;
}

static kdelay_err_t alo_start(kd_mode_ctx_t *m, char *errstr,
                              size_t errstr_size)
{
        alo_state_t *s = m->state;
        if (kd_timer_arm(m->timers, &s->commit, KD_CLOCK_MONO,
                         kd_mode_mono_ms(m) + m->conf->fwd_commit_interval_ms,
                         commit_cb, m))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        return KDELAY_OK;
}

static size_t alo_opened(kd_mode_ctx_t *m, kd_part_t *p,
                         const rd_kafka_topic_partition_t *tp)
{
        (void)tp;
        alo_state_t *s = m->state;
        alo_part_t *ap = p->mode;
        ap->part = p;
        ap->committed = -1;
        KD_DLIST_PUSH(s->parts, ap);
        return 0;
}

static void alo_closed(kd_mode_ctx_t *m, kd_part_t *p)
{
        alo_state_t *s = m->state;
        alo_part_t *ap = p->mode;
        KD_DLIST_UNLINK(s->parts, ap);
}

/* The alone-fallback: the broker refuses a whole batch for what one of
 * its records is (KD_PERR_RECORD) and reports the error on each, so a
 * record refused in a batch goes out again alone, through the solo
 * producer (batches of one): delivered, or found to be the cause. So
 * does a replay its target is known to refuse (kd_fire_now). */

/* 1 when t goes alone. */
static int alone(const kd_task_t *t)
{
        return t->solo || t->known_refusal;
}

/* A fire already late by more than KD_BULK_LATE_MS (a backlog: linger
 * is nothing beside that) goes through the bulk producer, in large
 * batches; an on-time one beside it keeps the main producer's 1 ms
 * linger. Hops and dead letters stay on the main one. */
static int bulk(const kd_task_t *t, kd_task_state_t as)
{
        return as == KD_TASK_FIRING && t->late_ms > KD_BULK_LATE_MS;
}

static int alo_begin(kd_mode_ctx_t *m, const kd_task_t *t, kd_task_state_t as,
                     rd_kafka_t **rk)
{
        *rk = NULL;
        if (t && alone(t))
                *rk = kd_mode_producer_solo(m);
        else if (t && bulk(t, as))
                *rk = kd_mode_producer_bulk(m);
        if (!*rk && !(t && alone(t)))
                *rk = kd_mode_producer_main(m);
        return *rk ? 0 : -1;
}

/* Refused in a batch: alone next time. A fire refused alone for good:
 * what that says of its target is learned (kd_refusals.h). */
static int alo_refused(kd_mode_ctx_t *m, kd_task_t *t, rd_kafka_resp_err_t err)
{
        if (kd_perr_class(err) == KD_PERR_RECORD && !alone(t)) {
                t->solo = 1;
                return 1;
        }
        if (alone(t) && t->state == KD_TASK_FIRING && kd_perr_permanent(err))
                kd_refusals_learn(m->refusals, t, err, kd_mode_mono_ms(m),
                                  kd_mode_now(m));
        return 0;
}

static int alo_revoke(kd_mode_ctx_t *m, int64_t deadline)
{
        (void)deadline; /* a synchronous commit has its own timeout */
        commit(m, 1);
        return 0; /* a failed commit is sent again (alo_committed) */
}

/* A commit that failed is sent again with the next one: its partitions
 * forget what they last sent (unless a later point went out since). */
static void alo_committed(kd_mode_ctx_t *m, rd_kafka_resp_err_t err,
                          const rd_kafka_topic_partition_list_t *offsets)
{
        const alo_state_t *s = m->state;
        int failed = 0;
        rd_kafka_resp_err_t first = err;
        for (int i = 0; offsets && i < offsets->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &offsets->elems[i];
                if (!err && !tp->err)
                        continue;
                if (!first)
                        first = tp->err;
                failed++;
                for (alo_part_t *ap = s->parts; ap; ap = ap->next)
                        if (ap->part->partition == tp->partition &&
                            !strcmp(ap->part->topic, tp->topic) &&
                            ap->committed == tp->offset)
                                ap->committed = -1;
        }
        if (failed)
                kd_log(m->conf, KDELAY_LOG_WARNING,
                       "event=commit_failed partitions=%d err=\"%s\" "
                       "action=commit_again",
                       failed, rd_kafka_err2str(first));
}

const kd_mode_ops_t kd_mode_alo = {
    .name = "at_least_once",
    .takeover_at_once = 0,
    .journal_with_fire = 0,
    .init = alo_init,
    .destroy = alo_destroy,
    .start = alo_start,
    .part_size = sizeof(alo_part_t),
    .opened = alo_opened,
    .closed = alo_closed,
    .begin = alo_begin,
    .delivered = kd_mode_settle_delivered,
    .refused = alo_refused,
    .done = kd_mode_settle_done,
    .revoke = alo_revoke,
    /* A new producer: the old one's produces were purged, and the fire
     * stage produces them again (renewed: NULL). */
    .committed = alo_committed,
};
