/* SPDX-License-Identifier: Apache-2.0 */
/* Scheduling through the application's own librdkafka producer: the task
 * record goes into the application's open transaction, if any (written
 * if and only if that transaction commits), and its delivery is reported
 * to the application's delivery report callback. Include after, or
 * instead of, <kdelay/kdelay.h>; link librdkafka as well as libkdelay.
 *
 * Same validation, id generation, tier choice and headers as
 * kdelay_schedule() (one code path). What kdelay's own client forces on
 * its producer is here the application's choice: use an idempotent
 * producer with acks=all (or a transactional one), so that a task
 * reported delivered is in its tier topic for good, and do not let it
 * create topics (allow.auto.create.topics=false): a missing tier topic
 * must fail, not appear with the wrong timestamp type.
 *
 * Thread safety: conf is only read; any number of threads may use one
 * conf at once while no thread changes it. rk is used as librdkafka
 * allows (rd_kafka_producev from any thread). */
#ifndef KDELAY_PRODUCER_H
#define KDELAY_PRODUCER_H

#include <librdkafka/rdkafka.h>

#include <kdelay/kdelay.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Makes task into its record for a caller that produces it: writes the
 * tier topic's name into topic (256 bytes always suffice) and creates
 * *hdrsp, the task's user headers followed by the wire-format headers;
 * key and value are the task's, unchanged. id_out (may be NULL) gets the
 * task id; too small for it is KDELAY_ERR_INVALID_ARG. The caller owns
 * *hdrsp: rd_kafka_producev(..., RD_KAFKA_V_HEADERS(*hdrsp), ...) takes it
 * when it succeeds; otherwise rd_kafka_headers_destroy() it. On error
 * nothing is created. */
kdelay_err_t kdelay_task_record(const kdelay_conf_t *conf,
                                const kdelay_task_t *task, char *topic,
                                size_t topic_size, rd_kafka_headers_t **hdrsp,
                                char *id_out, size_t id_out_size, char *errstr,
                                size_t errstr_size);

/* Produces task through rk (borrowed: the application's producer): the
 * record of kdelay_task_record() with the task's key and value (copied),
 * msg_opaque as the message opaque of rk's delivery report. Returns once
 * the record is enqueued in rk; rk's delivery report says when it is
 * written (or, inside a transaction, the commit does).
 * KDELAY_ERR_QUEUE_FULL: rk's queue is full (serve rk with rd_kafka_poll
 * and call again); KDELAY_ERR_KAFKA: rk refused it (errstr says why; a
 * fatal or abortable transaction error is rk's to handle). On any error
 * nothing was enqueued. */
kdelay_err_t kdelay_produce(rd_kafka_t *rk, const kdelay_conf_t *conf,
                            const kdelay_task_t *task, void *msg_opaque,
                            char *id_out, size_t id_out_size, char *errstr,
                            size_t errstr_size);

#ifdef __cplusplus
}
#endif

#endif
