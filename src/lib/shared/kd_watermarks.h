/* SPDX-License-Identifier: Apache-2.0 */
/* A partition's low and high watermarks, as rd_kafka_query_watermark_offsets
 * gives them, asked again while the partition's leader is moving or not
 * yet known (a topic just created answers NOT_LEADER_FOR_PARTITION for a
 * moment), within timeout_ms in all. */
#ifndef KD_WATERMARKS_H
#define KD_WATERMARKS_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>

rd_kafka_resp_err_t kd_watermarks(rd_kafka_t *rk, const char *topic,
                                  int32_t partition, int64_t *low,
                                  int64_t *high, int timeout_ms);

#endif
