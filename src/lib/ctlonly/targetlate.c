/* SPDX-License-Identifier: Apache-2.0 */
/* The lateness of recent fires to rate-limited targets (kd_targetlate.h). */
#include "kd_targetlate.h"

#include <stdlib.h>
#include <string.h>

#include <kdelay/kdelay.h>

#include "kd_grouppos.h"
#include "kd_scan.h"
#include "kd_util.h"

#define KD_TARGETLATE_TIMEOUT_MS 10000

/* The lateness samples of one topic. */
typedef struct samples {
        int64_t *v; /* owned */
        size_t cnt, cap;
        int oom;
} samples_t;

static int take(const kd_scan_rec_t *r, void *opaque)
{
        samples_t *s = opaque;
        const void *v;
        size_t n;
        int64_t fire_at = 0, ts = rd_kafka_message_timestamp(r->msg, NULL);
        if (!r->hdrs ||
            rd_kafka_header_get_last((rd_kafka_headers_t *)r->hdrs,
                                     KDELAY_HDR_FIRE_AT, &v, &n) ||
            !v || !n || n > 19 || ts < 0)
                return 0; /* not a fired task */
        for (size_t i = 0; i < n; i++) {
                char c = ((const char *)v)[i];
                if (c < '0' || c > '9')
                        return 0;
                fire_at = fire_at * 10 + (c - '0');
        }
        if (s->cnt == s->cap) {
                size_t cap = s->cap ? 2 * s->cap : 1024;
                int64_t *nv = realloc(s->v, cap * sizeof(*nv));
                if (!nv) {
                        s->oom = 1;
                        return -1;
                }
                s->v = nv;
                s->cap = cap;
        }
        s->v[s->cnt++] = ts - fire_at;
        return 0;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return (x > y) - (x < y);
}

static void figures(samples_t *s, kd_target_late_t *t)
{
        t->fires = s->cnt;
        t->p50_ms = t->p99_ms = t->max_ms = -1;
        if (!s->cnt)
                return;
        qsort(s->v, s->cnt, sizeof(*s->v), cmp_i64);
        t->p50_ms = s->v[(s->cnt - 1) / 2];
        t->p99_ms = s->v[(s->cnt - 1) * 99 / 100];
        t->max_ms = s->v[s->cnt - 1];
}

/* The topics of md the rules match, into out. */
static size_t matching(const struct rd_kafka_metadata *md,
                       const kd_ratelimits_t *rules, kd_target_late_t *out,
                       size_t max)
{
        size_t cnt = 0;
        for (int i = 0; i < md->topic_cnt && cnt < max; i++) {
                const char *t = md->topics[i].topic;
                int r = kd_ratelimits_match(rules, t, strlen(t));
                if (r < 0 || md->topics[i].err || !strncmp(t, "__", 2))
                        continue;
                memset(&out[cnt], 0, sizeof(out[cnt]));
                out[cnt].rule = r;
                kd_strlcpy(out[cnt].topic, t, sizeof(out[cnt].topic));
                cnt++;
        }
        return cnt;
}

kdelay_err_t kd_target_late_read(const kdelay_conf_t *conf,
                                 const kd_ratelimits_t *rules,
                                 int64_t window_ms, int64_t budget_ms,
                                 kd_target_late_t *out, size_t max,
                                 size_t *cntp, char *errstr, size_t errstr_size)
{
        *cntp = 0;
        if (!rules->cnt)
                return KDELAY_OK;
        kd_rk_owner_t owner = {conf};
        rd_kafka_t *rk = kd_grouppos_client(&owner, errstr, errstr_size);
        if (!rk)
                return KDELAY_ERR_KAFKA;
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t merr =
            rd_kafka_metadata(rk, 1, NULL, &md, KD_TARGETLATE_TIMEOUT_MS);
        if (merr) {
                rd_kafka_destroy(rk);
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "metadata: %s", rd_kafka_err2str(merr));
        }
        size_t cnt = matching(md, rules, out, max);
        rd_kafka_metadata_destroy(md);
        rd_kafka_destroy(rk);
        kdelay_err_t err = KDELAY_OK;
        int64_t since = kd_now_ms() - window_ms;
        for (size_t i = 0; !err && i < cnt; i++) {
                samples_t s = {0};
                kd_scan_opts_t so = {.budget_ms = budget_ms};
                kd_scan_progress_t prog = {0};
                err = kd_scan_since(conf, out[i].topic, since, &so, take, &s,
                                    &prog, errstr, errstr_size);
                if (s.oom)
                        err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                                      "out of memory");
                out[i].complete = !err && prog.complete;
                figures(&s, &out[i]);
                free(s.v);
        }
        *cntp = err ? 0 : cnt;
        return err;
}
