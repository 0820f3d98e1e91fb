/* SPDX-License-Identifier: Apache-2.0 */
/* kdelay's own topics: create and check them with the Kafka Admin API;
 * what is known of a target topic (kdelayctl dead replay). */
#include "kd_topics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "kd_conf.h"
#include "kd_util.h"

#define KD_ADMIN_TIMEOUT_MS 30000

/* An admin client logging through owner->conf; owner must outlive it. */
static rd_kafka_t *admin_new(kd_rk_owner_t *owner, char *errstr,
                             size_t errstr_size)
{
        return kd_conf_rk_new(owner, RD_KAFKA_PRODUCER, NULL, errstr,
                              errstr_size);
}

static void reports_init(const kdelay_conf_t *conf, kd_topic_report_t *r,
                         size_t *np)
{
        size_t n = 0;
        for (size_t i = 0; i < conf->tiers.cnt; i++, n++) {
                memset(&r[n], 0, sizeof(r[n]));
                kd_tiers_topic(&conf->tiers, i, conf->topic_prefix, r[n].name,
                               sizeof(r[n].name));
                r[n].min_retention_ms = conf->tiers.v[i].delay_ms +
                                        conf->topics_retention_margin_ms;
                r[n].needed = 1;
        }
        memset(&r[n], 0, sizeof(r[n]));
        kd_conf_dead_topic(conf, r[n].name, sizeof(r[n].name));
        r[n].min_retention_ms = -1;
        r[n].needed = 1;
        n++;
        /* The journal of fires without a claim (fate_outage_policy=fire),
         * kept as long as dead letters: past any outage and its
         * reconciliation. */
        memset(&r[n], 0, sizeof(r[n]));
        kd_conf_journal_topic(conf, r[n].name, sizeof(r[n].name));
        r[n].min_retention_ms = -1;
        r[n].needed = conf->fwd_outage_policy == KD_OUTAGE_FIRE;
        *np = n + 1;
}

/* Marks which reports exist, with their partition counts. */
static kdelay_err_t reports_fill(rd_kafka_t *rk, kd_topic_report_t *r, size_t n,
                                 char *errstr, size_t errstr_size)
{
        const struct rd_kafka_metadata *md;
        rd_kafka_resp_err_t kerr =
            rd_kafka_metadata(rk, 1, NULL, &md, KD_ADMIN_TIMEOUT_MS);
        if (kerr)
                return kd_fail(kerr == RD_KAFKA_RESP_ERR__TRANSPORT ||
                                       kerr == RD_KAFKA_RESP_ERR__TIMED_OUT
                                   ? KDELAY_ERR_TIMED_OUT
                                   : KDELAY_ERR_KAFKA,
                               errstr, errstr_size,
                               "cannot read cluster metadata: %s",
                               rd_kafka_err2str(kerr));
        for (size_t i = 0; i < n; i++) {
                r[i].state = KD_TOPIC_MISSING;
                r[i].partitions = -1;
                for (int t = 0; t < md->topic_cnt; t++) {
                        if (strcmp(md->topics[t].topic, r[i].name) == 0 &&
                            !md->topics[t].err) {
                                r[i].state = KD_TOPIC_EXISTS;
                                r[i].partitions = md->topics[t].partition_cnt;
                        }
                }
        }
        rd_kafka_metadata_destroy(md);
        return KDELAY_OK;
}

/* Waits until metadata shows every CREATED report's topic with a leader
 * for each partition, so "created" means usable at once. */
static kdelay_err_t wait_visible(rd_kafka_t *rk, kd_topic_report_t *r, size_t n,
                                 char *errstr, size_t errstr_size)
{
        int64_t deadline = kd_mono_ms() + KD_ADMIN_TIMEOUT_MS;
        for (;;) {
                const struct rd_kafka_metadata *md;
                size_t missing = 0;
                if (rd_kafka_metadata(rk, 1, NULL, &md, 5000))
                        md = NULL;
                for (size_t i = 0; i < n; i++) {
                        if (r[i].state != KD_TOPIC_CREATED)
                                continue;
                        int ready = 0;
                        for (int t = 0; md && t < md->topic_cnt; t++) {
                                const rd_kafka_metadata_topic_t *mt =
                                    &md->topics[t];
                                if (strcmp(mt->topic, r[i].name) || mt->err ||
                                    mt->partition_cnt < 1)
                                        continue;
                                ready = 1;
                                for (int p = 0; p < mt->partition_cnt; p++)
                                        if (mt->partitions[p].leader < 0)
                                                ready = 0;
                        }
                        missing += !ready;
                }
                if (md)
                        rd_kafka_metadata_destroy(md);
                if (missing == 0)
                        return KDELAY_OK;
                if (kd_mono_ms() > deadline)
                        return kd_fail(KDELAY_ERR_TIMED_OUT, errstr,
                                       errstr_size,
                                       "%zu created topics still not visible "
                                       "in metadata after %d ms",
                                       missing, KD_ADMIN_TIMEOUT_MS);
                rd_kafka_poll(rk, 100);
        }
}

kdelay_err_t kd_topics_list(const kdelay_conf_t *conf,
                            kd_topic_report_t *reports, size_t *np,
                            char *errstr, size_t errstr_size)
{
        kd_rk_owner_t owner = {conf};
        rd_kafka_t *rk = admin_new(&owner, errstr, errstr_size);
        if (!rk)
                return KDELAY_ERR_KAFKA;
        reports_init(conf, reports, np);
        kdelay_err_t err = reports_fill(rk, reports, *np, errstr, errstr_size);
        rd_kafka_destroy(rk);
        return err;
}

/* Waits for the admin result of type `type` on q. */
static rd_kafka_event_t *admin_wait(rd_kafka_queue_t *q, int type)
{
        int64_t deadline = kd_mono_ms() + KD_ADMIN_TIMEOUT_MS + 5000;
        while (kd_mono_ms() < deadline) {
                rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 1000);
                if (!ev)
                        continue;
                if (rd_kafka_event_type(ev) == type)
                        return ev;
                rd_kafka_event_destroy(ev);
        }
        return NULL;
}

/* One Admin API round trip: send() issues the request on q with opt; the
 * result event of type ev_type comes back in *evp (caller destroys it).
 * Timeouts and request-level errors are returned as kdelay errors. */
typedef void(kd_admin_send_fn)(rd_kafka_t *rk, rd_kafka_AdminOptions_t *opt,
                               rd_kafka_queue_t *q, void *arg);

static kdelay_err_t admin_call(rd_kafka_t *rk, rd_kafka_admin_op_t op,
                               int ev_type, const char *what,
                               kd_admin_send_fn *send, void *arg,
                               rd_kafka_event_t **evp, char *errstr,
                               size_t errstr_size)
{
        char why[256];
        kdelay_err_t err = KDELAY_OK;
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, op);
        rd_kafka_AdminOptions_set_request_timeout(opt, KD_ADMIN_TIMEOUT_MS, why,
                                                  sizeof(why));
        if (op == RD_KAFKA_ADMIN_OP_CREATETOPICS)
                rd_kafka_AdminOptions_set_operation_timeout(
                    opt, KD_ADMIN_TIMEOUT_MS, why, sizeof(why));
        send(rk, opt, q, arg);
        rd_kafka_event_t *ev = admin_wait(q, ev_type);
        if (!ev) {
                err = kd_fail(KDELAY_ERR_TIMED_OUT, errstr, errstr_size,
                              "no answer to %s", what);
        } else if (rd_kafka_event_error(ev)) {
                err = kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size, "%s: %s",
                              what, rd_kafka_event_error_string(ev));
                rd_kafka_event_destroy(ev);
                ev = NULL;
        }
        rd_kafka_AdminOptions_destroy(opt);
        rd_kafka_queue_destroy(q);
        *evp = ev;
        return err;
}

typedef struct kd_create_req {
        rd_kafka_NewTopic_t **nts;
        size_t cnt;
} kd_create_req_t;

static void send_create(rd_kafka_t *rk, rd_kafka_AdminOptions_t *opt,
                        rd_kafka_queue_t *q, void *arg)
{
        kd_create_req_t *r = arg;
        rd_kafka_CreateTopics(rk, r->nts, r->cnt, opt, q);
}

typedef struct kd_describe_req {
        rd_kafka_ConfigResource_t **crs;
        size_t cnt;
} kd_describe_req_t;

static void send_describe(rd_kafka_t *rk, rd_kafka_AdminOptions_t *opt,
                          rd_kafka_queue_t *q, void *arg)
{
        kd_describe_req_t *r = arg;
        rd_kafka_DescribeConfigs(rk, r->crs, r->cnt, opt, q);
}

static int set_cfg(rd_kafka_NewTopic_t *nt, const char *name, const char *value)
{
        return rd_kafka_NewTopic_set_config(nt, name, value) ? -1 : 0;
}

/* Why a topic whose creation was refused for want of the Create ACL is
 * not there: it is looked up alone, which tells a missing topic
 * (UNKNOWN_TOPIC_OR_PART: the principal may Describe it) from one hidden
 * from the principal (TOPIC_AUTHORIZATION_FAILED: whether it exists is
 * not for it to know). The principal may not create topics, so the lookup
 * cannot create one either. Sets r's state and problem. */
static void explain_denied(rd_kafka_t *rk, kd_topic_report_t *r,
                           const char *why)
{
        rd_kafka_resp_err_t merr = RD_KAFKA_RESP_ERR_UNKNOWN;
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, r->name, NULL);
        if (rkt) {
                rd_kafka_resp_err_t e =
                    rd_kafka_metadata(rk, 0, rkt, &md, KD_ADMIN_TIMEOUT_MS);
                merr = e ? e : md->topic_cnt == 1 ? md->topics[0].err : merr;
                if (!e && md->topic_cnt == 1 && !merr)
                        r->partitions = md->topics[0].partition_cnt;
                if (md)
                        rd_kafka_metadata_destroy(md);
                rd_kafka_topic_destroy(rkt);
        }
        r->state = r->needed ? KD_TOPIC_FAILED : KD_TOPIC_SKIPPED;
        /* The broker's reason ("Authorization failed."), without its
         * full stop. */
        int wl = (int)strlen(why);
        if (wl > 0 && why[wl - 1] == '.')
                wl--;
        if (!merr) { /* there after all: made by someone else meanwhile */
                r->state = KD_TOPIC_EXISTS;
                r->problem[0] = '\0';
        } else if (merr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
                snprintf(r->problem, sizeof(r->problem),
                         "%.*s: missing, and this principal lacks ACL Create "
                         "on topic %s (create it with `kdelayctl topics "
                         "create` as a principal that has it)",
                         wl, why, r->name);
        } else if (merr == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
                snprintf(r->problem, sizeof(r->problem),
                         "%.*s: hidden from this principal, which lacks ACL "
                         "Describe on topic %s (and ACL Create on it, to "
                         "create it)",
                         wl, why, r->name);
        } else {
                snprintf(r->problem, sizeof(r->problem),
                         "%.*s: this principal lacks ACL Create on topic %s, "
                         "and the topic's metadata could not be read: %s",
                         wl, why, r->name, rd_kafka_err2str(merr));
        }
        if (!r->needed) {
                size_t off = strlen(r->problem);
                snprintf(r->problem + off, sizeof(r->problem) - off,
                         "; not needed: used only with "
                         "forwarder.fate_outage_policy=fire");
        }
}

/* Applies CreateTopics' answer ev to the reports of the cnt topics asked
 * for (reports[idx[j]]). KDELAY_ERR_KAFKA, with errstr naming the first
 * topic that failed and why, when a needed topic is not there. */
static kdelay_err_t create_results(rd_kafka_t *rk, rd_kafka_event_t *ev,
                                   kd_topic_report_t *reports,
                                   const size_t *idx, size_t cnt, int parts,
                                   char *errstr, size_t errstr_size)
{
        size_t rn;
        const rd_kafka_topic_result_t **res =
            rd_kafka_CreateTopics_result_topics(
                rd_kafka_event_CreateTopics_result(ev), &rn);
        for (size_t k = 0; k < rn; k++) {
                const char *name = rd_kafka_topic_result_name(res[k]);
                rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[k]);
                const char *es = rd_kafka_topic_result_error_string(res[k]);
                for (size_t j = 0; j < cnt; j++) {
                        kd_topic_report_t *r = &reports[idx[j]];
                        if (strcmp(r->name, name))
                                continue;
                        if (!e) {
                                r->state = KD_TOPIC_CREATED;
                                r->partitions = parts;
                        } else if (e ==
                                   RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                                r->state = KD_TOPIC_EXISTS;
                        } else if (
                            e == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
                                explain_denied(rk, r,
                                               es && *es ? es
                                                         : rd_kafka_err2str(e));
                        } else {
                                r->state = KD_TOPIC_FAILED;
                                snprintf(r->problem, sizeof(r->problem), "%s",
                                         es && *es ? es : rd_kafka_err2str(e));
                        }
                }
        }
        size_t failed = 0, first = 0;
        for (size_t j = 0; j < cnt; j++)
                if (reports[idx[j]].state == KD_TOPIC_FAILED && !failed++)
                        first = idx[j];
        if (!failed)
                return KDELAY_OK;
        if (failed == 1)
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "topic %s: %s", reports[first].name,
                               reports[first].problem);
        return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                       "%zu topics could not be created; topic %s: %s", failed,
                       reports[first].name, reports[first].problem);
}

kdelay_err_t kd_topics_create(const kdelay_conf_t *conf, int partitions,
                              int replication_factor,
                              kd_topic_report_t *reports, size_t *np,
                              char *errstr, size_t errstr_size)
{
        kd_rk_owner_t owner = {conf};
        rd_kafka_t *rk = admin_new(&owner, errstr, errstr_size);
        if (!rk)
                return KDELAY_ERR_KAFKA;
        reports_init(conf, reports, np);
        kdelay_err_t err = reports_fill(rk, reports, *np, errstr, errstr_size);
        rd_kafka_NewTopic_t *nts[KD_TOPICS_MAX];
        size_t idx[KD_TOPICS_MAX];
        size_t cnt = 0;
        int parts = partitions > 0 ? partitions : conf->topics_partitions;
        int rf = replication_factor != 0 ? replication_factor
                                         : conf->topics_replication_factor;
        char why[512];

        for (size_t i = 0; !err && i < *np; i++) {
                if (reports[i].state != KD_TOPIC_MISSING)
                        continue;
                rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(
                    reports[i].name, parts, rf, why, sizeof(why));
                if (!nt) {
                        err =
                            kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                                    "topic %s: %s", reports[i].name, why);
                        break;
                }
                char retention[32];
                int64_t ms = reports[i].min_retention_ms < 0
                                 ? conf->dead_retention_ms
                                 : kd_conf_tier_retention_ms(conf, i);
                snprintf(retention, sizeof(retention), "%lld", (long long)ms);
                if (set_cfg(nt, "message.timestamp.type", "LogAppendTime") ||
                    set_cfg(nt, "cleanup.policy", "delete") ||
                    set_cfg(nt, "retention.bytes", "-1") ||
                    set_cfg(nt, "retention.ms", retention)) {
                        rd_kafka_NewTopic_destroy(nt);
                        err = KDELAY_ERR_NO_MEMORY;
                        break;
                }
                idx[cnt] = i;
                nts[cnt++] = nt;
        }
        rd_kafka_event_t *ev = NULL;
        if (!err && cnt > 0) {
                kd_create_req_t req = {nts, cnt};
                err = admin_call(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS,
                                 RD_KAFKA_EVENT_CREATETOPICS_RESULT,
                                 "CreateTopics", send_create, &req, &ev, errstr,
                                 errstr_size);
        }
        if (ev) {
                err = create_results(rk, ev, reports, idx, cnt, parts, errstr,
                                     errstr_size);
                rd_kafka_event_destroy(ev);
        }
        for (size_t j = 0; j < cnt; j++)
                rd_kafka_NewTopic_destroy(nts[j]);
        if (!err && cnt > 0)
                err = wait_visible(rk, reports, *np, errstr, errstr_size);
        rd_kafka_destroy(rk);
        return err;
}

static void problem_add(kd_topic_report_t *r, const char *fmt, ...)
    KD_PRINTF(2, 3);

static void problem_add(kd_topic_report_t *r, const char *fmt, ...)
{
        size_t off = strlen(r->problem);
        if (off && off + 2 < sizeof(r->problem)) {
                memcpy(r->problem + off, "; ", 3);
                off += 2;
        }
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->problem + off, sizeof(r->problem) - off, fmt, ap);
        va_end(ap);
        r->ok = 0;
}

/* Judges one topic's config entries. */
static void judge(kd_topic_report_t *r, const rd_kafka_ConfigResource_t *res)
{
        size_t cn;
        const rd_kafka_ConfigEntry_t **cfg =
            rd_kafka_ConfigResource_configs(res, &cn);
        const char *ts = NULL, *policy = NULL, *rbytes = NULL, *rms = NULL;
        for (size_t i = 0; i < cn; i++) {
                const char *n = rd_kafka_ConfigEntry_name(cfg[i]);
                const char *v = rd_kafka_ConfigEntry_value(cfg[i]);
                if (!strcmp(n, "message.timestamp.type"))
                        ts = v;
                else if (!strcmp(n, "cleanup.policy"))
                        policy = v;
                else if (!strcmp(n, "retention.bytes"))
                        rbytes = v;
                else if (!strcmp(n, "retention.ms"))
                        rms = v;
        }
        r->ok = 1;
        if (r->min_retention_ms >= 0 && (!ts || strcmp(ts, "LogAppendTime")))
                problem_add(r,
                            "message.timestamp.type is %s, must be "
                            "LogAppendTime",
                            ts ? ts : "unknown");
        if (!policy || strcmp(policy, "delete"))
                problem_add(r, "cleanup.policy is %s, must be delete",
                            policy ? policy : "unknown");
        if (!rbytes || strcmp(rbytes, "-1"))
                problem_add(r,
                            "retention.bytes is %s, must be -1 (size-based "
                            "retention can delete pending tasks)",
                            rbytes ? rbytes : "unknown");
        long long ms = rms ? atoll(rms) : 0;
        if (r->min_retention_ms >= 0 && ms != -1 && ms < r->min_retention_ms)
                problem_add(r,
                            "retention.ms is %lld, must be at least %lld "
                            "(tier delay + topics.retention_margin)",
                            ms, (long long)r->min_retention_ms);
}

kdelay_err_t kd_topics_check(const kdelay_conf_t *conf,
                             kd_topic_report_t *reports, size_t *np,
                             char *errstr, size_t errstr_size)
{
        kd_rk_owner_t owner = {conf};
        rd_kafka_t *rk = admin_new(&owner, errstr, errstr_size);
        if (!rk)
                return KDELAY_ERR_KAFKA;
        reports_init(conf, reports, np);
        kdelay_err_t err = reports_fill(rk, reports, *np, errstr, errstr_size);
        rd_kafka_ConfigResource_t *crs[KD_TOPICS_MAX];
        size_t cnt = 0;
        for (size_t i = 0; !err && i < *np; i++) {
                if (reports[i].state == KD_TOPIC_MISSING) {
                        reports[i].ok = !reports[i].needed;
                        kd_strlcpy(reports[i].problem,
                                   reports[i].needed
                                       ? "missing: run `kdelayctl topics "
                                         "create`"
                                       : "missing; needed only with "
                                         "forwarder.fate_outage_policy=fire",
                                   sizeof(reports[i].problem));
                        continue;
                }
                crs[cnt++] = rd_kafka_ConfigResource_new(
                    RD_KAFKA_RESOURCE_TOPIC, reports[i].name);
        }
        rd_kafka_event_t *ev = NULL;
        if (!err && cnt > 0) {
                kd_describe_req_t req = {crs, cnt};
                err = admin_call(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS,
                                 RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT,
                                 "DescribeConfigs", send_describe, &req, &ev,
                                 errstr, errstr_size);
                if (ev) {
                        size_t rn;
                        const rd_kafka_ConfigResource_t **res =
                            rd_kafka_DescribeConfigs_result_resources(
                                rd_kafka_event_DescribeConfigs_result(ev), &rn);
                        for (size_t k = 0; k < rn; k++) {
                                const char *name =
                                    rd_kafka_ConfigResource_name(res[k]);
                                for (size_t i = 0; i < *np; i++) {
                                        if (strcmp(reports[i].name, name))
                                                continue;
                                        if (rd_kafka_ConfigResource_error(
                                                res[k])) {
                                                reports[i].ok = 0;
                                                problem_add(
                                                    &reports[i], "%s",
                                                    rd_kafka_ConfigResource_error_string(
                                                        res[k]));
                                        } else {
                                                judge(&reports[i], res[k]);
                                        }
                                }
                        }
                }
                if (ev)
                        rd_kafka_event_destroy(ev);
        }
        for (size_t j = 0; j < cnt; j++)
                rd_kafka_ConfigResource_destroy(crs[j]);
        rd_kafka_destroy(rk);
        if (!err) {
                for (size_t i = 0; i < *np; i++)
                        if (!reports[i].ok)
                                err = kd_fail(KDELAY_ERR_CONFIG, errstr,
                                              errstr_size,
                                              "some topics are missing or "
                                              "misconfigured");
        }
        return err;
}

/* Whether a cleanup.policy value ("compact", "delete", "compact,delete")
 * includes compact. */
static int policy_compacts(const char *policy)
{
        for (const char *p = policy; *p;) {
                p += strspn(p, ", []");
                size_t len = strcspn(p, ", []");
                if (len == 7 && !strncmp(p, "compact", 7))
                        return 1;
                p += len;
        }
        return 0;
}

/* A described topic's cleanup.policy and max.message.bytes. */
static void target_judge(kd_target_info_t *t,
                         const rd_kafka_ConfigResource_t *res)
{
        size_t cn;
        const rd_kafka_ConfigEntry_t **cfg =
            rd_kafka_ConfigResource_configs(res, &cn);
        const char *policy = NULL, *mmb = NULL;
        for (size_t i = 0; i < cn; i++) {
                const char *name = rd_kafka_ConfigEntry_name(cfg[i]);
                const char *v = rd_kafka_ConfigEntry_value(cfg[i]);
                if (!name)
                        continue;
                if (!strcmp(name, "cleanup.policy"))
                        policy = v;
                else if (!strcmp(name, "max.message.bytes"))
                        mmb = v;
        }
        t->exists = 1; /* the broker described it */
        char *end = NULL;
        errno = 0;
        long long max = mmb ? strtoll(mmb, &end, 10) : -1;
        if (!policy || !mmb || errno || end == mmb || *end || max <= 0) {
                snprintf(t->problem, sizeof(t->problem),
                         "DescribeConfigs gave no usable cleanup.policy and "
                         "max.message.bytes");
                return;
        }
        kd_strlcpy(t->cleanup_policy, policy, sizeof(t->cleanup_policy));
        t->compact = policy_compacts(policy);
        t->max_message_bytes = max;
        t->config_read = 1;
}

/* Applies one DescribeConfigs answer to the entry it names. */
static void target_result(kd_target_info_t *t, size_t n,
                          const rd_kafka_ConfigResource_t *res)
{
        const char *name = rd_kafka_ConfigResource_name(res);
        size_t i = 0;
        while (name && i < n && strcmp(t[i].name, name))
                i++;
        if (!name || i == n)
                return;
        rd_kafka_resp_err_t e = rd_kafka_ConfigResource_error(res);
        const char *es = rd_kafka_ConfigResource_error_string(res);
        if (!e) {
                target_judge(&t[i], res);
        } else if (e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART &&
                   t[i].exists != 1) {
                t[i].exists = 0;
        } else {
                snprintf(t[i].problem, sizeof(t[i].problem),
                         "DescribeConfigs: %s",
                         es && *es ? es : rd_kafka_err2str(e));
        }
}

kdelay_err_t kd_topics_describe_targets(const kdelay_conf_t *conf,
                                        kd_target_info_t *t, size_t n,
                                        char *errstr, size_t errstr_size)
{
        for (size_t i = 0; i < n; i++) {
                t[i].exists = -1;
                t[i].config_read = 0;
                t[i].compact = 0;
                t[i].max_message_bytes = -1;
                t[i].cleanup_policy[0] = '\0';
                t[i].problem[0] = '\0';
        }
        if (!n)
                return KDELAY_OK;
        kd_rk_owner_t owner = {conf};
        rd_kafka_t *rk = admin_new(&owner, errstr, errstr_size);
        if (!rk) {
                for (size_t i = 0; i < n; i++)
                        kd_strlcpy(t[i].problem, errstr, sizeof(t[i].problem));
                return KDELAY_ERR_KAFKA;
        }
        /* Existence: what metadata lists (it hides a topic the principal
         * may not Describe, so absence alone proves nothing). */
        char mdwhy[160] = "";
        const struct rd_kafka_metadata *md;
        rd_kafka_resp_err_t kerr =
            rd_kafka_metadata(rk, 1, NULL, &md, KD_ADMIN_TIMEOUT_MS);
        if (kerr) {
                snprintf(mdwhy, sizeof(mdwhy),
                         "cannot read cluster metadata: %s",
                         rd_kafka_err2str(kerr));
        } else {
                for (size_t i = 0; i < n; i++)
                        for (int k = 0; k < md->topic_cnt; k++)
                                if (!md->topics[k].err &&
                                    !strcmp(md->topics[k].topic, t[i].name))
                                        t[i].exists = 1;
                rd_kafka_metadata_destroy(md);
        }
        /* Configurations, and existence from the broker's answer: a topic
         * it does not know is UNKNOWN_TOPIC_OR_PART when the principal may
         * describe its configuration, TOPIC_AUTHORIZATION_FAILED when not
         * (whether it exists or not). */
        char dwhy[256] = "";
        rd_kafka_ConfigResource_t **crs = calloc(n, sizeof(*crs));
        size_t cnt = 0;
        if (!crs)
                kd_strlcpy(dwhy, "out of memory", sizeof(dwhy));
        for (size_t i = 0; crs && i < n; i++, cnt++)
                if (!(crs[i] = rd_kafka_ConfigResource_new(
                          RD_KAFKA_RESOURCE_TOPIC, t[i].name))) {
                        kd_strlcpy(dwhy, "out of memory", sizeof(dwhy));
                        break;
                }
        rd_kafka_event_t *ev = NULL;
        if (crs && cnt == n) {
                kd_describe_req_t req = {crs, cnt};
                admin_call(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS,
                           RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT,
                           "DescribeConfigs", send_describe, &req, &ev, dwhy,
                           sizeof(dwhy));
        }
        if (ev) {
                size_t rn;
                const rd_kafka_ConfigResource_t **res =
                    rd_kafka_DescribeConfigs_result_resources(
                        rd_kafka_event_DescribeConfigs_result(ev), &rn);
                for (size_t k = 0; k < rn; k++)
                        target_result(t, n, res[k]);
                rd_kafka_event_destroy(ev);
        }
        for (size_t i = 0; i < n; i++) {
                kd_target_info_t *ti = &t[i];
                if (ti->config_read || ti->exists == 0 || ti->problem[0])
                        continue;
                snprintf(ti->problem, sizeof(ti->problem), "%s",
                         dwhy[0] ? dwhy : "not in the DescribeConfigs answer");
        }
        for (size_t i = 0; mdwhy[0] && i < n; i++) {
                size_t off = strlen(t[i].problem);
                if (t[i].exists == -1 && off + 3 < sizeof(t[i].problem))
                        snprintf(t[i].problem + off, sizeof(t[i].problem) - off,
                                 "%s%s", off ? "; " : "", mdwhy);
        }
        for (size_t j = 0; crs && j < cnt; j++)
                rd_kafka_ConfigResource_destroy(crs[j]);
        free(crs);
        rd_kafka_destroy(rk);
        return KDELAY_OK;
}
