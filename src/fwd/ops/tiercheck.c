/* SPDX-License-Identifier: Apache-2.0 */
/* Tier topics that do not exist (kd_tiercheck.h). */
#include "kd_tiercheck.h"

#include <stdio.h>
#include <string.h>

#include "kd_fwdid.h"
#include "kd_log.h"
#include "kd_ops_state.h"
#include "kd_tiers.h"
#include "kd_util.h"
#include "pipeline/kd_pace.h"

static int md_has(const struct rd_kafka_metadata *md, const char *topic)
{
        for (int i = 0; i < md->topic_cnt; i++)
                if (!strcmp(md->topics[i].topic, topic))
                        return md->topics[i].err !=
                               RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
        return 0;
}

int kd_tiercheck_missing(const kdelay_conf_t *conf,
                         const struct rd_kafka_metadata *md, char *missing,
                         size_t missing_size, int *matching)
{
        int n = 0;
        size_t len = 0;
        int64_t ms;
        if (missing_size)
                missing[0] = '\0';
        *matching = 0;
        for (int i = 0; i < md->topic_cnt; i++)
                if (!kd_tiers_topic_delay(conf->topic_prefix,
                                          md->topics[i].topic, &ms))
                        (*matching)++;
        for (size_t i = 0; i < conf->tiers.cnt; i++) {
                char topic[256];
                kd_tiers_topic(&conf->tiers, i, conf->topic_prefix, topic,
                               sizeof(topic));
                if (md_has(md, topic))
                        continue;
                n++;
                if (len < missing_size) {
                        int w = snprintf(missing + len, missing_size - len,
                                         "%s%s", len ? "," : "", topic);
                        len += w > 0 ? (size_t)w : 0;
                }
        }
        /* Under fate_outage_policy=fire the journal is needed too: without
         * it an outage would hold tasks after all (kd_journal.h). */
        char journal[256];
        kd_conf_journal_topic(conf, journal, sizeof(journal));
        if (conf->fwd_outage_policy == KD_OUTAGE_FIRE && !md_has(md, journal)) {
                n++;
                if (len < missing_size) {
                        int w = snprintf(missing + len, missing_size - len,
                                         "%s%s", len ? "," : "", journal);
                        len += w > 0 ? (size_t)w : 0;
                }
        }
        if (len >= missing_size && missing_size > 4) /* cut: say so */
                memcpy(missing + missing_size - 4, "...", 4);
        return n;
}

static void check(kd_fwd_t *f)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err = rd_kafka_metadata(
            f->consumer.rk, 1, NULL, &md, KD_TIERCHECK_TIMEOUT_MS);
        if (err) {
                kd_log(f->conf, KDELAY_LOG_INFO,
                       "event=tier_topics_unchecked err=%s",
                       rd_kafka_err2name(err));
                return;
        }
        char missing[sizeof(f->ops->tiers_missing)];
        int matching = 0;
        int n = kd_tiercheck_missing(f->conf, md, missing, sizeof(missing),
                                     &matching);
        /* The partitions the group reads: target rate limits share by
         * them (kd_pace.h). */
        int parts = 0;
        int64_t ms;
        for (int i = 0; i < md->topic_cnt; i++)
                if (!md->topics[i].err &&
                    !kd_tiers_topic_delay(f->conf->topic_prefix,
                                          md->topics[i].topic, &ms))
                        parts += md->topics[i].partition_cnt;
        kd_pace_tier_partitions(f, parts);
        rd_kafka_metadata_destroy(md);
        int was = f->metrics.v[KD_M_TIER_TOPICS_MISSING] > 0;
        f->metrics.v[KD_M_TIER_TOPICS_MISSING] = n;
        kd_strlcpy(f->ops->tiers_missing, missing,
                   sizeof(f->ops->tiers_missing));
        if (!n) {
                f->ops->tiers_why[0] = '\0';
                if (was)
                        kd_log(f->conf, KDELAY_LOG_NOTICE,
                               "event=tier_topics_found tiers=%zu",
                               f->conf->tiers.cnt);
                return;
        }
        snprintf(f->ops->tiers_why, sizeof(f->ops->tiers_why),
                 "tier topics missing: %s (create them: kdelayctl topics "
                 "create)",
                 missing);
        char q[KD_LOG_QUOTED_MAX(sizeof(missing))];
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=tier_topics_missing missing=%d of=%zu topics=%s "
               "pattern_matches=%d fix=\"kdelayctl topics create\" "
               "next_check=%ds",
               n, f->conf->tiers.cnt, kd_log_quote(missing, q, sizeof(q)),
               matching, KD_TIERCHECK_MS / 1000);
}

/* Other members of the group whose client.id names this instance (the
 * forwarder sets client.id = kdelay-forwarder/<release>/<instance>, one
 * before 0.4.0 the instance alone: kd_fwdid.h): a second live
 * forwarder with the same instance, or this instance's previous process
 * until its session times out (the broker cannot tell them apart for a
 * dynamic member, so this warns and counts, never refuses). A static
 * member needs no check: the broker fences the older of two with one
 * group.instance.id, and a restarted one replaces its predecessor, which
 * a listing can still show for a moment (a false error on every restart). */
static void instance_check(kd_fwd_t *f)
{
        if (f->conf->fwd_static_membership) {
                f->metrics.v[KD_M_INSTANCE_IN_USE] = 0;
                return;
        }
        const struct rd_kafka_group_list *gl = NULL;
        rd_kafka_resp_err_t err =
            rd_kafka_list_groups(f->consumer.rk, f->conf->fwd_group_id, &gl,
                                 KD_TIERCHECK_TIMEOUT_MS);
        if (err || !gl)
                return; /* unknown: the last figure stays */
        char *me = rd_kafka_memberid(f->consumer.rk);
        char hosts[256] = "";
        size_t hl = 0;
        int others = 0;
        for (int g = 0; g < gl->group_cnt; g++)
                for (int i = 0; i < gl->groups[g].member_cnt; i++) {
                        const struct rd_kafka_group_member_info *mi =
                            &gl->groups[g].members[i];
                        const char *inst;
                        int v[3];
                        if (mi->client_id)
                                kd_fwdid_parse(mi->client_id, &inst, v);
                        if (!mi->client_id || strcmp(inst, f->instance) ||
                            (me && mi->member_id && !strcmp(mi->member_id, me)))
                                continue;
                        others++;
                        if (hl < sizeof(hosts)) {
                                int w = snprintf(
                                    hosts + hl, sizeof(hosts) - hl, "%s%s",
                                    hl ? "," : "",
                                    mi->client_host ? mi->client_host : "?");
                                hl += w > 0 ? (size_t)w : 0;
                        }
                }
        if (me)
                rd_kafka_mem_free(f->consumer.rk, me);
        rd_kafka_group_list_destroy(gl);
        f->metrics.v[KD_M_INSTANCE_IN_USE] = others;
        if (!others)
                return;
        char qi[KD_LOG_QUOTED_MAX(64)], qg[KD_LOG_QUOTED_MAX(255)];
        char qh[KD_LOG_QUOTED_MAX(sizeof(hosts))];
        kd_log(f->conf, KDELAY_LOG_ERROR,
               "event=instance_in_use instance=%s group=%s others=%d "
               "hosts=%s why=\"another member of the group has this "
               "forwarder.instance as its client.id: a second forwarder "
               "with the same instance (give each its own: claims and "
               "exactly_once's transactional id depend on it), or this "
               "instance's previous process until its session times out\"",
               kd_log_quote(f->instance, qi, sizeof(qi)),
               kd_log_quote(f->conf->fwd_group_id, qg, sizeof(qg)), others,
               kd_log_quote(hosts, qh, sizeof(qh)));
}

static void tiercheck_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        check(f);
        instance_check(f);
        int wrong = f->metrics.v[KD_M_TIER_TOPICS_MISSING] > 0 ||
                    f->metrics.v[KD_M_INSTANCE_IN_USE] > 0;
        if (kd_timer_arm(&f->timers, tm, KD_CLOCK_MONO,
                         kd_fwd_mono_ms(f) +
                             (wrong ? KD_TIERCHECK_MS : KD_TIERCHECK_IDLE_MS),
                         tiercheck_cb, f))
                kd_fwd_oom(f, "tiercheck_timer");
}

void kd_tiercheck_soon(kd_fwd_t *f)
{
        if (kd_timer_arm_by(&f->timers, &f->ops->tiercheck_timer, KD_CLOCK_MONO,
                            kd_fwd_mono_ms(f) + KD_TIERCHECK_SOON_MS,
                            tiercheck_cb, f))
                kd_fwd_oom(f, "tiercheck_timer");
}

void kd_tiercheck_start(kd_fwd_t *f)
{
        tiercheck_cb(&f->ops->tiercheck_timer, f);
}
