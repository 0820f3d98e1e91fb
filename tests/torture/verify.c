/* SPDX-License-Identifier: Apache-2.0 */
/* The verifier thread and the fate-table read (verify.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kd_fate.h"
#include "kd_mysql.h"
#include "kd_util.h"
#include "verify.h"

/* The value of header name as a NUL-terminated copy in buf; NULL when
 * absent or too long. */
static const char *header(rd_kafka_headers_t *h, const char *name, char *buf,
                          size_t size)
{
        const void *val;
        size_t len;
        if (!h || rd_kafka_header_get_last(h, name, &val, &len) || len >= size)
                return NULL;
        memcpy(buf, val ? val : "", len);
        buf[len] = '\0';
        return buf;
}

/* The index of m's partition in v->parts, -1 when not assigned. */
static int part_index(const tt_verifier_t *v, const rd_kafka_message_t *m,
                      const char *topic)
{
        for (int i = 0; i < v->parts->cnt; i++)
                if (v->parts->elems[i].partition == m->partition &&
                    !strcmp(v->parts->elems[i].topic, topic))
                        return i;
        return -1;
}

/* A new incarnation of the dead-letter topic (tt_verifier_dead_back):
 * its offsets start again, so what was read of the old one says nothing
 * about them. */
static void dead_epoch_apply(tt_verifier_t *v)
{
        int epoch = atomic_load(&v->dead_epoch);
        if (epoch == v->dead_epoch_seen)
                return;
        v->dead_epoch_seen = epoch;
        for (int i = 0; i < v->parts->cnt; i++)
                if (!strcmp(v->parts->elems[i].topic, v->names->dead))
                        v->next_off[i] = 0;
}

/* 1 when m was read before (its offset below the partition's next one):
 * a re-read after a seek or an offset reset, not a second copy. */
static int reread(tt_verifier_t *v, const rd_kafka_message_t *m,
                  const char *topic, int dead)
{
        if (dead)
                dead_epoch_apply(v);
        int i = part_index(v, m, topic);
        if (i < 0)
                return 0;
        if (m->offset < v->next_off[i]) {
                if (v->rereads++ < 20)
                        tt_log("event=verifier_reread topic=%s partition=%d "
                               "offset=%lld next=%lld action=skipped",
                               topic, (int)m->partition, (long long)m->offset,
                               (long long)v->next_off[i]);
                return 1;
        }
        v->next_off[i] = m->offset + 1;
        return 0;
}

static void handle(tt_verifier_t *v, rd_kafka_message_t *m)
{
        int64_t rx = kd_now_ms();
        rd_kafka_headers_t *h = NULL;
        char sidx[24], id[KDELAY_ID_MAX + 1], fa[24];
        const char *topic = rd_kafka_topic_name(m->rkt);
        int dead = !strcmp(topic, v->names->dead);
        if (reread(v, m, topic, dead))
                return;
        v->records++;
        v->dead_records += dead;
        rd_kafka_message_headers(m, &h);
        const char *s = header(h, "torture-idx", sidx, sizeof(sidx));
        char *end = NULL;
        unsigned long long idx = s ? strtoull(s, &end, 10) : 0;
        if (!s || *end || idx >= v->n) {
                v->unknown++;
                return;
        }
        tt_task_t *t = &v->tasks[idx];
        if (dead) {
                char reason[64];
                const char *r =
                    header(h, KDELAY_HDR_DEAD_REASON, reason, sizeof(reason));
                const char *want = tt_dead_reason_want(t);
                if (!want || !r || strcmp(r, want))
                        t->dead_bad_reason++;
                if (t->poison) {
                        /* A refused record names the Kafka error. */
                        char kerr[64];
                        const char *e = header(h, KDELAY_HDR_DEAD_ERROR, kerr,
                                               sizeof(kerr));
                        if (!e && t->poison != TT_POISON_INTERNAL)
                                t->dead_no_error++;
                        tt_log("event=poison_dead_lettered idx=%llu kind=%d "
                               "reason=%s error=%s copy=%d",
                               idx, t->poison, r ? r : "-", e ? e : "-",
                               atomic_load(&t->dead_copies) + 1);
                }
                atomic_fetch_add(&t->dead_copies, 1);
                if (!want)
                        tt_log("event=dead_lettered_task idx=%llu id=%s "
                               "reason=%s",
                               idx,
                               header(h, KDELAY_HDR_ID, id, sizeof(id)) ? id
                                                                        : "-",
                               r ? r : "-");
                return;
        }
        int64_t ts = rd_kafka_message_timestamp(m, NULL);
        const char *hid = header(h, KDELAY_HDR_ID, id, sizeof(id));
        const char *hfa = header(h, KDELAY_HDR_FIRE_AT, fa, sizeof(fa));
        int id_known =
            !t->gen_id || atomic_load(&t->sched_state) >= TT_SCHED_ENQUEUED;
        const void *ballast = NULL;
        size_t ballast_len = 0;
        int ballast_ok =
            !t->heavy || (!rd_kafka_header_get_last(h, TT_BALLAST_HEADER,
                                                    &ballast, &ballast_len) &&
                          ballast_len == TT_BALLAST_BYTES);
        if (!hid || !hfa || atoll(hfa) != t->fire_at ||
            strcmp(topic, v->names->targets[t->target]) ||
            (id_known && strcmp(hid, t->id)) || !ballast_ok) {
                t->bad_copy++;
                tt_log("event=bad_copy idx=%llu id=%s fire_at=%s topic=%s", idx,
                       hid ? hid : "-", hfa ? hfa : "-", topic);
        }
        if (ts < t->fire_at)
                t->early_ts++;
        if (rx < t->fire_at)
                t->early_rx++;
        if (ts < t->fire_at || rx < t->fire_at)
                tt_log("event=early idx=%llu id=%s fire_at=%lld ts=%lld "
                       "rx=%lld",
                       idx, t->id, (long long)t->fire_at, (long long)ts,
                       (long long)rx);
        if (atomic_fetch_add(&t->copies, 1) == 0) {
                t->first_ts = ts;
                t->first_rx = rx;
                pthread_mutex_lock(&v->lock);
                v->firsts++;
                pthread_cond_broadcast(&v->cond);
                pthread_mutex_unlock(&v->lock);
        }
}

/* High watermarks of every assigned partition, into hi[]. */
static void watermarks(tt_verifier_t *v, int64_t *hi)
{
        for (int i = 0; i < v->parts->cnt; i++) {
                int64_t lo = 0;
                hi[i] = -1;
                if (rd_kafka_query_watermark_offsets(
                        v->rk, v->parts->elems[i].topic,
                        v->parts->elems[i].partition, &lo, &hi[i], 10000))
                        hi[i] = -1;
        }
}

static int reached(tt_verifier_t *v, const int64_t *hi)
{
        rd_kafka_topic_partition_list_t *pos =
            rd_kafka_topic_partition_list_copy(v->parts);
        int ok = rd_kafka_position(v->rk, pos) == 0;
        for (int i = 0; ok && i < pos->cnt; i++) {
                int64_t at = pos->elems[i].offset;
                if (hi[i] < 0 || (hi[i] > 0 && (at < 0 || at < hi[i])))
                        ok = 0;
        }
        rd_kafka_topic_partition_list_destroy(pos);
        return ok;
}

static void *verifier_main(void *arg)
{
        tt_verifier_t *v = arg;
        int64_t *hi = calloc((size_t)v->parts->cnt, sizeof(*hi));
        int have_hi = 0;
        int64_t next_check = 0;
        while (!atomic_load(&v->quit)) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(v->rk, 50);
                if (m) {
                        if (!m->err)
                                handle(v, m);
                        else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                                tt_log("event=verifier_consume_error "
                                       "err=\"%s\"",
                                       rd_kafka_err2str(m->err));
                        rd_kafka_message_destroy(m);
                }
                if (!hi || !atomic_load(&v->catchup_req) ||
                    kd_mono_ms() < next_check)
                        continue;
                next_check = kd_mono_ms() + 200;
                if (!have_hi) {
                        watermarks(v, hi);
                        have_hi = 1;
                }
                if (reached(v, hi)) {
                        pthread_mutex_lock(&v->lock);
                        v->caught_up = 1;
                        pthread_cond_broadcast(&v->cond);
                        pthread_mutex_unlock(&v->lock);
                        atomic_store(&v->catchup_req, 0);
                }
        }
        free(hi);
        return NULL;
}

static void add_parts(tt_verifier_t *v, const char *topic)
{
        const struct rd_kafka_metadata *md;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(v->rk, topic, NULL);
        if (rd_kafka_metadata(v->rk, 0, rkt, &md, 10000) == 0) {
                for (int p = 0; p < md->topics[0].partition_cnt; p++)
                        rd_kafka_topic_partition_list_add(
                            v->parts, topic, md->topics[0].partitions[p].id)
                            ->offset = RD_KAFKA_OFFSET_BEGINNING;
                rd_kafka_metadata_destroy(md);
        } else {
                tt_log("event=verifier_metadata_failed topic=%s", topic);
        }
        rd_kafka_topic_destroy(rkt);
}

int tt_verifier_start(tt_verifier_t *v)
{
        char errstr[512], group[96];
        snprintf(group, sizeof(group), "%s-verifier", v->names->prefix);
        const char *props[] = {"bootstrap.servers",
                               v->names->brokers,
                               "group.id",
                               group,
                               "enable.auto.commit",
                               "false",
                               "isolation.level",
                               "read_committed",
                               "fetch.wait.max.ms",
                               "20",
                               "auto.offset.reset",
                               "earliest",
                               NULL};
        pthread_mutex_init(&v->lock, NULL);
        pthread_cond_init(&v->cond, NULL);
        rd_kafka_conf_t *rkc = rd_kafka_conf_new();
        for (size_t i = 0; props[i]; i += 2)
                if (rd_kafka_conf_set(rkc, props[i], props[i + 1], errstr,
                                      sizeof(errstr))) {
                        rd_kafka_conf_destroy(rkc);
                        tt_log("event=verifier_failed err=\"%s\"", errstr);
                        return -1;
                }
        tt_rk_log_to(rkc, v->client_log);
        v->rk = rd_kafka_new(RD_KAFKA_CONSUMER, rkc, errstr, sizeof(errstr));
        if (!v->rk) {
                rd_kafka_conf_destroy(rkc);
                tt_log("event=verifier_failed err=\"%s\"", errstr);
                return -1;
        }
        rd_kafka_poll_set_consumer(v->rk);
        /* Every partition from the beginning, assigned: no group
         * membership, no rebalance. */
        v->parts = rd_kafka_topic_partition_list_new(32);
        for (int i = 0; i < TT_TARGETS; i++)
                add_parts(v, v->names->targets[i]);
        add_parts(v, v->names->dead);
        v->next_off = calloc((size_t)(v->parts->cnt ? v->parts->cnt : 1),
                             sizeof(*v->next_off));
        if (!v->next_off || v->parts->cnt == 0 ||
            rd_kafka_assign(v->rk, v->parts))
                return -1;
        if (pthread_create(&v->thread, NULL, verifier_main, v))
                return -1;
        v->started = 1;
        return 0;
}

/* The dead-letter topic's partitions of v->parts, at offset `at`. */
static rd_kafka_topic_partition_list_t *dead_parts(tt_verifier_t *v, int64_t at)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(8);
        for (int i = 0; l && i < v->parts->cnt; i++)
                if (!strcmp(v->parts->elems[i].topic, v->names->dead))
                        rd_kafka_topic_partition_list_add(
                            l, v->names->dead, v->parts->elems[i].partition)
                            ->offset = at;
        return l;
}

int tt_verifier_dead_gone(tt_verifier_t *v, int timeout_ms)
{
        rd_kafka_topic_partition_list_t *l = dead_parts(v, 0);
        if (!l)
                return -1;
        int64_t deadline = kd_mono_ms() + timeout_ms;
        int64_t hi[64];
        int ok = l->cnt <= 64;
        for (int i = 0; ok && i < l->cnt; i++) {
                int64_t lo;
                ok = !rd_kafka_query_watermark_offsets(v->rk, l->elems[i].topic,
                                                       l->elems[i].partition,
                                                       &lo, &hi[i], 10000);
        }
        int reached = 0;
        while (ok && !reached && kd_mono_ms() < deadline) {
                reached = rd_kafka_position(v->rk, l) == 0;
                for (int i = 0; reached && i < l->cnt; i++)
                        reached = hi[i] == 0 || l->elems[i].offset >= hi[i];
                if (!reached)
                        tt_sleep_ms(20, NULL);
        }
        int rc = ok && reached && !rd_kafka_pause_partitions(v->rk, l) ? 0 : -1;
        /* Anything written since goes with the topic (the caller deletes
         * it next). */
        int moved = 0;
        for (int i = 0; !rc && i < l->cnt; i++) {
                int64_t lo, now_hi;
                if (rd_kafka_query_watermark_offsets(v->rk, l->elems[i].topic,
                                                     l->elems[i].partition, &lo,
                                                     &now_hi, 10000) ||
                    now_hi != hi[i])
                        moved = 1;
        }
        /* Logged, not failed: what moved may be a second copy (a re-read
         * after a kill); a first copy lost with the topic shows as a
         * malformed task never dead-lettered. */
        tt_log("event=verifier_dead_topic_paused read_to_end=%d moved=%d",
               reached, moved);
        rd_kafka_topic_partition_list_destroy(l);
        return rc;
}

/* One seek of the dead-letter partitions to their beginning; logs a
 * failed try. 0 on success. */
static int dead_seek_once(tt_verifier_t *v, int attempt)
{
        rd_kafka_topic_partition_list_t *l =
            dead_parts(v, RD_KAFKA_OFFSET_BEGINNING);
        if (!l)
                return -1;
        rd_kafka_error_t *error = rd_kafka_seek_partitions(v->rk, l, 10000);
        int rc = error ? -1 : 0;
        for (int i = 0; !rc && i < l->cnt; i++)
                if (l->elems[i].err)
                        rc = -1;
        if (rc)
                tt_log(
                    "event=verifier_seek_failed attempt=%d err=\"%s\"", attempt,
                    error ? rd_kafka_error_string(error) : "partition error");
        if (error)
                rd_kafka_error_destroy(error);
        rd_kafka_topic_partition_list_destroy(l);
        return rc;
}

/* Test hook of the re-read dedupe (KDELAY_TORTURE_REREAD=1,
 * docs/torture.md): every target partition read again from its
 * beginning, as an offset reset would; each record then read a second
 * time must be skipped, never counted as a copy. */
static void reread_targets(tt_verifier_t *v)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(v->parts->cnt);
        for (int i = 0; l && i < v->parts->cnt; i++)
                if (strcmp(v->parts->elems[i].topic, v->names->dead))
                        rd_kafka_topic_partition_list_add(
                            l, v->parts->elems[i].topic,
                            v->parts->elems[i].partition)
                            ->offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_error_t *error =
            l ? rd_kafka_seek_partitions(v->rk, l, 10000) : NULL;
        tt_log("event=verifier_reread_hook partitions=%d err=\"%s\"",
               l ? l->cnt : 0, error ? rd_kafka_error_string(error) : "-");
        if (error)
                rd_kafka_error_destroy(error);
        if (l)
                rd_kafka_topic_partition_list_destroy(l);
}

/* When the seek gave up: the dead-letter partitions taken out of the
 * assignment and put back at their beginning, so that the new topic is
 * not read on from the old one's offsets (its first records skipped).
 * 0 on success. */
static int dead_reassign(tt_verifier_t *v)
{
        rd_kafka_topic_partition_list_t *l =
            dead_parts(v, RD_KAFKA_OFFSET_BEGINNING);
        if (!l)
                return -1;
        rd_kafka_error_t *error = rd_kafka_incremental_unassign(v->rk, l);
        if (!error)
                error = rd_kafka_incremental_assign(v->rk, l);
        int rc = error ? -1 : 0;
        tt_log("event=verifier_dead_reassigned rc=%d err=\"%s\"", rc,
               error ? rd_kafka_error_string(error) : "-");
        if (error)
                rd_kafka_error_destroy(error);
        rd_kafka_topic_partition_list_destroy(l);
        return rc;
}

int tt_verifier_dead_back(tt_verifier_t *v)
{
        /* Before the resume: every record read from now on is of the new
         * topic. */
        atomic_fetch_add(&v->dead_epoch, 1);
        int rc = -1, attempt = 1;
        for (int64_t end = kd_mono_ms() + TT_VERIFIER_SEEK_BOUND_MS;;
             attempt++) {
                rc = dead_seek_once(v, attempt);
                if (!rc || kd_mono_ms() >= end)
                        break;
                atomic_fetch_add(&v->seek_retries, 1);
                tt_sleep_ms(1000, NULL);
        }
        if (rc)
                rc = dead_reassign(v);
        if (rc) {
                /* Harness: the dead-letter figures are then unverified
                 * (report.c: a malformed or poison task not dead-lettered
                 * is the harness's then); the re-read dedupe keeps a
                 * later offset reset from counting anything twice. */
                atomic_fetch_add(&v->seek_failed, 1);
                tt_log("event=verifier_seek_gave_up attempts=%d "
                       "whose=harness",
                       attempt);
        }
        if (!rc && getenv("KDELAY_TORTURE_REREAD"))
                reread_targets(v);
        rd_kafka_topic_partition_list_t *l =
            dead_parts(v, RD_KAFKA_OFFSET_BEGINNING);
        if (!l || rd_kafka_resume_partitions(v->rk, l))
                rc = -1;
        if (l)
                rd_kafka_topic_partition_list_destroy(l);
        return rc;
}

int tt_verifier_dead_resume(tt_verifier_t *v)
{
        rd_kafka_topic_partition_list_t *l = dead_parts(v, 0);
        int rc = !l || rd_kafka_resume_partitions(v->rk, l) ? -1 : 0;
        if (l)
                rd_kafka_topic_partition_list_destroy(l);
        tt_log("event=verifier_dead_topic_resumed rc=%d", rc);
        return rc;
}

size_t tt_verifier_wait(tt_verifier_t *v, size_t seen, int64_t deadline_ms)
{
        struct timespec ts = {(time_t)(deadline_ms / 1000),
                              (long)(deadline_ms % 1000) * 1000000L};
        pthread_mutex_lock(&v->lock);
        while (v->firsts == seen && kd_now_ms() < deadline_ms)
                if (pthread_cond_timedwait(&v->cond, &v->lock, &ts))
                        break;
        size_t n = v->firsts;
        pthread_mutex_unlock(&v->lock);
        return n;
}

int tt_verifier_catch_up(tt_verifier_t *v, int timeout_ms)
{
        int64_t deadline = kd_now_ms() + timeout_ms;
        struct timespec ts = {(time_t)(deadline / 1000),
                              (long)(deadline % 1000) * 1000000L};
        atomic_store(&v->catchup_req, 1);
        pthread_mutex_lock(&v->lock);
        while (!v->caught_up)
                if (pthread_cond_timedwait(&v->cond, &v->lock, &ts))
                        break;
        int ok = v->caught_up;
        pthread_mutex_unlock(&v->lock);
        return ok ? 0 : -1;
}

void tt_verifier_stop(tt_verifier_t *v)
{
        atomic_store(&v->quit, 1);
        if (v->started)
                pthread_join(v->thread, NULL);
        v->started = 0;
        if (v->rk) {
                rd_kafka_consumer_close(v->rk);
                rd_kafka_destroy(v->rk);
                v->rk = NULL;
        }
        if (v->parts)
                rd_kafka_topic_partition_list_destroy(v->parts);
        v->parts = NULL;
        free(v->next_off);
        v->next_off = NULL;
        pthread_cond_destroy(&v->cond);
        pthread_mutex_destroy(&v->lock);
}

/* --- the fate table ---------------------------------------------------------
 */

static int cmp_id(const void *a, const void *b, void *tasks)
{
        const tt_task_t *t = tasks;
        return strcmp(t[*(const size_t *)a].id, t[*(const size_t *)b].id);
}

/* The task of id: "<prefix>-<idx>" directly, a generated id by search in
 * gen[] (indices sorted by id). */
static tt_task_t *task_of(tt_task_t *tasks, size_t n, const char *prefix,
                          const size_t *gen, size_t ngen, const char *id)
{
        size_t plen = strlen(prefix);
        if (!strncmp(id, prefix, plen) && id[plen] == '-') {
                char *end;
                unsigned long long i = strtoull(id + plen + 1, &end, 10);
                if (!*end && i < n && !strcmp(tasks[i].id, id))
                        return &tasks[i];
                return NULL;
        }
        size_t lo = 0, hi = ngen;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(tasks[gen[mid]].id, id);
                if (!c)
                        return &tasks[gen[mid]];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* A run of delivered claims (kdelay_fired_run, schema 10). */
typedef struct tt_run {
        char prefix[65]; /* owner_prefix: at most 64 bytes, no NUL */
        uint64_t lo, hi;
} tt_run_t;

/* Every run, in primary-key order (prefix as bytes, then seq_lo), into
 * *runsp (owned by the caller; NULL and 0 when there is none or no
 * table). -1 on a failure that is not "no table". */
static int runs_read(MYSQL *conn, tt_run_t **runsp, size_t *np)
{
        *runsp = NULL;
        *np = 0;
        if (mysql_query(conn, "SELECT owner_prefix, seq_lo, seq_hi FROM "
                              "kdelay_fired_run ORDER BY owner_prefix, "
                              "seq_lo"))
                return mysql_errno(conn) == 1146 ? 0 : -1;
        MYSQL_RES *res = mysql_store_result(conn);
        if (!res)
                return -1;
        size_t cnt = (size_t)mysql_num_rows(res), n = 0;
        tt_run_t *runs = malloc((cnt ? cnt : 1) * sizeof(*runs));
        MYSQL_ROW row;
        while (runs && (row = mysql_fetch_row(res))) {
                unsigned long *len = mysql_fetch_lengths(res);
                if (!row[0] || !row[1] || !row[2] ||
                    len[0] >= sizeof(runs[n].prefix) ||
                    memchr(row[0], '\0', len[0]))
                        continue; /* no owner splits to it */
                memcpy(runs[n].prefix, row[0], len[0]);
                runs[n].prefix[len[0]] = '\0';
                runs[n].lo = strtoull(row[1], NULL, 10);
                runs[n].hi = strtoull(row[2], NULL, 10);
                n++;
        }
        mysql_free_result(res);
        if (!runs)
                return -1;
        *runsp = runs;
        *np = n;
        return 0;
}

/* Whether a run covers the FIRING row of owner: the run of its prefix
 * with the greatest seq_lo at or below its seq ends at or after it
 * (docs/fate-protocol.md, "Runs of delivered claims"). */
static int runs_cover(const tt_run_t *runs, size_t n, const char *owner)
{
        size_t plen;
        uint64_t seq;
        char prefix[65];
        if (!kd_fate_owner_split(owner, strlen(owner), &plen, &seq) ||
            plen >= sizeof(prefix))
                return 0;
        memcpy(prefix, owner, plen);
        prefix[plen] = '\0';
        /* The first run after (prefix, seq) in key order. */
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(runs[mid].prefix, prefix);
                if (c < 0 || (!c && runs[mid].lo <= seq))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo > 0 && !strcmp(runs[lo - 1].prefix, prefix) &&
               runs[lo - 1].hi >= seq;
}

long tt_fate_read(tt_task_t *tasks, size_t n, const tt_names_t *names)
{
        char errstr[512];
        MYSQL *conn = NULL;
        kdelay_conf_t *conf = tt_conf_new(names, NULL);
        size_t *gen = malloc((n ? n : 1) * sizeof(*gen)), ngen = 0;
        long rows = -1;
        tt_run_t *runs = NULL;
        size_t nruns = 0;
        if (!conf || !gen ||
            kd_mysql_connect(conf, &conn, errstr, sizeof(errstr))) {
                tt_log("event=fate_read_failed err=\"%s\"",
                       conf && gen ? errstr : "out of memory");
                goto out;
        }
        for (size_t i = 0; i < n; i++)
                if (tasks[i].gen_id && tasks[i].id[0])
                        gen[ngen++] = i;
        qsort_r(gen, ngen, sizeof(*gen), cmp_id, tasks);
        /* Read before the rows, so that a run recorded between the two
         * reads finds its rows read as FIRING at worst, never the other
         * way round. */
        if (runs_read(conn, &runs, &nruns)) {
                tt_log("event=fate_read_failed what=runs err=\"%s\"",
                       mysql_error(conn));
                goto out;
        }
        if (mysql_query(conn, "SELECT task_id, state, dead_reason, owner, "
                              "src_partition, src_offset FROM kdelay_fate")) {
                tt_log("event=fate_read_failed err=\"%s\"", mysql_error(conn));
                goto out;
        }
        MYSQL_RES *res = mysql_use_result(conn);
        MYSQL_ROW row;
        rows = 0;
        while (res && (row = mysql_fetch_row(res))) {
                unsigned long *len = mysql_fetch_lengths(res);
                char id[KDELAY_ID_MAX + 1];
                rows++;
                if (!row[0] || !row[1] || len[0] > KDELAY_ID_MAX)
                        continue;
                memcpy(id, row[0], len[0]);
                id[len[0]] = '\0';
                tt_task_t *t = task_of(tasks, n, names->prefix, gen, ngen, id);
                if (!t)
                        continue;
                t->fate = !strcmp(row[1], "FIRING")      ? TT_FATE_FIRING
                          : !strcmp(row[1], "FIRED")     ? TT_FATE_FIRED
                          : !strcmp(row[1], "CANCELLED") ? TT_FATE_CANCELLED
                                                         : TT_FATE_DEAD;
                /* A FIRING row a run covers was delivered: it is FIRED. */
                if (t->fate == TT_FATE_FIRING && row[3] &&
                    runs_cover(runs, nruns, row[3])) {
                        t->fate = TT_FATE_FIRED;
                        t->fate_covered = 1;
                }
                const char *want = tt_dead_reason_want(t);
                t->fate_reason_ok = t->fate == TT_FATE_DEAD && want && row[2] &&
                                    !strcmp(row[2], want);
                kd_strlcpy(t->fate_owner, row[3] ? row[3] : "",
                           sizeof(t->fate_owner));
                t->fate_src_partition = row[4] ? atoi(row[4]) : -1;
                t->fate_src_offset = row[5] ? atoll(row[5]) : -1;
        }
        /* A fetch that ended on an error read only part of the table. */
        if (!res || mysql_errno(conn)) {
                tt_log("event=fate_read_failed err=\"%s\"",
                       res ? mysql_error(conn) : "no result");
                rows = -1;
        }
        if (res)
                mysql_free_result(res);
        res = NULL;
        if (rows < 0)
                goto out;
        /* Fires without a claim (schema 7): which tasks, and what their row
         * said before. A database without the table has none. */
        if (mysql_query(conn, "SELECT task_id, prior FROM kdelay_unclaimed") ||
            !(res = mysql_use_result(conn)))
                goto out;
        while ((row = mysql_fetch_row(res))) {
                unsigned long *len = mysql_fetch_lengths(res);
                char id[KDELAY_ID_MAX + 1];
                if (!row[0] || !row[1] || len[0] > KDELAY_ID_MAX)
                        continue;
                memcpy(id, row[0], len[0]);
                id[len[0]] = '\0';
                tt_task_t *t = task_of(tasks, n, names->prefix, gen, ngen, id);
                if (t)
                        t->unclaimed = !strcmp(row[1], "cancelled") ? 2
                                       : !strcmp(row[1], "firing")  ? 3
                                       : !strcmp(row[1], "dead")    ? 4
                                                                    : 1;
        }
        mysql_free_result(res);
out:
        if (conn)
                mysql_close(conn);
        kdelay_conf_destroy(conf);
        free(gen);
        free(runs);
        return rows;
}
