/* SPDX-License-Identifier: Apache-2.0 */
/* Scanning the tier topics for pending tasks (kd_scan.h). */
#include "kd_scan.h"
#include "kd_watermarks.h"

#include <stdlib.h>
#include <string.h>

#include "kd_util.h"

/* How long a metadata or offsets request of a scan may take. */
#define KD_SCAN_TIMEOUT_MS 10000

typedef struct kd_scan {
        const kdelay_conf_t *conf;
        rd_kafka_t *rk; /* owned */
        kd_grouppos_t pos;
        unsigned char *done; /* owned: per pos.parts entry, read to its end */
        kd_scan_progress_t prog;
} kd_scan_t;

/* Assigns every partition with records left at its start; marks the
 * others done. */
static kdelay_err_t assign(kd_scan_t *s, char *errstr, size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new((int)s->pos.cnt);
        if (!l)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        for (size_t i = 0; i < s->pos.cnt; i++) {
                const kd_grouppos_part_t *p = &s->pos.parts[i];
                int64_t start = kd_grouppos_start(p);
                if (start >= p->high) {
                        s->done[i] = 1;
                        continue;
                }
                s->prog.parts++;
                s->prog.to_read += (uint64_t)(p->high - start);
                rd_kafka_topic_partition_list_add(l, p->topic, p->partition)
                    ->offset = start;
        }
        s->prog.counted = 1;
        rd_kafka_resp_err_t err =
            l->cnt ? rd_kafka_assign(s->rk, l) : RD_KAFKA_RESP_ERR_NO_ERROR;
        rd_kafka_topic_partition_list_destroy(l);
        if (err)
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "assign the tier partitions: %s",
                               rd_kafka_err2str(err));
        return KDELAY_OK;
}

static size_t part_index(const kd_scan_t *s, const rd_kafka_message_t *m)
{
        const char *topic = rd_kafka_topic_name(m->rkt);
        for (size_t i = 0; i < s->pos.cnt; i++)
                if (s->pos.parts[i].partition == m->partition &&
                    !strcmp(s->pos.parts[i].topic, topic))
                        return i;
        return s->pos.cnt;
}

static void part_done(kd_scan_t *s, size_t i)
{
        if (i < s->pos.cnt && !s->done[i]) {
                s->done[i] = 1;
                s->prog.parts_done++;
        }
}

/* Hands one consumed message to cb. 0 go on, 1 stop, -1 failed. */
static int handle(kd_scan_t *s, const rd_kafka_message_t *m, kd_scan_cb_t *cb,
                  void *opaque)
{
        size_t i = part_index(s, m);
        if (i == s->pos.cnt || s->done[i])
                return 0;
        const kd_grouppos_part_t *p = &s->pos.parts[i];
        if (m->offset >= p->high) { /* written after the scan began */
                part_done(s, i);
                return 0;
        }
        if (m->offset + 1 >= p->high)
                part_done(s, i);
        if (kd_grouppos_handled(p, m->offset))
                return 0;
        s->prog.records++;
        kd_scan_rec_t r = {p, m->offset, m, NULL, KD_WIRE_OK, {0}};
        rd_kafka_headers_t *h = NULL;
        if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR)
                r.hdrs = h;
        r.defect = kd_wire_decode(r.hdrs, kd_now_ms(), &r.task);
        return cb(&r, opaque);
}

static int all_done(const kd_scan_t *s)
{
        for (size_t i = 0; i < s->pos.cnt; i++)
                if (!s->done[i])
                        return 0;
        return 1;
}

/* Consumes until every partition is read, the budget is spent, or cb
 * stops. */
static kdelay_err_t consume(kd_scan_t *s, const kd_scan_opts_t *o,
                            kd_scan_cb_t *cb, void *opaque, char *errstr,
                            size_t errstr_size)
{
        int64_t t0 = kd_mono_ms(), last_report = t0;
        while (!all_done(s)) {
                int64_t now = kd_mono_ms();
                s->prog.elapsed_ms = now - t0;
                if (o && o->budget_ms > 0 && s->prog.elapsed_ms >= o->budget_ms)
                        return KDELAY_OK;
                if (o && o->progress && now - last_report >= 1000) {
                        last_report = now;
                        o->progress(&s->prog, o->opaque);
                }
                rd_kafka_message_t *m = rd_kafka_consumer_poll(s->rk, 100);
                if (!m)
                        continue;
                int rc = 0;
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
                        part_done(s, part_index(s, m));
                else if (m->err)
                        rc = -2;
                else
                        rc = handle(s, m, cb, opaque);
                if (rc == -2) {
                        kdelay_err_t e = kd_fail(
                            KDELAY_ERR_KAFKA, errstr, errstr_size,
                            "reading %s: %s",
                            m->rkt ? rd_kafka_topic_name(m->rkt) : "kafka",
                            rd_kafka_message_errstr(m));
                        rd_kafka_message_destroy(m);
                        return e;
                }
                rd_kafka_message_destroy(m);
                if (rc < 0)
                        return kd_fail(KDELAY_ERR_NO_MEMORY, errstr,
                                       errstr_size, "out of memory");
                if (rc > 0)
                        return KDELAY_OK;
        }
        s->prog.complete = 1;
        s->prog.elapsed_ms = kd_mono_ms() - t0;
        return KDELAY_OK;
}

/* topic's partitions as positions: from the first record appended at or
 * after since_ms (none: the end) to the end; no done sets. */
static kdelay_err_t since_pos(rd_kafka_t *rk, const char *topic,
                              int64_t since_ms, int missing_empty,
                              kd_grouppos_t *pos, char *errstr,
                              size_t errstr_size)
{
        const struct rd_kafka_metadata *md = NULL;
        memset(pos, 0, sizeof(*pos));
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        if (!rkt)
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        rd_kafka_resp_err_t kerr =
            rd_kafka_metadata(rk, 0, rkt, &md, KD_SCAN_TIMEOUT_MS);
        rd_kafka_topic_destroy(rkt);
        if (kerr)
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "metadata of %s: %s", topic,
                               rd_kafka_err2str(kerr));
        int parts = kd_grouppos_partitions_of(md, topic);
        /* A topic kept from us is no empty one (a missing topic is). */
        rd_kafka_resp_err_t terr =
            md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR_NO_ERROR;
        rd_kafka_metadata_destroy(md);
        if (parts < 0 && missing_empty) {
                if (terr == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                        return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                                       "metadata of %s: %s", topic,
                                       rd_kafka_err2str(terr));
                parts = 0;
        }
        if (parts < 0)
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "topic %s not found (kdelay's own topics: "
                               "kdelayctl topics create)",
                               topic);
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(parts ? parts : 1);
        pos->parts = calloc(parts ? (size_t)parts : 1, sizeof(*pos->parts));
        if (!l || !pos->parts) {
                if (l)
                        rd_kafka_topic_partition_list_destroy(l);
                kd_grouppos_clear(pos);
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        }
        for (int p = 0; p < parts; p++)
                rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                    since_ms;
        kerr = parts ? rd_kafka_offsets_for_times(rk, l, KD_SCAN_TIMEOUT_MS)
                     : RD_KAFKA_RESP_ERR_NO_ERROR;
        for (int p = 0; !kerr && p < parts; p++) {
                kd_grouppos_part_t *gp = &pos->parts[pos->cnt++];
                kd_strlcpy(gp->topic, topic, sizeof(gp->topic));
                gp->partition = p;
                kerr = kd_watermarks(rk, topic, p, &gp->low, &gp->high,
                                     KD_SCAN_TIMEOUT_MS);
                /* -1: nothing appended since: start at the end */
                int64_t from = l->elems[p].offset;
                gp->committed = from >= 0 ? from : gp->high;
        }
        rd_kafka_topic_partition_list_destroy(l);
        if (kerr) {
                kd_grouppos_clear(pos);
                return kd_fail(KDELAY_ERR_KAFKA, errstr, errstr_size,
                               "offsets of %s: %s", topic,
                               rd_kafka_err2str(kerr));
        }
        return KDELAY_OK;
}

/* Reads the positions of topic since since_ms (NULL: the tier topics'
 * pending records) and hands every record to cb. */
static kdelay_err_t scan_run(const kdelay_conf_t *conf, const char *topic,
                             int64_t since_ms, const kd_scan_opts_t *opts,
                             kd_scan_cb_t *cb, void *opaque,
                             kd_scan_progress_t *progp, char *errstr,
                             size_t errstr_size)
{
        kd_rk_owner_t owner = {conf};
        kd_scan_t s = {.conf = conf};
        s.rk = kd_grouppos_client(&owner, errstr, errstr_size);
        if (!s.rk) {
                if (progp)
                        *progp = s.prog;
                return KDELAY_ERR_KAFKA;
        }
        kdelay_err_t err =
            topic ? since_pos(s.rk, topic, since_ms,
                              opts ? opts->missing_empty : 0, &s.pos, errstr,
                              errstr_size)
                  : kd_grouppos_read(s.rk, conf, &s.pos, errstr, errstr_size);
        if (!err && !(s.done = calloc(s.pos.cnt ? s.pos.cnt : 1, 1)))
                err = kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                              "out of memory");
        if (!err)
                err = assign(&s, errstr, errstr_size);
        if (!err)
                err = consume(&s, opts, cb, opaque, errstr, errstr_size);
        if (progp)
                *progp = s.prog;
        rd_kafka_consumer_close(s.rk);
        rd_kafka_destroy(s.rk);
        free(s.done);
        kd_grouppos_clear(&s.pos);
        return err;
}

kdelay_err_t kd_scan_run(const kdelay_conf_t *conf, const kd_scan_opts_t *opts,
                         kd_scan_cb_t *cb, void *opaque,
                         kd_scan_progress_t *progp, char *errstr,
                         size_t errstr_size)
{
        return scan_run(conf, NULL, 0, opts, cb, opaque, progp, errstr,
                        errstr_size);
}

kdelay_err_t kd_scan_dead(const kdelay_conf_t *conf, int64_t since_ms,
                          const kd_scan_opts_t *opts, kd_scan_cb_t *cb,
                          void *opaque, kd_scan_progress_t *progp, char *errstr,
                          size_t errstr_size)
{
        char topic[256];
        kd_conf_dead_topic(conf, topic, sizeof(topic));
        return scan_run(conf, topic, since_ms, opts, cb, opaque, progp, errstr,
                        errstr_size);
}

kdelay_err_t kd_scan_since(const kdelay_conf_t *conf, const char *topic,
                           int64_t since_ms, const kd_scan_opts_t *opts,
                           kd_scan_cb_t *cb, void *opaque,
                           kd_scan_progress_t *progp, char *errstr,
                           size_t errstr_size)
{
        return scan_run(conf, topic, since_ms, opts, cb, opaque, progp, errstr,
                        errstr_size);
}
