/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl stats's figures (kd_stats.h). */
#include "kd_stats.h"
#include "kd_watermarks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_grouppos.h"
#include "kd_grouppos_heads.h"
#include "kd_path.h"
#include "kd_util.h"
#include "kd_wire.h"

#define KD_STATS_TIMEOUT_MS 10000
/* How long the heads of one tier may take to read. */
#define KD_STATS_HEAD_MS 5000

typedef struct head_ctx {
        const kdelay_conf_t *conf;
        int64_t tier_ms, now;
        kd_tier_stats_t *t;
} head_ctx_t;

/* One head read (kd_grouppos_heads): t's head figures. */
static void head_seen(const rd_kafka_message_t *m, void *opaque)
{
        head_ctx_t *c = opaque;
        kd_tier_stats_t *t = c->t;
        int64_t ts = rd_kafka_message_timestamp(m, NULL);
        rd_kafka_headers_t *h = NULL;
        kd_wire_task_t w;
        int64_t due = ts;
        rd_kafka_message_headers((rd_kafka_message_t *)m, &h);
        if (kd_wire_decode(h, c->now, &w) == KD_WIRE_OK)
                due = kd_path_due(w.fire_at_ms, ts, c->tier_ms,
                                  c->conf->fwd_hold_horizon_ms);
        if (ts >= 0 && c->now - ts > t->head_age_ms)
                t->head_age_ms = c->now - ts;
        int64_t over = c->now > due ? c->now - due : 0;
        if (over > t->head_overdue_ms)
                t->head_overdue_ms = over;
}

/* Reads the record at each offset of l (the heads: partitions with records
 * pending) within KD_STATS_HEAD_MS and sets t's head figures from them. */
static void head_stats(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *l,
                       const kdelay_conf_t *conf, int64_t tier_ms,
                       kd_tier_stats_t *t)
{
        head_ctx_t c = {conf, tier_ms, kd_now_ms(), t};
        t->head_age_ms = t->head_overdue_ms = -1;
        /* An unassignable list leaves the figures unknown (-1). */
        (void)kd_grouppos_heads(rk, l, KD_STATS_HEAD_MS, head_seen, &c);
}

static kdelay_err_t tier_stats(rd_kafka_t *rk, const kdelay_conf_t *conf,
                               int64_t tier_ms, kd_tier_stats_t *t,
                               char *errstr, size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(t->partitions);
        if (!l)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        for (int p = 0; p < t->partitions; p++)
                rd_kafka_topic_partition_list_add(l, t->topic, p);
        rd_kafka_topic_partition_list_t *heads =
            rd_kafka_topic_partition_list_new(t->partitions);
        rd_kafka_resp_err_t err =
            heads ? rd_kafka_committed(rk, l, KD_STATS_TIMEOUT_MS)
                  : RD_KAFKA_RESP_ERR__FAIL;
        for (int p = 0; !err && p < t->partitions; p++) {
                int64_t lo, hi;
                err = kd_watermarks(rk, t->topic, p, &lo, &hi,
                                    KD_STATS_TIMEOUT_MS);
                int64_t c = l->elems[p].offset;
                if (c < lo) /* none committed, or below the retention */
                        c = lo;
                t->end += hi;
                t->committed += c;
                if (!err && c < hi)
                        rd_kafka_topic_partition_list_add(heads, t->topic, p)
                            ->offset = c;
        }
        rd_kafka_topic_partition_list_destroy(l);
        if (!err)
                head_stats(rk, heads, conf, tier_ms, t);
        if (heads)
                rd_kafka_topic_partition_list_destroy(heads);
        if (err)
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "offsets of %s: %s", t->topic,
                               rd_kafka_err2str(err));
        t->pending = t->end - t->committed;
        return KDELAY_OK;
}

static kdelay_err_t group_stats(rd_kafka_t *rk, const char *group,
                                kd_stats_t *s, char *errstr, size_t errstr_size)
{
        const struct rd_kafka_group_list *gl = NULL;
        rd_kafka_resp_err_t err =
            rd_kafka_list_groups(rk, group, &gl, KD_STATS_TIMEOUT_MS);
        if (err)
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "group %s: %s", group, rd_kafka_err2str(err));
        kd_strlcpy(s->group_state, "Dead", sizeof(s->group_state));
        for (int i = 0; i < gl->group_cnt; i++) {
                const struct rd_kafka_group_info *g = &gl->groups[i];
                if (strcmp(g->group, group) || g->err)
                        continue;
                kd_strlcpy(s->group_state, g->state, sizeof(s->group_state));
                s->members = g->member_cnt;
                for (int m = 0; m < g->member_cnt && m < 16; m++)
                        kd_strlcpy(s->member[m], g->members[m].client_id,
                                   sizeof(s->member[m]));
        }
        rd_kafka_group_list_destroy(gl);
        return KDELAY_OK;
}

kdelay_err_t kd_stats_kafka(const kdelay_conf_t *conf, kd_stats_t *s,
                            char *errstr, size_t errstr_size)
{
        kd_rk_owner_t owner = {conf};
        rd_kafka_t *rk = kd_grouppos_client(&owner, errstr, errstr_size);
        if (!rk)
                return KDELAY_ERR_KAFKA;
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t merr =
            rd_kafka_metadata(rk, 1, NULL, &md, KD_STATS_TIMEOUT_MS);
        kdelay_err_t err = KDELAY_OK;
        if (merr)
                err = kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                              "metadata: %s", rd_kafka_err2str(merr));
        s->tier_cnt = conf->tiers.cnt;
        for (size_t i = 0; !err && i < conf->tiers.cnt; i++) {
                kd_tier_stats_t *t = &s->tiers[i];
                kd_tiers_topic(&conf->tiers, i, conf->topic_prefix, t->topic,
                               sizeof(t->topic));
                t->partitions = kd_grouppos_partitions_of(md, t->topic);
                t->head_age_ms = t->head_overdue_ms = -1;
                if (t->partitions > 0)
                        err = tier_stats(rk, conf, conf->tiers.v[i].delay_ms, t,
                                         errstr, errstr_size);
                s->pending += t->pending;
        }
        if (md)
                rd_kafka_metadata_destroy(md);
        if (!err)
                err =
                    group_stats(rk, conf->fwd_group_id, s, errstr, errstr_size);
        rd_kafka_destroy(rk);
        return err;
}

kdelay_err_t kd_stats_fate(const kdelay_conf_t *conf, kd_stats_t *s,
                           char *errstr, size_t errstr_size)
{
        kd_fate_store_t *store = NULL;
        kdelay_err_t err = kd_fate_store_new(&store, conf);
        if (err)
                return kd_fail(err, errstr, errstr_size,
                               "cannot create the fate store");
        err = kd_fate_counts(store, &s->fate, errstr, errstr_size);
        kd_fate_store_destroy(store);
        return err;
}
