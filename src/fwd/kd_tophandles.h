/* SPDX-License-Identifier: Apache-2.0 */
/* The producer's topic handles by name: one per topic it fires to, made
 * when the fire is claimed (or, when the claim came late, at the
 * produce), so that the topic's metadata is asked for at once. A produce
 * by name to a topic the producer has not written before waits for
 * librdkafka's once-a-second scan of unknown topics, and in exactly_once
 * the transaction's commit, which blocks the loop, waits with it: every
 * other fire was held up to a second by the first fire to each new target
 * (test_clients saw an on-time task 2.4-3.1 s late behind five new
 * targets). A direct-mapped cache: a slot's handle gives way to another
 * name's, so a flood of distinct targets costs a bounded table. Owns
 * f->kafka.tophandles; the handles belong to f->kafka.producer. */
#ifndef KD_TOPHANDLES_H
#define KD_TOPHANDLES_H

#include "kd_fwd_state.h"

/* The producer's handle of topic (borrowed: valid until the next call or
 * kd_tophandles_release), made now if missing; NULL when librdkafka made
 * none (an invalid name, out of memory) or there is no producer: the
 * produce then goes by name, and only its first fire waits for the
 * metadata. */
rd_kafka_topic_t *kd_tophandles_get(kd_fwd_t *f, const char *topic);

/* Drops every handle (before the producer is destroyed). */
void kd_tophandles_release(kd_fwd_kafka_t *k);

#endif
