/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline room's state as a whole (kd_pipeline.h). */
#include <stdlib.h>

#include "kd_claim.h"
#include "kd_held.h"
#include "kd_outage.h"
#include "kd_pipeline.h"
#include "kd_pipeline_state.h"
#include "kd_settle.h"

kdelay_err_t kd_pipeline_state_new(kd_fwd_t *f)
{
        kd_pipeline_state_t *p = calloc(1, sizeof(*p));
        if (!p)
                return KDELAY_ERR_NO_MEMORY;
        f->intake = &p->intake; /* first: the block's address */
        f->held = &p->held;
        f->behind = &p->behind;
        f->claim = &p->claim;
        f->outage = &p->outage;
        f->journal = &p->journal;
        f->pace = &p->pace;
        f->clock = &p->clock;
        f->settle = &p->settle;
        f->hooks = &p->hooks;
        p->hooks.claim = kd_claim_enqueue;
        kd_timer_init(&p->intake.room, NULL, f);
        kd_timer_init(&p->held.drain_end, NULL, f);
        kd_timer_init(&p->claim.flush, NULL, f);
        kd_timer_init(&p->claim.renew, NULL, f);
        kd_timer_init(&p->settle.flush, NULL, f);
        kd_skew_init(&p->clock.skew);
        kd_timer_init(&p->clock.probe, NULL, f);
        return KDELAY_OK;
}

void kd_pipeline_state_free(kd_fwd_t *f)
{
        /* intake is the block's first member */
        free((kd_pipeline_state_t *)(void *)f->intake);
        f->intake = NULL;
        f->held = NULL;
        f->behind = NULL;
        f->claim = NULL;
        f->outage = NULL;
        f->journal = NULL;
        f->pace = NULL;
        f->clock = NULL;
        f->settle = NULL;
        f->hooks = NULL;
}

void kd_pipeline_load(const kd_fwd_t *f, size_t *held, size_t *claim_queue)
{
        *held = f->held->cnt;
        *claim_queue = f->claim->q.len;
}

void kd_pipeline_gauges(kd_fwd_t *f)
{
        int64_t parts = 0, waiting = 0, full = 0;
        for (const kd_part_t *p = f->intake->parts; p; p = p->next) {
                parts++;
                waiting += p->flow == KD_PART_WAITING;
                full += p->flow == KD_PART_FULL;
        }
        kd_metrics_t *m = &f->metrics;
        kd_metric_set(m, KD_M_HELD_NOW, (int64_t)f->held->cnt);
        kd_metric_set(m, KD_M_HELD_BYTES, f->held->bytes);
        kd_metric_set(m, KD_M_OUT_NOW, (int64_t)f->held->out_cnt);
        kd_metric_set(m, KD_M_CLAIM_QUEUE, (int64_t)f->claim->q.len);
        kd_metric_set(m, KD_M_PARTITIONS, parts);
        kd_metric_set(m, KD_M_PAUSED_WAITING, waiting);
        kd_metric_set(m, KD_M_PAUSED_FULL, full);
        kd_metric_set(m, KD_M_BEHIND, kd_held_behind(f));
        kd_outage_gauges(f);
        kd_settle_runs_gauges(f);
}
