/* SPDX-License-Identifier: Apache-2.0 */
/* Retries of consumed records through the application's producer
 * (kdelay/retry.h): the record again as a task, or a dead letter. */
#include <kdelay/retry.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_record.h"
#include "kd_util.h"
#include "kd_wire.h"

/* What the consumed record says of its earlier failures. */
typedef struct retry_state {
        int failures;        /* kdelay-attempt, 0 when absent */
        char topic[256];     /* original topic */
        int32_t partition;   /* original partition */
        int64_t offset;      /* original offset */
        const char *history; /* kdelay-failures (borrowed from msg), or "" */
        size_t history_len;
        const char *bad; /* NULL, or the header that is malformed */
} retry_state_t;

/* The user's headers of msg (borrowed), every kdelay-* header left out. */
typedef struct user_headers {
        kdelay_header_t *v; /* owned array */
        size_t cnt;
} user_headers_t;

void kdelay_retry_policy_init(kdelay_retry_policy_t *policy)
{
        if (!policy)
                return;
        memset(policy, 0, sizeof(*policy));
        policy->backoff_initial_ms = 1000;
        policy->backoff_max_ms = 3600 * 1000;
        policy->multiplier = 2.0;
        policy->jitter = 0.2;
        policy->max_attempts = 5;
}

static kdelay_err_t policy_check(const kdelay_retry_policy_t *p, char *errstr,
                                 size_t errstr_size)
{
        const char *why = NULL;
        if (!p)
                why = "a policy is required";
        else if (!p->dead_topic ||
                 !kd_wire_topic_valid(p->dead_topic, strlen(p->dead_topic)))
                why = "policy dead_topic must be a valid topic name";
        else if (p->retry_topic &&
                 !kd_wire_topic_valid(p->retry_topic, strlen(p->retry_topic)))
                why = "policy retry_topic is not a valid topic name";
        else if (p->backoff_initial_ms < 0 ||
                 p->backoff_max_ms < p->backoff_initial_ms ||
                 p->backoff_max_ms > KDELAY_MAX_DELAY_MS)
                why = "policy backoff: 0 <= initial <= max <= 10 years";
        else if (!(p->multiplier >= 1.0 && p->multiplier <= 1000.0))
                why = "policy multiplier must be in 1 .. 1000";
        else if (!(p->jitter >= 0.0 && p->jitter <= 1.0))
                why = "policy jitter must be in 0 .. 1";
        else if (p->max_attempts < 1 ||
                 p->max_attempts > KDELAY_RETRY_ATTEMPTS_MAX)
                why = "policy max_attempts must be in 1 .. 100";
        return why ? kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size, "%s",
                             why)
                   : KDELAY_OK;
}

/* Decimal digits only, 0 .. max; -1 otherwise. */
static int64_t digits(const void *v, size_t len, int64_t max)
{
        const char *s = v;
        int64_t n = 0;
        if (!v || !len || len > 19)
                return -1;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                n = n * 10 + (s[i] - '0');
        }
        return n <= max ? n : -1;
}

/* The last value of header name, or NULL. */
static const void *header(rd_kafka_headers_t *h, const char *name, size_t *lenp)
{
        const void *v = NULL;
        *lenp = 0;
        if (!h || rd_kafka_header_get_last(h, name, &v, lenp))
                return NULL;
        return v ? v : "";
}

static void state_read(const rd_kafka_message_t *msg, retry_state_t *st)
{
        rd_kafka_headers_t *h = NULL;
        memset(st, 0, sizeof(*st));
        st->history = "";
        kd_strlcpy(st->topic, rd_kafka_topic_name(msg->rkt), sizeof(st->topic));
        st->partition = msg->partition;
        st->offset = msg->offset;
        if (rd_kafka_message_headers(msg, &h) || !h)
                return;
        size_t len;
        const void *v = header(h, KDELAY_HDR_ATTEMPT, &len);
        if (!v)
                return; /* a first failure: the rest is this record's */
        int64_t n = digits(v, len, 1000000);
        const void *t = header(h, KDELAY_HDR_ORIG_TOPIC, &len);
        size_t tlen = len;
        const void *p = header(h, KDELAY_HDR_ORIG_PARTITION, &len);
        int64_t part = digits(p, len, INT32_MAX);
        const void *o = header(h, KDELAY_HDR_ORIG_OFFSET, &len);
        int64_t off = digits(o, len, INT64_MAX);
        if (n < 1)
                st->bad = KDELAY_HDR_ATTEMPT;
        else if (!t || !kd_wire_topic_valid((const char *)t, tlen))
                st->bad = KDELAY_HDR_ORIG_TOPIC;
        else if (part < 0)
                st->bad = KDELAY_HDR_ORIG_PARTITION;
        else if (off < 0)
                st->bad = KDELAY_HDR_ORIG_OFFSET;
        if (st->bad)
                return;
        st->failures = (int)n;
        memcpy(st->topic, t, tlen);
        st->topic[tlen] = '\0';
        st->partition = (int32_t)part;
        st->offset = off;
        const void *hist = header(h, KDELAY_HDR_FAILURES, &len);
        if (hist) {
                st->history = hist;
                st->history_len = len;
        }
}

static kdelay_err_t user_headers(const rd_kafka_message_t *msg,
                                 user_headers_t *u, char *errstr,
                                 size_t errstr_size)
{
        rd_kafka_headers_t *h = NULL;
        memset(u, 0, sizeof(*u));
        if (rd_kafka_message_headers(msg, &h) || !h)
                return KDELAY_OK;
        size_t n = rd_kafka_header_cnt(h);
        if (!n)
                return KDELAY_OK;
        if (!(u->v = calloc(n, sizeof(*u->v))))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        const char *name;
        const void *val;
        size_t size;
        for (size_t i = 0; !rd_kafka_header_get_all(h, i, &name, &val, &size);
             i++) {
                if (!kd_wire_user_header_valid(name))
                        continue; /* kdelay's: set anew below */
                u->v[u->cnt].name = name;
                u->v[u->cnt].value = val;
                u->v[u->cnt].value_len = val ? size : 0;
                u->cnt++;
        }
        return KDELAY_OK;
}

/* The history with this failure appended: "attempt=N failed_at=MS
 * reason=TEXT", lines oldest first. Caller frees. */
static char *history_add(const retry_state_t *st, int attempt, int64_t now,
                         const char *reason)
{
        char why[KDELAY_RETRY_REASON_MAX + 1];
        size_t n = 0;
        for (const char *r = reason ? reason : ""; *r && n < sizeof(why) - 1;
             r++)
                why[n++] = ((unsigned char)*r < 0x20 || *r == 0x7f) ? ' ' : *r;
        why[n] = '\0';
        size_t cap = st->history_len + sizeof(why) + 80;
        char *s = malloc(cap);
        if (!s)
                return NULL;
        snprintf(s, cap, "%.*s%sattempt=%d failed_at=%lld reason=%s",
                 (int)st->history_len, st->history, st->history_len ? "\n" : "",
                 attempt, (long long)now, why);
        return s;
}

static int add_retry_headers(rd_kafka_headers_t *h, const retry_state_t *st,
                             int attempt, const char *history)
{
        char a[16], p[16], o[24];
        snprintf(a, sizeof(a), "%d", attempt);
        snprintf(p, sizeof(p), "%ld", (long)st->partition);
        snprintf(o, sizeof(o), "%lld", (long long)st->offset);
        return rd_kafka_header_add(h, KDELAY_HDR_ATTEMPT, -1, a, -1) ||
               rd_kafka_header_add(h, KDELAY_HDR_ORIG_TOPIC, -1, st->topic,
                                   -1) ||
               rd_kafka_header_add(h, KDELAY_HDR_ORIG_PARTITION, -1, p, -1) ||
               rd_kafka_header_add(h, KDELAY_HDR_ORIG_OFFSET, -1, o, -1) ||
               rd_kafka_header_add(h, KDELAY_HDR_FAILURES, -1, history, -1);
}

/* A well-mixed 64-bit value (splitmix64) for the jitter: not a secret,
 * only spread. */
static uint64_t mix(uint64_t x)
{
        x += 0x9e3779b97f4a7c15ULL;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        return x ^ (x >> 31);
}

static int64_t backoff(const kdelay_retry_policy_t *p, int attempt,
                       uint64_t seed)
{
        double d = (double)p->backoff_initial_ms *
                   pow(p->multiplier, (double)(attempt - 1));
        if (!(d <= (double)p->backoff_max_ms))
                d = (double)p->backoff_max_ms;
        double u = (double)(mix(seed) >> 11) / 9007199254740992.0; /* [0,1) */
        return (int64_t)(d - p->jitter * d * u);
}

/* The retry's id: the original record, the attempt and (when not the
 * original topic) the retry topic, so that a retry written twice (no
 * transaction, a crash before the offset commit) fires once. Hashed
 * when too long for an id. */
static void retry_id(const retry_state_t *st, int attempt, const char *target,
                     char *id, size_t size)
{
        /* Two topic names, three numbers and the separators: always fits. */
        char full[2 * 256 + 64];
        int same = !strcmp(target, st->topic);
        int n = snprintf(full, sizeof(full), "retry:%s:%ld:%lld:%d%s%s",
                         st->topic, (long)st->partition, (long long)st->offset,
                         attempt, same ? "" : ":", same ? "" : target);
        if (n > 0 && (size_t)n <= KDELAY_ID_MAX) {
                kd_strlcpy(id, full, size);
                return;
        }
        uint64_t h = 14695981039346656037ULL; /* FNV-1a 64 of the long form */
        for (const char *s = full; *s; s++)
                h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        snprintf(id, size, "retry:%.64s:%016llx:%d", st->topic,
                 (unsigned long long)h, attempt);
}

static kdelay_err_t
dead_letter(rd_kafka_t *rk, const rd_kafka_message_t *msg,
            const kdelay_retry_policy_t *p, const user_headers_t *u,
            const retry_state_t *st, int attempt, const char *history,
            const char *why, void *msg_opaque, char *errstr, size_t errstr_size)
{
        rd_kafka_headers_t *h = rd_kafka_headers_new(u->cnt + 6);
        if (!h)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        int bad = 0;
        for (size_t i = 0; i < u->cnt; i++)
                bad |= !!rd_kafka_header_add(h, u->v[i].name, -1, u->v[i].value,
                                             (ssize_t)u->v[i].value_len);
        bad |= add_retry_headers(h, st, attempt, history);
        bad |= !!rd_kafka_header_add(h, KDELAY_HDR_DEAD_REASON, -1, why, -1);
        if (bad) {
                rd_kafka_headers_destroy(h);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        }
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(p->dead_topic),
            RD_KAFKA_V_KEY(msg->key, msg->key_len),
            RD_KAFKA_V_VALUE(msg->payload, msg->len), RD_KAFKA_V_HEADERS(h),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_OPAQUE(msg_opaque), RD_KAFKA_V_END);
        if (err) {
                rd_kafka_headers_destroy(h);
                return kd_fail(err == RD_KAFKA_RESP_ERR__QUEUE_FULL
                                   ? KDELAY_ERR_QUEUE_FULL
                                   : KDELAY_ERR_KAFKA,
                               errstr, errstr_size, "dead letter to \"%s\": %s",
                               p->dead_topic, rd_kafka_err2str(err));
        }
        return KDELAY_OK;
}

kdelay_err_t kdelay_retry(rd_kafka_t *rk, const kdelay_conf_t *conf,
                          const rd_kafka_message_t *msg,
                          const kdelay_retry_policy_t *policy,
                          const char *reason, void *msg_opaque,
                          kdelay_retry_result_t *result, char *errstr,
                          size_t errstr_size)
{
        kdelay_retry_result_t res_local, *res = result ? result : &res_local;
        memset(res, 0, sizeof(*res));
        kdelay_err_t err = policy_check(policy, errstr, errstr_size);
        if (err)
                return err;
        if (!rk || !conf || !msg || msg->err || !msg->rkt)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "a producer, a conf and a consumed record "
                               "without error are required");
        retry_state_t st;
        state_read(msg, &st);
        user_headers_t u;
        if ((err = user_headers(msg, &u, errstr, errstr_size)))
                return err;
        int64_t now = kd_now_ms();
        /* A malformed retry header (another producer's) harms only its
         * record: it goes to the dead-letter topic, saying which. */
        int attempt = st.bad ? 1 : st.failures + 1;
        char *history = history_add(&st, attempt, now, reason);
        if (!history) {
                free(u.v);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        }
        res->attempt = attempt;
        if (st.bad || attempt > policy->max_attempts) {
                char why[80];
                snprintf(why, sizeof(why), "%s%s",
                         st.bad ? "bad-retry-header " : "",
                         st.bad ? st.bad : KDELAY_DEAD_RETRIES_EXHAUSTED);
                err = dead_letter(rk, msg, policy, &u, &st, attempt, history,
                                  why, msg_opaque, errstr, errstr_size);
                if (!err) {
                        res->outcome = KDELAY_RETRY_DEAD;
                        kd_strlcpy(res->topic, policy->dead_topic,
                                   sizeof(res->topic));
                }
                free(history);
                free(u.v);
                return err;
        }
        const char *target =
            policy->retry_topic ? policy->retry_topic : st.topic;
        char id[KDELAY_ID_MAX + 64];
        retry_id(&st, attempt, target, id, sizeof(id));
        kdelay_task_t task;
        kdelay_task_init(&task);
        task.topic = target;
        task.id = id;
        task.key = msg->key;
        task.key_len = msg->key_len;
        task.value = msg->payload;
        task.value_len = msg->len;
        task.headers = u.v;
        task.header_cnt = u.cnt;
        task.fire_at_ms =
            now + backoff(policy, attempt,
                          (uint64_t)now ^ (uint64_t)msg->offset * 31 ^
                              (uint64_t)(uintptr_t)msg);
        kd_record_t rec;
        err = kd_record_make(conf, &task, 1, sizeof(res->task_id), &rec, errstr,
                             errstr_size);
        if (!err && add_retry_headers(rec.hdrs, &st, attempt, history)) {
                kd_record_clear(&rec);
                err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                              "out of memory");
        }
        if (!err)
                err = kd_record_produce(rk, &rec, &task, msg_opaque, conf,
                                        "retry", errstr, errstr_size);
        if (!err) {
                res->outcome = KDELAY_RETRY_SCHEDULED;
                res->fire_at_ms = rec.fire_at_ms;
                kd_strlcpy(res->task_id, rec.id, sizeof(res->task_id));
                kd_strlcpy(res->topic, rec.topic, sizeof(res->topic));
        }
        free(history);
        free(u.v);
        return err;
}
