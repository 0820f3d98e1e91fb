/* SPDX-License-Identifier: Apache-2.0 */
/* The heads of tier partitions (kd_grouppos_heads.h). */
#include "kd_grouppos_heads.h"

#include "kd_util.h"

rd_kafka_resp_err_t kd_grouppos_heads(rd_kafka_t *rk,
                                      rd_kafka_topic_partition_list_t *l,
                                      int64_t budget_ms,
                                      kd_grouppos_head_cb_t *cb, void *opaque)
{
        if (!l->cnt)
                return RD_KAFKA_RESP_ERR_NO_ERROR;
        rd_kafka_resp_err_t err = rd_kafka_assign(rk, l);
        if (err)
                return err;
        int seen = 0;
        int64_t end = kd_mono_ms() + budget_ms;
        while (seen < l->cnt && kd_mono_ms() < end) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                if (!m)
                        continue;
                rd_kafka_topic_partition_t *e =
                    m->rkt ? rd_kafka_topic_partition_list_find(
                                 l, rd_kafka_topic_name(m->rkt), m->partition)
                           : NULL;
                if (e && e->offset >= 0 && (m->err || m->offset >= e->offset)) {
                        e->offset = -1; /* its head is read, or there is none */
                        seen++;
                        if (!m->err)
                                cb(m, opaque);
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_assign(rk, NULL);
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}
