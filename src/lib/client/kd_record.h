/* SPDX-License-Identifier: Apache-2.0 */
/* A task made into its tier record: validated, its due time and id
 * resolved, its tier chosen, its wire-format headers built. The one path
 * from a kdelay_task_t to a Kafka record, shared by the library's own
 * client (client.c) and by scheduling through the application's producer
 * (record.c: kdelay_task_record, kdelay_produce). */
#ifndef KD_RECORD_H
#define KD_RECORD_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

typedef struct kd_record {
        char topic[256];            /* the tier topic */
        char id[KDELAY_ID_MAX + 1]; /* the task's id, given or generated */
        int64_t fire_at_ms;         /* the resolved due time */
        rd_kafka_headers_t *hdrs;   /* owned until produced (librdkafka
                                       takes it) or kd_record_clear */
} kd_record_t;

/* Makes task into *rec. When the caller wants the id (want_id),
 * id_out_size must hold it and its NUL, or KDELAY_ERR_INVALID_ARG (a cut
 * id would cancel another task). Nothing is allocated on error. conf is
 * borrowed. */
kdelay_err_t kd_record_make(const kdelay_conf_t *conf,
                            const kdelay_task_t *task, int want_id,
                            size_t id_out_size, kd_record_t *rec, char *errstr,
                            size_t errstr_size);

/* Produces rec with task's key and value (copied) through rk, msg_opaque
 * as its opaque, and logs it (debug, on conf's log; `by` names the
 * producer: "client" or "application"). On success rk took rec->hdrs (now
 * NULL). On failure rec's headers are destroyed and errstr says why:
 * KDELAY_ERR_QUEUE_FULL or KDELAY_ERR_KAFKA. */
kdelay_err_t kd_record_produce(rd_kafka_t *rk, kd_record_t *rec,
                               const kdelay_task_t *task, void *msg_opaque,
                               const kdelay_conf_t *conf, const char *by,
                               char *errstr, size_t errstr_size);

/* Destroys rec's headers if it still has them. */
void kd_record_clear(kd_record_t *rec);

#endif
