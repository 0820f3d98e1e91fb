/* Tier topics that do not exist (kd_tiercheck.h). */
#include "kd_tiercheck.h"

#include <stdio.h>
#include <string.h>

#include "kd_log.h"
#include "kd_tiers.h"
#include "kd_util.h"

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
        if (len >= missing_size && missing_size > 4) /* cut: say so */
                memcpy(missing + missing_size - 4, "...", 4);
        return n;
}

static void check(kd_fwd_t *f)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err = rd_kafka_metadata(
            f->kafka.consumer, 1, NULL, &md, KD_TIERCHECK_TIMEOUT_MS);
        if (err) {
                kd_log(f->conf, KDELAY_LOG_INFO,
                       "event=tier_topics_unchecked err=%s",
                       rd_kafka_err2name(err));
                return;
        }
        char missing[sizeof(f->tiers_missing)];
        int matching = 0;
        int n = kd_tiercheck_missing(f->conf, md, missing, sizeof(missing),
                                     &matching);
        rd_kafka_metadata_destroy(md);
        int was = f->metrics.v[KD_M_TIER_TOPICS_MISSING] > 0;
        f->metrics.v[KD_M_TIER_TOPICS_MISSING] = n;
        kd_strlcpy(f->tiers_missing, missing, sizeof(f->tiers_missing));
        if (!n) {
                f->tiers_why[0] = '\0';
                if (was)
                        kd_log(f->conf, KDELAY_LOG_NOTICE,
                               "event=tier_topics_found tiers=%zu",
                               f->conf->tiers.cnt);
                return;
        }
        snprintf(f->tiers_why, sizeof(f->tiers_why),
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

static void tiercheck_cb(kd_timer_t *tm, void *arg)
{
        kd_fwd_t *f = arg;
        check(f);
        if (kd_timer_arm(&f->timers, tm, KD_CLOCK_MONO,
                         kd_mono_ms() + KD_TIERCHECK_MS, tiercheck_cb, f))
                kd_fwd_oom(f, "tiercheck_timer");
}

void kd_tiercheck_start(kd_fwd_t *f)
{
        tiercheck_cb(&f->tiercheck_timer, f);
}
