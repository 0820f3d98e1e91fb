/* SPDX-License-Identifier: Apache-2.0 */
/* The heads of the tier partitions: each one's first record at or after
 * an offset, such as where the forwarder group stands (kd_grouppos.h).
 * kdelayctl stats and audit read the tier heads with it; kdelayctl's
 * alone, so not in libkdelay (kd_ctlonly). */
#ifndef KD_GROUPPOS_HEADS_H
#define KD_GROUPPOS_HEADS_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>

/* A partition's head read by kd_grouppos_heads (m->err is 0). */
typedef void(kd_grouppos_head_cb_t)(const rd_kafka_message_t *m, void *opaque);

/* Reads the head of every partition of l — the first record at or after
 * the entry's offset — through rk (a kd_grouppos_client) for at most
 * budget_ms, calling cb once per head read. A partition whose read ends
 * at its end (read_committed: aborted records only) or in an error has
 * no head. Spends l's offsets (each head read: -1). Returns the error of
 * assigning l (then cb is never called). */
rd_kafka_resp_err_t kd_grouppos_heads(rd_kafka_t *rk,
                                      rd_kafka_topic_partition_list_t *l,
                                      int64_t budget_ms,
                                      kd_grouppos_head_cb_t *cb, void *opaque);

#endif
