/* SPDX-License-Identifier: Apache-2.0 */
/* Tasks into tier records (kd_record.h), and the public calls that
 * schedule through the application's own producer (kdelay/producer.h). */
#include "kd_record.h"

#include <kdelay/producer.h>

#include <string.h>

#include "kd_conf.h"
#include "kd_log.h"
#include "kd_taskid.h"
#include "kd_tiers.h"
#include "kd_util.h"
#include "kd_wire.h"

/* Checks task and resolves its due time and id. */
static kdelay_err_t task_check(const kdelay_conf_t *conf,
                               const kdelay_task_t *t, int64_t now,
                               int64_t *fire_atp, char *id, size_t id_size,
                               char *errstr, size_t errstr_size)
{
        if (!t || !t->topic)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "a task needs a target topic");
        if (!kd_wire_topic_valid(t->topic, strlen(t->topic)))
                return kd_fail(KDELAY_ERR_INVALID_TOPIC, errstr, errstr_size,
                               "target topic \"%.64s\" is not a valid Kafka "
                               "topic name (1..249 of [A-Za-z0-9._-], not . "
                               "or ..)",
                               t->topic);
        if (kd_conf_is_own_topic(conf, t->topic))
                return kd_fail(KDELAY_ERR_INVALID_TOPIC, errstr, errstr_size,
                               "target topic \"%s\" is one of kdelay's own "
                               "topics",
                               t->topic);
        if (kd_wire_topic_internal(t->topic, strlen(t->topic)))
                return kd_fail(KDELAY_ERR_INVALID_TOPIC, errstr, errstr_size,
                               "target topic \"%s\" is a Kafka internal "
                               "topic (a name starting with __)",
                               t->topic);
        if ((t->key_len && !t->key) || (t->value_len && !t->value))
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "key/value length given without data");
        for (size_t i = 0; i < t->header_cnt; i++) {
                const kdelay_header_t *h = &t->headers[i];
                if (!kd_wire_user_header_valid(h->name))
                        return kd_fail(KDELAY_ERR_INVALID_HEADER, errstr,
                                       errstr_size,
                                       "header \"%.64s\": names must be "
                                       "non-empty and not start with "
                                       "\"kdelay-\"",
                                       h->name ? h->name : "");
                if (h->value_len && !h->value)
                        return kd_fail(KDELAY_ERR_INVALID_HEADER, errstr,
                                       errstr_size,
                                       "header \"%.64s\": length without "
                                       "value",
                                       h->name);
        }
        int has_at = t->fire_at_ms != KDELAY_TIME_UNSET;
        int has_delay = t->delay_ms != KDELAY_TIME_UNSET;
        if (has_at == has_delay)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "set exactly one of fire_at_ms and delay_ms");
        if (has_delay && (t->delay_ms < 0 || t->delay_ms > KDELAY_MAX_DELAY_MS))
                return kd_fail(KDELAY_ERR_INVALID_TIME, errstr, errstr_size,
                               "delay %lld ms is outside 0 .. 10 years",
                               (long long)t->delay_ms);
        if (has_at &&
            (t->fire_at_ms < 0 || t->fire_at_ms - now > KDELAY_MAX_DELAY_MS))
                return kd_fail(KDELAY_ERR_INVALID_TIME, errstr, errstr_size,
                               "due time %lld is before 1970 or more than 10 "
                               "years ahead",
                               (long long)t->fire_at_ms);
        /* An absolute time already past is accepted and fires at once:
         * whoever computed it is late, and dropping the task would lose it.*/
        *fire_atp = has_at ? t->fire_at_ms : now + t->delay_ms;

        if (t->id) {
                size_t n = strlen(t->id);
                if (!kd_wire_id_valid(t->id, n))
                        return kd_fail(KDELAY_ERR_INVALID_ID, errstr,
                                       errstr_size,
                                       "task id must be 1..%d bytes of "
                                       "UTF-8 (got %zu bytes)",
                                       KDELAY_ID_MAX, n);
                kd_strlcpy(id, t->id, id_size);
                return KDELAY_OK;
        }
        if (kd_taskid_generate(id, id_size) != KDELAY_OK)
                return kd_fail(KDELAY_ERR_SYSTEM, errstr, errstr_size,
                               "cannot read random bytes for a task id");
        return KDELAY_OK;
}

kdelay_err_t kd_record_make(const kdelay_conf_t *conf,
                            const kdelay_task_t *task, int want_id,
                            size_t id_out_size, kd_record_t *rec, char *errstr,
                            size_t errstr_size)
{
        if (!conf || !rec)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "conf and record are required");
        memset(rec, 0, sizeof(*rec));
        int64_t now = kd_now_ms();
        kdelay_err_t err =
            task_check(conf, task, now, &rec->fire_at_ms, rec->id,
                       sizeof(rec->id), errstr, errstr_size);
        if (err)
                return err;
        /* A cut id would cancel some other task: refuse instead. */
        if (want_id && id_out_size <= strlen(rec->id))
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "id_out holds %zu bytes, the id needs %zu",
                               id_out_size, strlen(rec->id) + 1);
        size_t tier = kd_tiers_choose(&conf->tiers, rec->fire_at_ms - now);
        kd_tiers_topic(&conf->tiers, tier, conf->topic_prefix, rec->topic,
                       sizeof(rec->topic));
        if (kd_wire_encode(&rec->hdrs, rec->id, task->topic, rec->fire_at_ms,
                           task->headers, task->header_cnt))
                return kd_fail(KDELAY_ERR_NO_MEMORY, errstr, errstr_size,
                               "out of memory");
        return KDELAY_OK;
}

kdelay_err_t kd_record_produce(rd_kafka_t *rk, kd_record_t *rec,
                               const kdelay_task_t *task, void *msg_opaque,
                               const kdelay_conf_t *conf, const char *by,
                               char *errstr, size_t errstr_size)
{
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(rec->topic),
            RD_KAFKA_V_KEY((void *)task->key, task->key_len),
            RD_KAFKA_V_VALUE((void *)task->value, task->value_len),
            RD_KAFKA_V_HEADERS(rec->hdrs),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_OPAQUE(msg_opaque), RD_KAFKA_V_END);
        if (err) {
                kd_record_clear(rec);
                return kd_fail(err == RD_KAFKA_RESP_ERR__QUEUE_FULL
                                   ? KDELAY_ERR_QUEUE_FULL
                                   : KDELAY_ERR_KAFKA,
                               errstr, errstr_size, "cannot produce to %s: %s",
                               rec->topic, rd_kafka_err2str(err));
        }
        rec->hdrs = NULL; /* librdkafka's now */
        char qid[KD_LOG_QUOTED_MAX(KDELAY_ID_MAX)], qtopic[300];
        kd_log(conf, KDELAY_LOG_DEBUG,
               "event=task_produced id=%s topic=%s fire_at=%lld producer=%s",
               kd_log_quote(rec->id, qid, sizeof(qid)),
               kd_log_quote(rec->topic, qtopic, sizeof(qtopic)),
               (long long)rec->fire_at_ms, by);
        return KDELAY_OK;
}

void kd_record_clear(kd_record_t *rec)
{
        if (rec && rec->hdrs) {
                rd_kafka_headers_destroy(rec->hdrs);
                rec->hdrs = NULL;
        }
}

kdelay_err_t kdelay_task_record(const kdelay_conf_t *conf,
                                const kdelay_task_t *task, char *topic,
                                size_t topic_size, rd_kafka_headers_t **hdrsp,
                                char *id_out, size_t id_out_size, char *errstr,
                                size_t errstr_size)
{
        kd_record_t rec;
        if (!topic || !hdrsp)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "topic and hdrsp are required");
        kdelay_err_t err = kd_record_make(
            conf, task, id_out != NULL, id_out_size, &rec, errstr, errstr_size);
        if (err)
                return err;
        if (topic_size <= strlen(rec.topic)) {
                kd_record_clear(&rec);
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "topic holds %zu bytes, the tier topic needs "
                               "%zu",
                               topic_size, strlen(rec.topic) + 1);
        }
        memcpy(topic, rec.topic, strlen(rec.topic) + 1);
        if (id_out)
                memcpy(id_out, rec.id, strlen(rec.id) + 1);
        *hdrsp = rec.hdrs; /* the caller's now */
        return KDELAY_OK;
}

kdelay_err_t kdelay_produce(rd_kafka_t *rk, const kdelay_conf_t *conf,
                            const kdelay_task_t *task, void *msg_opaque,
                            char *id_out, size_t id_out_size, char *errstr,
                            size_t errstr_size)
{
        kd_record_t rec;
        if (!rk)
                return kd_fail(KDELAY_ERR_INVALID_ARG, errstr, errstr_size,
                               "a producer is required");
        kdelay_err_t err = kd_record_make(
            conf, task, id_out != NULL, id_out_size, &rec, errstr, errstr_size);
        if (err)
                return err;
        if ((err = kd_record_produce(rk, &rec, task, msg_opaque, conf,
                                     "application", errstr, errstr_size)))
                return err;
        if (id_out)
                memcpy(id_out, rec.id, strlen(rec.id) + 1);
        return KDELAY_OK;
}
