/* SPDX-License-Identifier: Apache-2.0 */
/* How librdkafka's threads wake the loop: a queue's io event written into
 * a pipe the loop polls (the consumer's queue, loop.c; the main
 * producer's, the producer room). */
#ifndef KD_IO_WAKEUP_H
#define KD_IO_WAKEUP_H

#include <librdkafka/rdkafka.h>

/* librdkafka writes a byte to fds[1] whenever q turns non-empty; -1
 * (errno) when the pipe cannot be made. */
int kd_fwd_io_wakeup(rd_kafka_queue_t *q, int fds[2]);

#endif
