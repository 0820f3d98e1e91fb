/* SPDX-License-Identifier: Apache-2.0 */
/* exactly_once's offset bookkeeping (kd_eos_offsets.h). */
#define KD_MODE_SEAM 1 /* the compiler keeps the forwarder out */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/kd_dlist.h"
#include "kd_eos_offsets.h"
#include "kd_log.h"

rd_kafka_topic_partition_list_t *
kd_eos_offsets_list(kd_eos_offsets_t *o, const kdelay_conf_t *conf, int *failed)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(8);
        *failed = !l;
        for (kd_eos_part_t *ep = l ? o->parts : NULL; ep; ep = ep->next) {
                const kd_part_t *p = ep->part;
                /* Runs the previous owner committed that we have not read
                 * yet stay in the set. */
                const kd_offrange_t *tail = ep->skip + ep->skip_pos;
                size_t tail_cnt = ep->skip_cnt - ep->skip_pos;
                int64_t cp = kd_offtrack_commit_after(&p->track, ep->committed,
                                                      &tail, &tail_cnt);
                if (cp < 0)
                        continue; /* nothing read, nothing committed */
                char meta[KD_OFFSET_METADATA_MAX];
                if (kd_offtrack_encode(&p->track, cp, tail, tail_cnt, meta,
                                       sizeof(meta))) {
                        /* Bounded by KD_DONE_SPAN_MAX; committing less would
                         * let the next owner redo what is done here. */
                        char qt[300];
                        kd_log(conf, KDELAY_LOG_ERROR,
                               "event=done_set_too_large topic=%s "
                               "partition=%d commit=%lld action=abort",
                               kd_log_quote(p->topic, qt, sizeof(qt)),
                               p->partition, (long long)cp);
                        *failed = 1;
                        break;
                }
                rd_kafka_topic_partition_t *tp =
                    rd_kafka_topic_partition_list_add(l, p->topic,
                                                      p->partition);
                tp->offset = cp;
                tp->metadata = strdup(meta);
                tp->metadata_size = tp->metadata ? strlen(meta) : 0;
                if (!tp->metadata)
                        *failed = 1;
                ep->committed = cp;
        }
        if (!l || l->cnt == 0 || *failed) {
                if (l)
                        rd_kafka_topic_partition_list_destroy(l);
                return NULL;
        }
        return l;
}

/* One fetch attempt: up to KD_EOS_FETCH_TIMEOUT_MS in calls of at most
 * KD_EOS_FETCH_SLICE_MS, a stop asked between two calls ending it (a
 * fetch while Kafka is away would otherwise hold a SIGTERM for the whole
 * timeout). *stopped is set when it ended so. */
static rd_kafka_resp_err_t fetch_sliced(const kd_eos_consumer_t *c,
                                        rd_kafka_topic_partition_list_t *parts,
                                        int *stopped)
{
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
        *stopped = 0;
        for (int spent = 0; spent < KD_EOS_FETCH_TIMEOUT_MS;
             spent += KD_EOS_FETCH_SLICE_MS) {
                if (c->stopping(c->arg)) {
                        *stopped = 1;
                        return err;
                }
                err = c->committed(c->arg, parts, KD_EOS_FETCH_SLICE_MS);
                if (err != RD_KAFKA_RESP_ERR__TIMED_OUT)
                        return err;
        }
        return err;
}

int kd_eos_offsets_fetch(const kd_eos_consumer_t *c, const kdelay_conf_t *conf,
                         rd_kafka_topic_partition_list_t *parts)
{
        if (parts->cnt == 0)
                return 0;
        for (int attempt = 1;; attempt++) {
                int stopped;
                rd_kafka_resp_err_t err = fetch_sliced(c, parts, &stopped);
                if (stopped)
                        return -1;
                if (!err)
                        return 0;
                kd_log(conf, KDELAY_LOG_WARNING,
                       "event=committed_fetch_failed attempt=%d err=\"%s\"",
                       attempt, rd_kafka_err2str(err));
                if (attempt >= KD_EOS_FETCH_ATTEMPTS)
                        return -2;
                /* An error such as "Not coordinator" (a restarted broker
                 * still loading the group) comes back at once: wait
                 * 100 ms, doubling to 1 s, so that the 30 attempts span
                 * about 25 s instead of a few milliseconds; a stop asked
                 * meanwhile ends them before the next fetch. */
                kd_sleep_ms(attempt < 4 ? 100L << (attempt - 1) : 1000L);
                if (c->stopping(c->arg))
                        return -1;
        }
}

size_t kd_eos_offsets_opened(kd_eos_offsets_t *o, const kdelay_conf_t *conf,
                             kd_part_t *p, const rd_kafka_topic_partition_t *tp)
{
        kd_eos_part_t *ep = p->mode;
        ep->part = p;
        ep->committed = tp->offset;
        KD_DLIST_PUSH(o->parts, ep);
        if (tp->offset < 0 || !tp->metadata)
                return 0;
        if (kd_doneset_decode(tp->metadata, tp->metadata_size, tp->offset,
                              &ep->skip, &ep->skip_cnt)) {
                /* Not ours (another tool committed here): nothing to skip. */
                char qt[300];
                kd_log(conf, KDELAY_LOG_WARNING,
                       "event=done_set_unreadable topic=%s partition=%d "
                       "offset=%lld",
                       kd_log_quote(p->topic, qt, sizeof(qt)), p->partition,
                       (long long)tp->offset);
                return 0;
        }
        size_t n = 0;
        for (size_t k = 0; k < ep->skip_cnt; k++)
                n += (size_t)(ep->skip[k].last - ep->skip[k].first + 1);
        return n;
}

void kd_eos_offsets_closed(kd_eos_offsets_t *o, kd_part_t *p)
{
        kd_eos_part_t *ep = p->mode;
        KD_DLIST_UNLINK(o->parts, ep);
        free(ep->skip);
        ep->skip = NULL;
        ep->skip_cnt = ep->skip_pos = 0;
}

int kd_eos_offsets_handled(kd_part_t *p, int64_t offset)
{
        kd_eos_part_t *ep = p->mode;
        while (ep->skip_pos < ep->skip_cnt &&
               ep->skip[ep->skip_pos].last < offset)
                ep->skip_pos++;
        return ep->skip_pos < ep->skip_cnt &&
               ep->skip[ep->skip_pos].first <= offset;
}

int kd_eos_offsets_admit(const kd_part_t *p, const kd_task_t *t, int low)
{
        return t->rec.offset - kd_offtrack_commit_point(&p->track) <=
               (low ? KD_DONE_SPAN_MAX / 2 : KD_DONE_SPAN_MAX);
}
