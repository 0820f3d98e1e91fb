/* SPDX-License-Identifier: Apache-2.0 */
/* Reconciliation after a fate-store outage (kd_reconcile.h): one thread
 * per run, its own consumer and fate store. */
#include "kd_reconcile.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kd_fate.h"
#include "kd_grouppos.h"
#include "kd_journal_rec.h"
#include "kd_log.h"
#include "kd_util.h"

/* Records applied per batch (four statements). */
#define KD_RECONCILE_BATCH 500
/* Kafka calls of the thread: metadata, committed offsets, watermarks
 * (each; a stop waits for at most one of them). */
#define KD_RECONCILE_KAFKA_MS 5000
/* A failed apply is tried again after a backoff up to this. */
#define KD_RECONCILE_BACKOFF_MAX_MS 5000

struct kd_reconcile {
        const kdelay_conf_t *conf; /* borrowed */
        const char *by;            /* borrowed: the instance */
        kd_rk_owner_t owner;       /* the consumer's opaque */
        kd_fate_store_t *store;    /* owned; used by the thread */
        pthread_t thread;
        atomic_int stop;     /* the loop asks the thread to end */
        atomic_int finished; /* the thread is done */
        pthread_mutex_t lock;
        kd_reconcile_stats_t st; /* guarded by lock */
        kdelay_err_t err;        /* the thread's answer */
        char errstr[256];
};

/* One run's reading state (the thread's own). */
typedef struct run {
        kd_reconcile_t *r;
        rd_kafka_t *rk;                       /* owned */
        rd_kafka_topic_partition_list_t *pos; /* owned: next offset each */
        int64_t *end;                         /* owned: target per partition */
        rd_kafka_message_t *msgs[KD_RECONCILE_BATCH]; /* owned, in items */
        kd_journal_rec_t recs[KD_RECONCILE_BATCH];
        kd_fate_unclaimed_t items[KD_RECONCILE_BATCH];
        size_t n;
        int gone; /* the journal topic does not exist */
        char topic[256];
} run_t;

static int stopping(const kd_reconcile_t *r)
{
        return atomic_load(&r->stop);
}

static kdelay_err_t run_fail(run_t *u, kdelay_err_t err, const char *what,
                             const char *why)
{
        return kd_fail(err, u->r->errstr, sizeof(u->r->errstr), "%s: %s", what,
                       why);
}

static kdelay_err_t open_consumer(run_t *u)
{
        char group[300], err[256];
        snprintf(group, sizeof(group), "%s.journal", u->r->conf->fwd_group_id);
        u->rk = kd_group_reader(&u->r->owner, group, err, sizeof(err));
        return u->rk ? KDELAY_OK
                     : run_fail(u, KDELAY_ERR_KAFKA, "journal consumer", err);
}

/* The journal's partitions, where the group stands in each, and the ends
 * to read to. */
static kdelay_err_t find_ends(run_t *u, int64_t *lag)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(u->rk, u->topic, NULL);
        if (!rkt)
                return run_fail(u, KDELAY_ERR_NO_MEMORY, "journal", "topic");
        rd_kafka_resp_err_t e =
            rd_kafka_metadata(u->rk, 0, rkt, &md, KD_RECONCILE_KAFKA_MS);
        rd_kafka_topic_destroy(rkt);
        if (e)
                return run_fail(u, KDELAY_ERR_KAFKA, "journal metadata",
                                rd_kafka_err2str(e));
        int parts = md->topic_cnt == 1 && !md->topics[0].err
                        ? md->topics[0].partition_cnt
                        : -1;
        e = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR__FAIL;
        rd_kafka_metadata_destroy(md);
        if (e == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                return run_fail(u, KDELAY_ERR_KAFKA, "journal topic",
                                "hidden from this principal (no ACL Describe "
                                "and Read on it: docs/security.md)");
        if (e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
                /* No topic, no record to apply: the fires of a journal
                 * deleted are applied from memory by the forwarders that
                 * made them (settle.c), or lost with those gone. */
                *lag = 0;
                u->gone = 1;
                return KDELAY_OK;
        }
        if (parts <= 0)
                return run_fail(u, KDELAY_ERR_KAFKA, "journal topic",
                                e ? rd_kafka_err2str(e) : "no partitions");
        u->pos = rd_kafka_topic_partition_list_new(parts);
        u->end = calloc((size_t)parts, sizeof(*u->end));
        if (!u->pos || !u->end)
                return run_fail(u, KDELAY_ERR_NO_MEMORY, "journal", "offsets");
        for (int p = 0; p < parts; p++)
                rd_kafka_topic_partition_list_add(u->pos, u->topic, p);
        if (stopping(u->r))
                return run_fail(u, KDELAY_ERR_KAFKA, "journal", "stopped");
        e = rd_kafka_committed(u->rk, u->pos, KD_RECONCILE_KAFKA_MS);
        if (e)
                return run_fail(u, KDELAY_ERR_KAFKA,
                                "journal committed offsets",
                                rd_kafka_err2str(e));
        *lag = 0;
        for (int p = 0; p < parts; p++) {
                int64_t lo = 0, hi = 0;
                if (stopping(u->r))
                        return run_fail(u, KDELAY_ERR_KAFKA, "journal",
                                        "stopped");
                rd_kafka_topic_partition_t *tp = &u->pos->elems[p];
                e = rd_kafka_query_watermark_offsets(
                    u->rk, u->topic, p, &lo, &hi, KD_RECONCILE_KAFKA_MS);
                if (e)
                        return run_fail(u, KDELAY_ERR_KAFKA,
                                        "journal watermarks",
                                        rd_kafka_err2str(e));
                /* None committed, gone by retention, or past the end: the
                 * topic was made again since (read it all). */
                if (tp->offset < lo || tp->offset > hi)
                        tp->offset = lo;
                u->end[p] = hi;
                if (hi > tp->offset)
                        *lag += hi - tp->offset;
        }
        return KDELAY_OK;
}

static int all_read(const run_t *u)
{
        for (int p = 0; p < u->pos->cnt; p++)
                if (u->pos->elems[p].offset < u->end[p])
                        return 0;
        return 1;
}

static void add_stats(kd_reconcile_t *r, const kd_reconcile_stats_t *d)
{
        pthread_mutex_lock(&r->lock);
        r->st.records += d->records;
        r->st.applied += d->applied;
        r->st.recorded += d->recorded;
        r->st.after_cancel += d->after_cancel;
        r->st.intents += d->intents;
        r->st.unconfirmed += d->unconfirmed;
        r->st.malformed += d->malformed;
        r->st.end_lag = d->end_lag;
        if (d->schema)
                r->st.schema = d->schema;
        if (d->read) {
                r->st.read = 1; /* the caller keeps what the mark said */
                r->st.pending = d->pending;
                r->st.epoch = d->epoch;
                r->st.marked = d->marked;
                r->st.pending_since_ms = d->pending_since_ms;
                r->st.marked_age_ms = d->marked_age_ms;
                r->st.journal_gone = d->journal_gone;
        }
        pthread_mutex_unlock(&r->lock);
}

void kd_reconcile_log_after_cancel(const kdelay_conf_t *conf,
                                   const kd_fate_unclaimed_t *it, int delivered)
{
        const char *when =
            kd_unclaimed_cancel_when(it->cancelled_at_ms, it->fired_at_ms);
        int after = when && !strcmp(when, "after_fire");
        char q[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)];
        char qf[KD_LOG_QUOTED_MAX(KD_FATE_OWNER_MAX)];
        kd_log_quote_mem(it->id, it->id_len, q, sizeof(q));
        kd_log(conf, KDELAY_LOG_WARNING,
               "event=fired_after_cancel id=%s delivered=%s fire_at_ms=%lld "
               "fired_at_ms=%lld cancelled_at_ms=%lld cancelled=%s "
               "forwarder=%s reason=\"%s%s\"",
               q, delivered ? "yes" : "maybe", (long long)it->fire_at_ms,
               (long long)it->fired_at_ms, (long long)it->cancelled_at_ms,
               when ? when : "-",
               kd_log_quote(it->forwarder ? it->forwarder : "", qf, sizeof(qf)),
               after ? "fired without a claim through a fate-store outage "
                       "(fate_outage_policy=fire), then cancelled after MySQL "
                       "answered again and before the reconciliation was "
                       "marked pending: the cancel answered OK for a task "
                       "already fired; "
                     : "cancelled, then fired without a claim through a "
                       "fate-store outage (fate_outage_policy=fire); ",
               !delivered ? "its forwarder stopped before recording the "
                            "delivery: treat it as delivered"
                          : "delivered");
}

/* 1 unless an item before i in the batch has i's id (a journal names a
 * task twice: its intent and its delivery record, both recorded by the
 * same application). */
static int first_of_id(const run_t *u, size_t i)
{
        const kd_fate_unclaimed_t *a = &u->items[i];
        for (size_t j = 0; j < i; j++)
                if (u->items[j].id_len == a->id_len &&
                    !memcmp(u->items[j].id, a->id, a->id_len))
                        return 0;
        return 1;
}

/* 1 when the batch holds a delivery record of item i's task. */
static int delivery_in_batch(const run_t *u, size_t i)
{
        const kd_fate_unclaimed_t *a = &u->items[i];
        for (size_t j = 0; j < u->n; j++)
                if (!u->items[j].intent && u->items[j].id_len == a->id_len &&
                    !memcmp(u->items[j].id, a->id, a->id_len))
                        return 1;
        return 0;
}

/* Intents of the batch without a delivery record after them (the same
 * key goes to the same partition, in order): fires that may have been
 * delivered. An intent whose delivery record falls in a later batch is
 * counted too: an upper bound. */
static uint64_t unconfirmed(const run_t *u)
{
        uint64_t n = 0;
        for (size_t i = 0; i < u->n; i++) {
                const kd_fate_unclaimed_t *a = &u->items[i];
                if (!a->intent)
                        continue;
                size_t j = i + 1;
                for (; j < u->n; j++) {
                        const kd_fate_unclaimed_t *b = &u->items[j];
                        if (!b->intent && a->id_len == b->id_len &&
                            !memcmp(a->id, b->id, a->id_len))
                                break;
                }
                n += j == u->n;
        }
        return n;
}

/* Applies the batch (again and again until it goes or the run stops),
 * then commits the offsets read. */
static kdelay_err_t flush(run_t *u, kd_reconcile_stats_t *d)
{
        kd_reconcile_t *r = u->r;
        int64_t backoff = 100;
        kdelay_err_t err = KDELAY_OK;
        char errstr[256];
        while (u->n > 0 && !stopping(r)) {
                err = kd_fate_apply_unclaimed(r->store, u->items, u->n, errstr,
                                              sizeof(errstr));
                if (!err)
                        break;
                char q[300];
                kd_log(r->conf, KDELAY_LOG_WARNING,
                       "event=journal_apply_failed records=%zu err=%s "
                       "retry_in_ms=%lld",
                       u->n, kd_log_quote(errstr, q, sizeof(q)),
                       (long long)backoff);
                kd_sleep_ms(backoff);
                backoff = backoff * 2 > KD_RECONCILE_BACKOFF_MAX_MS
                              ? KD_RECONCILE_BACKOFF_MAX_MS
                              : backoff * 2;
        }
        if (stopping(r))
                return run_fail(u, KDELAY_ERR_MYSQL, "journal", "stopped");
        d->unconfirmed += unconfirmed(u);
        for (size_t i = 0; i < u->n; i++) {
                kd_fate_unclaimed_t *it = &u->items[i];
                d->applied++;
                d->intents += (uint64_t)it->intent;
                if (it->recorded && first_of_id(u, i)) {
                        d->recorded++;
                        if (!it->dead_reason &&
                            it->prior == KD_PRIOR_CANCELLED) {
                                d->after_cancel++;
                                kd_reconcile_log_after_cancel(
                                    r->conf, it, delivery_in_batch(u, i));
                        }
                }
        }
        for (size_t i = 0; i < u->n; i++)
                rd_kafka_message_destroy(u->msgs[i]);
        u->n = 0;
        rd_kafka_resp_err_t e = rd_kafka_commit(u->rk, u->pos, 0);
        if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
                kd_log(r->conf, KDELAY_LOG_WARNING,
                       "event=journal_commit_failed err=\"%s\" "
                       "action=apply_again_next_run",
                       rd_kafka_err2str(e));
        add_stats(r, d);
        memset(d, 0, sizeof(*d));
        return err;
}

/* Takes message m (a journal record, or an end of partition). */
static void take(run_t *u, rd_kafka_message_t *m, kd_reconcile_stats_t *d)
{
        rd_kafka_topic_partition_t *tp =
            m->partition >= 0 && m->partition < u->pos->cnt
                ? &u->pos->elems[m->partition]
                : NULL;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                if (tp && m->offset > tp->offset)
                        tp->offset = m->offset;
                if (tp && tp->offset < u->end[m->partition])
                        u->end[m->partition] = tp->offset; /* records gone */
                rd_kafka_message_destroy(m);
                return;
        }
        if (m->err || !tp) {
                kd_log(u->r->conf, KDELAY_LOG_WARNING,
                       "event=journal_read_failed err=\"%s\"",
                       rd_kafka_err2str(m->err));
                rd_kafka_message_destroy(m);
                return;
        }
        tp->offset = m->offset + 1;
        d->records++;
        kd_journal_rec_t *rec = &u->recs[u->n];
        if (!m->key || m->key_len == 0 || m->key_len > KDELAY_ID_MAX ||
            kd_journal_rec_parse(m->payload, m->len, rec)) {
                if (d->malformed++ == 0)
                        kd_log(u->r->conf, KDELAY_LOG_WARNING,
                               "event=journal_record_malformed partition=%d "
                               "offset=%lld action=skip",
                               (int)m->partition, (long long)m->offset);
                rd_kafka_message_destroy(m);
                return;
        }
        kd_fate_unclaimed_t *it = &u->items[u->n];
        memset(it, 0, sizeof(*it));
        it->id = m->key;
        it->id_len = m->key_len;
        it->fire_at_ms = rec->fire_at_ms;
        it->fired_at_ms = rec->fired_at_ms;
        it->forwarder = rec->forwarder;
        it->src_topic = rec->src_topic;
        it->src_partition = rec->src_partition;
        it->src_offset = rec->src_offset;
        it->dead_reason = rec->dead[0] ? rec->dead : NULL;
        it->intent = rec->intent;
        u->msgs[u->n++] = m;
}

/* The journal's marker, read before the ends (*p); after them, with
 * records to apply and no mark, marked and read again. */
static kdelay_err_t marker(run_t *u, kd_fate_pending_t *p, int after_ends,
                           int64_t lag, kd_reconcile_stats_t *d)
{
        kd_reconcile_t *r = u->r;
        char errstr[256];
        kdelay_err_t err = KDELAY_OK;
        if (after_ends && lag > 0 && p->since_ms < 0) {
                err = kd_fate_pending_mark(r->store, u->topic, r->by, errstr,
                                           sizeof(errstr));
                d->marked = !err;
        }
        if (!err && (!after_ends || d->marked))
                err = kd_fate_pending_get(r->store, u->topic, p, errstr,
                                          sizeof(errstr));
        if (err)
                return run_fail(u, err, "journal reconciliation marker",
                                errstr);
        d->pending = p->since_ms >= 0;
        d->pending_since_ms = p->since_ms;
        d->marked_age_ms = p->marked_age_ms;
        d->epoch = p->epoch;
        d->journal_gone = u->gone;
        d->read = 1;
        return KDELAY_OK;
}

static kdelay_err_t run_body(run_t *u)
{
        kd_reconcile_t *r = u->r;
        kd_reconcile_stats_t d = {0};
        kd_fate_pending_t p;
        int64_t lag = 0;
        char errstr[256];
        /* First, whatever the journal holds: the loop switches its way of
         * marking on it (forwarder.fate_marks=auto). */
        kdelay_err_t err =
            kd_fate_schema_version(r->store, &d.schema, errstr, sizeof(errstr));
        if (err)
                return run_fail(u, err, "schema version", errstr);
        add_stats(r, &d);
        d.schema = 0;
        err = open_consumer(u);
        if (!err)
                err = marker(u, &p, 0, 0, &d);
        if (!err)
                err = find_ends(u, &lag);
        if (err && d.read)
                add_stats(r, &d); /* the mark as read: what cancels see */
        if (!err)
                err = marker(u, &p, 1, lag, &d);
        if (err)
                return err;
        d.end_lag = lag;
        add_stats(r, &d);
        d.end_lag = 0;
        d.read = 0;
        if (lag == 0)
                return KDELAY_OK;
        rd_kafka_resp_err_t e = rd_kafka_assign(u->rk, u->pos);
        if (e)
                return run_fail(u, KDELAY_ERR_KAFKA, "journal assign",
                                rd_kafka_err2str(e));
        while (!stopping(r) && !all_read(u)) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(u->rk, 100);
                if (m)
                        take(u, m, &d);
                if (u->n == KD_RECONCILE_BATCH || (!m && u->n > 0) ||
                    all_read(u))
                        if ((err = flush(u, &d)))
                                return err;
        }
        if (!err && u->n > 0)
                err = flush(u, &d);
        if (!err && d.malformed)
                add_stats(r, &d); /* a run of malformed records only */
        return stopping(r) && !all_read(u)
                   ? run_fail(u, KDELAY_ERR_KAFKA, "journal", "stopped")
                   : err;
}

static void *run_thread(void *arg)
{
        kd_reconcile_t *r = arg;
        run_t *u = calloc(1, sizeof(*u));
        kdelay_err_t err;
        if (!u) {
                err = kd_fail(KDELAY_ERR_NO_MEMORY, r->errstr,
                              sizeof(r->errstr), "out of memory");
        } else {
                u->r = r;
                kd_conf_journal_topic(r->conf, u->topic, sizeof(u->topic));
                err = run_body(u);
                for (size_t i = 0; i < u->n; i++)
                        rd_kafka_message_destroy(u->msgs[i]);
                if (u->rk) {
                        rd_kafka_consumer_close(u->rk);
                        rd_kafka_destroy(u->rk);
                }
                if (u->pos)
                        rd_kafka_topic_partition_list_destroy(u->pos);
                free(u->end);
                free(u);
        }
        pthread_mutex_lock(&r->lock);
        r->err = err;
        pthread_mutex_unlock(&r->lock);
        atomic_store(&r->finished, 1);
        return NULL;
}

kdelay_err_t kd_reconcile_start(kd_reconcile_t **rp, const kdelay_conf_t *conf,
                                const char *by)
{
        kd_reconcile_t *r = calloc(1, sizeof(*r));
        if (!r)
                return KDELAY_ERR_NO_MEMORY;
        r->conf = conf;
        r->by = by;
        r->owner.conf = conf;
        kdelay_err_t err = kd_fate_store_new(&r->store, conf);
        if (err) {
                free(r);
                return err;
        }
        if (pthread_mutex_init(&r->lock, NULL)) {
                kd_fate_store_destroy(r->store);
                free(r);
                return KDELAY_ERR_SYSTEM;
        }
        if (pthread_create(&r->thread, NULL, run_thread, r)) {
                pthread_mutex_destroy(&r->lock);
                kd_fate_store_destroy(r->store);
                free(r);
                return KDELAY_ERR_SYSTEM;
        }
        *rp = r;
        return KDELAY_OK;
}

void kd_reconcile_progress(kd_reconcile_t *r, kd_reconcile_stats_t *st)
{
        pthread_mutex_lock(&r->lock);
        *st = r->st;
        pthread_mutex_unlock(&r->lock);
}

int kd_reconcile_finished(kd_reconcile_t *r)
{
        return atomic_load(&r->finished);
}

kdelay_err_t kd_reconcile_end(kd_reconcile_t *r, kd_reconcile_stats_t *st,
                              char *errstr, size_t errstr_size)
{
        atomic_store(&r->stop, 1);
        if (!atomic_load(&r->finished))
                kd_fate_store_interrupt(r->store);
        pthread_join(r->thread, NULL);
        kdelay_err_t err = r->err;
        if (err)
                kd_strlcpy(errstr, r->errstr, errstr_size);
        if (st)
                *st = r->st;
        pthread_mutex_destroy(&r->lock);
        kd_fate_store_destroy(r->store);
        free(r);
        return err;
}
