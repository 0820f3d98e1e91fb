/* SPDX-License-Identifier: Apache-2.0 */
/* Watermarks asked again while a leader moves (kd_watermarks.h). */
#include "kd_watermarks.h"

#include "kd_util.h"

/* Between two tries. */
#define KD_WATERMARKS_RETRY_MS 200

rd_kafka_resp_err_t kd_watermarks(rd_kafka_t *rk, const char *topic,
                                  int32_t partition, int64_t *low,
                                  int64_t *high, int timeout_ms)
{
        int64_t deadline = kd_mono_ms() + timeout_ms;
        for (;;) {
                int64_t left = deadline - kd_mono_ms();
                rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
                    rk, topic, partition, low, high, left > 0 ? (int)left : 1);
                int moving =
                    err == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
                    err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE;
                if (!moving ||
                    kd_mono_ms() + KD_WATERMARKS_RETRY_MS >= deadline)
                        return err;
                rd_kafka_poll(rk, KD_WATERMARKS_RETRY_MS);
        }
}
