/* SPDX-License-Identifier: Apache-2.0 */
/* bench_limit's ladder section (issue 44 point 3; docs/performance.md):
 * the Kafka writes per task of the default ladder, measured rather than
 * planned. Its longest tier is 7 d, so the run is scaled: every tier,
 * forwarder.hold_horizon and forwarder.lookahead (what a task's path
 * depends on, kd_path.h) are divided by one factor, and so are the
 * delays, log-uniform over 1 s .. 7 d (tasks scheduled evenly over
 * 30 s, each in the tier the library would pick: about 5m40s in all).
 * Tier names take milliseconds
 * ("1s350ms"), so at 1/2000 7 d is 5m2.4s and every tier of 30 s or more
 * is a whole number of ms (1 s becomes 1 ms, 0.5 rounded up: the smallest
 * tier only ever holds tasks due at once; the lookahead 0.1 ms becomes
 * 0).
 *
 * What does not scale is the time a read takes: a head read 5 ms after
 * it is due is 10 s late at full scale. So the measurement is set beside
 * kd_path_plan of the same scaled ladder and the same delays at the run's
 * mean read lag (each hop's append time minus the time its source record
 * was due, from the tier topics read back), and beside the full-scale
 * plan (`kdelayctl tiers plan`). Lateness is from each task's fire-at or
 * its first append, whichever came later (a task a few ms ahead may be
 * written after its fire-at). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "bl.h"
#include "kd_path.h"
#include "kd_plan.h"
#include "kd_tiers.h"
#include "kd_util.h"

#define FULL_MIN_MS 1000LL
#define FULL_MAX_MS (7LL * 24 * 3600 * SEC)
/* The tasks are scheduled evenly over this long, not all at once: a
 * third of them are due within 25 ms (50 s at full scale), and written
 * together they made a burst whose reads lagged by a second. */
#define LADDER_SCHEDULE_MS (30 * SEC)

typedef struct ladder {
        kd_tiers_t full, tiers; /* the default ladder, and scaled */
        int64_t full_horizon_ms, full_lookahead_ms;
        int64_t horizon_ms, lookahead_ms, claim_ahead_ms;
        char list[512]; /* the scaled tiers, "1ms,15ms,..." */
        int factor;
} ladder_t;

/* A tier record of a task, read back. */
typedef struct rec {
        int task;
        int64_t tier_ms, ts;
} rec_t;

static int64_t scaled(int64_t ms, int factor)
{
        return (ms + factor / 2) / factor;
}

static int conf_ms(const kdelay_conf_t *c, const char *name, int64_t *ms)
{
        char v[64];
        return kdelay_conf_get(c, name, v, sizeof(v)) ||
                       kdelay_duration_parse(v, ms)
                   ? -1
                   : 0;
}

/* The default ladder and rules, and the same divided by factor; 0 on
 * success. */
static int ladder_init(ladder_t *l, int factor)
{
        kdelay_conf_t *c = kdelay_conf_new();
        char list[512];
        int rc = !c || kdelay_conf_get(c, "tiers", list, sizeof(list)) ||
                 kd_tiers_parse(&l->full, list, NULL, 0) ||
                 conf_ms(c, "forwarder.hold_horizon", &l->full_horizon_ms) ||
                 conf_ms(c, "forwarder.lookahead", &l->full_lookahead_ms) ||
                 conf_ms(c, "forwarder.claim_ahead", &l->claim_ahead_ms);
        kdelay_conf_destroy(c);
        if (rc)
                return -1;
        l->factor = factor;
        l->tiers.cnt = 0;
        for (size_t i = 0; i < l->full.cnt; i++) {
                char name[KD_TIER_NAME_MAX];
                int64_t ms = scaled(l->full.v[i].delay_ms, factor);
                kdelay_duration_format(ms < 1 ? 1 : ms, name, sizeof(name));
                /* Two tiers scaled to one ms are refused: a smaller
                 * factor is needed. */
                if (kd_tiers_add(&l->tiers, name, NULL, 0))
                        return -1;
        }
        l->horizon_ms = scaled(l->full_horizon_ms, factor);
        l->lookahead_ms = scaled(l->full_lookahead_ms, factor);
        /* claim_ahead is no part of a path but a time budget: a held
         * task's claim waits up to half of it for its batch. The default
         * 500 ms against a 15 ms horizon made every fire wait for its
         * claim (p50 136 ms late); at most the horizon, a claim goes out
         * within half of it and well before the fire. */
        if (l->claim_ahead_ms > l->horizon_ms)
                l->claim_ahead_ms = l->horizon_ms;
        kd_tiers_format(&l->tiers, l->list, sizeof(l->list));
        return 0;
}

/* n delays log-uniform over [lo, hi] ms (doubles), rounded; a fixed
 * sequence (xorshift64*, seed 1). */
static void draw_delays(int64_t *out, int n, double lo, double hi)
{
        uint64_t s = 1;
        double a = log(lo), b = log(hi);
        for (int i = 0; i < n; i++) {
                s ^= s >> 12;
                s ^= s << 25;
                s ^= s >> 27;
                double u =
                    (double)((s * 2685821657736338717ULL) >> 11) * 0x1.0p-53;
                out[i] = (int64_t)llround(exp(a + u * (b - a)));
        }
}

/* Task i queued at LADDER_SCHEDULE_MS * i / n from the start, due
 * delay[i] after, in the tier the library would pick; fire_at[i] and
 * queued[i] set. 0 when every record was acked. */
static int ladder_produce(const ladder_t *l, int n, const int64_t *delay,
                          int64_t *fire_at, int64_t *queued)
{
        int errors = 0;
        /* A 1 ms linger: at 1/2000 bl_produce's 20 ms would be 40 s of a
         * task's delay. */
        rd_kafka_t *rk = bl_producer_new(1, &errors);
        if (!rk)
                return -1;
        /* A first record, flushed, so that the tasks do not wait for the
         * connection and the producer id (about 100 ms); its key ends in
         * no number, so no reader counts it. */
        if (bl_produce_task(rk, bl_target, "warm-up", kd_now_ms()) ||
            rd_kafka_flush(rk, 30000))
                errors++;
        int64_t t0 = kd_mono_ms();
        for (int i = 0; i < n && !errors; i++) {
                char id[64], topic[128];
                int64_t at = t0 + LADDER_SCHEDULE_MS * i / n;
                for (int64_t now; (now = kd_mono_ms()) < at;)
                        rd_kafka_poll(rk, (int)(at - now));
                snprintf(id, sizeof(id), "%s-l-%d", bl_prefix, i);
                kd_tiers_topic(&l->tiers, kd_tiers_choose(&l->tiers, delay[i]),
                               bl_prefix, topic, sizeof(topic));
                queued[i] = kd_now_ms();
                fire_at[i] = queued[i] + delay[i];
                if (bl_produce_task(rk, topic, id, fire_at[i]))
                        errors++;
                rd_kafka_poll(rk, 0);
        }
        if (rd_kafka_flush(rk, 120000))
                errors++;
        rd_kafka_destroy(rk);
        return errors ? -1 : 0;
}

static int cmp_rec(const void *a, const void *b)
{
        const rec_t *x = a, *y = b;
        if (x->task != y->task)
                return x->task < y->task ? -1 : 1;
        return (x->ts > y->ts) - (x->ts < y->ts);
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return (x > y) - (x < y);
}

/* Every record of the scaled ladder's topics with a task number below n
 * (append time, tier), sorted by task and time, into *out (malloc'd,
 * caller frees) and *cnt. 0 when every partition was read to its end. */
static int read_tiers(const ladder_t *l, int n, rec_t **out, size_t *cnt)
{
        char grp[96];
        snprintf(grp, sizeof(grp), "%s-tiers", bl_prefix);
        const char *props[] = {
            "group.id", grp, "enable.auto.commit", "false", "auto.offset.reset",
            "earliest", NULL};
        rd_kafka_t *rk = it_kafka_new(RD_KAFKA_CONSUMER, props);
        rd_kafka_topic_partition_list_t *parts =
            rd_kafka_topic_partition_list_new((int)l->tiers.cnt *
                                              BL_PARTITIONS);
        size_t cap = (size_t)n * 4, len = 0;
        rec_t *v = malloc(cap * sizeof(*v));
        int64_t want = 0, got = 0;
        int rc = rk && parts && v ? 0 : -1;
        for (size_t t = 0; !rc && t < l->tiers.cnt; t++) {
                char topic[128];
                kd_tiers_topic(&l->tiers, t, bl_prefix, topic, sizeof(topic));
                for (int p = 0; !rc && p < BL_PARTITIONS; p++) {
                        int64_t lo, hi;
                        if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo,
                                                             &hi, 10000)) {
                                rc = -1;
                                break;
                        }
                        want += hi - lo;
                        rd_kafka_topic_partition_list_add(parts, topic, p)
                            ->offset = RD_KAFKA_OFFSET_BEGINNING;
                }
        }
        if (!rc)
                rd_kafka_poll_set_consumer(rk);
        if (!rc && rd_kafka_assign(rk, parts))
                rc = -1;
        int64_t end = kd_mono_ms() + 120 * SEC;
        while (!rc && got < want && kd_mono_ms() < end) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
                if (!m)
                        continue;
                long no = m->err ? -1 : bl_task_no(m);
                int64_t tier_ms;
                got += !m->err;
                if (no >= 0 && no < n &&
                    !kd_tiers_topic_delay(
                        bl_prefix, rd_kafka_topic_name(m->rkt), &tier_ms)) {
                        if (len == cap) {
                                rec_t *w = realloc(v, 2 * cap * sizeof(*v));
                                if (!w)
                                        rc = -1;
                                else
                                        v = w, cap *= 2;
                        }
                        if (!rc)
                                v[len++] = (rec_t){
                                    (int)no, tier_ms,
                                    rd_kafka_message_timestamp(m, NULL)};
                }
                rd_kafka_message_destroy(m);
        }
        if (parts)
                rd_kafka_topic_partition_list_destroy(parts);
        if (rk) {
                rd_kafka_consumer_close(rk);
                rd_kafka_destroy(rk);
        }
        if (rc || got < want) {
                free(v);
                return -1;
        }
        qsort(v, len, sizeof(*v), cmp_rec);
        *out = v;
        *cnt = len;
        return 0;
}

/* p50, p99, max of v[0..n-1] (sorted here). */
static void quantiles(int64_t *v, size_t n, int64_t q[3])
{
        q[0] = q[1] = q[2] = -1;
        if (!n)
                return;
        qsort(v, n, sizeof(*v), cmp_i64);
        q[0] = v[(n - 1) / 2];
        q[1] = v[(n * 99 + 99) / 100 - 1];
        q[2] = v[n - 1];
}

/* Mean writes per task of kd_path_plan over delay[0..n-1] under rules. */
static double plan_mean(const kd_path_rules_t *rules, const int64_t *delay,
                        int n)
{
        double sum = 0;
        for (int i = 0; i < n; i++) {
                kd_path_t p;
                kd_path_plan(rules, delay[i], &p);
                sum += p.writes;
        }
        return sum / n;
}

/* The figures from the tier records: read lag of every hop, each task's
 * first append; lateness from the later of fire-at and first append. */
static void ladder_report(const ladder_t *l, int n, const int64_t *delay,
                          const int64_t *fire_at, const int64_t *queued,
                          const int64_t *fired_ts, const rec_t *v, size_t len,
                          const bl_fwd_t *r, const bl_seen_t *s)
{
        int64_t *lag = malloc((len + 1) * sizeof(*lag));
        int64_t *late = malloc((size_t)n * sizeof(*late));
        int64_t *first = malloc((size_t)n * sizeof(*first));
        int64_t *wlat = malloc((size_t)n * sizeof(*wlat));
        if (!lag || !late || !first || !wlat) {
                bl_check(0, "ladder memory");
                goto out;
        }
        for (int i = 0; i < n; i++)
                first[i] = -1;
        size_t hops = 0;
        double lag_sum = 0, write_sum = 0;
        int writes_n = 0;
        for (size_t k = 0; k < len; k++) {
                const rec_t *a = &v[k];
                if (first[a->task] < 0) {
                        first[a->task] = a->ts;
                        wlat[writes_n] = a->ts - queued[a->task];
                        write_sum += (double)wlat[writes_n++];
                }
                if (k + 1 < len && v[k + 1].task == a->task) {
                        int64_t due = kd_path_due(fire_at[a->task], a->ts,
                                                  a->tier_ms, l->horizon_ms);
                        lag[hops] = v[k + 1].ts - (due - l->lookahead_ms);
                        lag_sum += (double)lag[hops++];
                }
        }
        double lag_mean = hops ? lag_sum / (double)hops : 0;
        int64_t lq[3];
        quantiles(lag, hops, lq);
        size_t nl = 0;
        for (int i = 0; i < n; i++)
                if (fired_ts[i] >= 0) {
                        int64_t from =
                            fire_at[i] > first[i] ? fire_at[i] : first[i];
                        late[nl++] = fired_ts[i] - from;
                }
        int64_t q[3];
        quantiles(late, nl, q);
        kd_path_rules_t rules = {&l->tiers, l->horizon_ms, l->lookahead_ms,
                                 (int64_t)llround(lag_mean)};
        double plan_lag = plan_mean(&rules, delay, n);
        rules.lag_ms = 0;
        double plan_0 = plan_mean(&rules, delay, n);
        /* The full-scale plan: `kdelayctl tiers plan`'s defaults
         * (loguniform:1s:7d, 100000 samples, seed 1), and at the run's
         * lag scaled up. */
        kd_path_rules_t full = {&l->full, l->full_horizon_ms,
                                l->full_lookahead_ms, 0};
        kd_dist_t dist = {.kind = KD_DIST_LOGUNIFORM,
                          .lo_ms = FULL_MIN_MS,
                          .hi_ms = FULL_MAX_MS};
        kd_plan_result_t pr0, prl;
        int full_ok = !kd_plan_run(&full, &dist, 100000, 1, &pr0, NULL, 0);
        full.lag_ms = (int64_t)llround(lag_mean * l->factor);
        full_ok =
            full_ok && !kd_plan_run(&full, &dist, 100000, 1, &prl, NULL, 0);

        printf("ladder_writes_per_task %.3f\n",
               (double)(n + r->hopped + r->fired) / n);
        printf("ladder_tier_records_writes_per_task %.3f\n",
               (double)(len + s->n + s->dups) / n);
        printf("ladder_plan_writes_per_task %.3f lag_ms %.0f (lag 0: %.3f)\n",
               plan_lag, lag_mean, plan_0);
        if (full_ok)
                printf("ladder_full_scale_plan_writes_per_task %.3f "
                       "(at the run's lag scaled up, %.0f s: %.3f)\n",
                       pr0.mean_writes, lag_mean * l->factor / 1000.0,
                       prl.mean_writes);
        else
                printf("ladder_full_scale_plan_writes_per_task unknown\n");
        printf("ladder_read_lag_ms mean %.1f p50 %lld p99 %lld max %lld "
               "hops %zu\n",
               lag_mean, (long long)lq[0], (long long)lq[1], (long long)lq[2],
               hops);
        int64_t wq[3];
        quantiles(wlat, (size_t)writes_n, wq);
        printf("ladder_write_latency_ms mean %.1f p50 %lld p99 %lld max "
               "%lld\n",
               writes_n ? write_sum / writes_n : 0, (long long)wq[0],
               (long long)wq[1], (long long)wq[2]);
        printf("ladder_lateness_ms p50 %lld p99 %lld max %lld (from fire-at: "
               "p50 %lld p99 %lld max %lld)\n",
               (long long)q[0], (long long)q[1], (long long)q[2],
               (long long)s->p50, (long long)s->p99, (long long)s->max);
out:
        free(lag);
        free(late);
        free(first);
        free(wlat);
}

double bl_ladder_run(int n, int factor)
{
        double writes = -1;
        ladder_t l;
        char grp[96], rgrp[96];
        if (ladder_init(&l, factor)) {
                bl_check(0, "ladder: the default ladder scaled by the factor");
                return -1;
        }
        printf("ladder_scale 1/%d tiers %s hold_horizon %lldms lookahead "
               "%lldms claim_ahead %lldms\n",
               factor, l.list, (long long)l.horizon_ms,
               (long long)l.lookahead_ms, (long long)l.claim_ahead_ms);
        int64_t *delay = malloc((size_t)n * sizeof(*delay));
        int64_t *fire_at = malloc((size_t)n * sizeof(*fire_at));
        int64_t *queued = malloc((size_t)n * sizeof(*queued));
        int64_t *fired_ts = malloc((size_t)n * sizeof(*fired_ts));
        rec_t *v = NULL;
        size_t len = 0;
        if (!delay || !fire_at || !queued || !fired_ts ||
            bl_section(l.list, grp, sizeof(grp), rgrp, sizeof(rgrp))) {
                bl_check(0, "ladder setup");
                goto out;
        }
        double lo = (double)FULL_MIN_MS / factor,
               hi = (double)FULL_MAX_MS / factor;
        draw_delays(delay, n, lo, hi);
        printf("ladder_tasks %d delays loguniform %.1fms..%.0fms\n", n, lo, hi);
        for (int i = 0; i < n; i++)
                fired_ts[i] = -1;
        char xt[600], xh[64], xl[64], xc[64];
        snprintf(xt, sizeof(xt), "tiers=%s", l.list);
        snprintf(xh, sizeof(xh), "forwarder.hold_horizon=%lldms",
                 (long long)l.horizon_ms);
        snprintf(xl, sizeof(xl), "forwarder.lookahead=%lldms",
                 (long long)l.lookahead_ms);
        snprintf(xc, sizeof(xc), "forwarder.claim_ahead=%lldms",
                 (long long)l.claim_ahead_ms);
        const char *extra[] = {xt, xh, xl, xc, NULL};
        bl_fwd_t r;
        bl_seen_t s;
        if (bl_fwd_start(&r, "blL", "at_least_once", grp, extra, 1)) {
                bl_check(0, "ladder start");
                goto out;
        }
        bl_check(ladder_produce(&l, n, delay, fire_at, queued) == 0,
                 "ladder produce");
        int rc =
            bl_read_target_ts(rgrp, n, (int)(hi + 180 * SEC), 0, &s, fired_ts);
        bl_check(bl_fwd_stop(&r) == 0, "ladder forwarder exit");
        int lost = n - (int)s.n;
        printf("ladder_lost %d early %d duplicates %zu\n", lost, s.early,
               s.dups);
        bl_check(rc == 0 && lost == 0, "ladder lost");
        bl_check(s.early == 0, "ladder early");
        if (read_tiers(&l, n, &v, &len)) {
                bl_check(0, "ladder tier records read back");
                goto out;
        }
        ladder_report(&l, n, delay, fire_at, queued, fired_ts, v, len, &r, &s);
        writes = (double)(n + r.hopped + r.fired) / n;
        it_db_drop(bl_db);
out:
        free(delay);
        free(fire_at);
        free(queued);
        free(fired_ts);
        free(v);
        return writes;
}
