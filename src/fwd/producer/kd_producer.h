/* SPDX-License-Identifier: Apache-2.0 */
/* The producer room: the one owner of the forwarder's Kafka producers
 * (producer.c, producer_tophandles.c; its state, kd_producer_state.h, is
 * private to them). It holds the main producer (transactional in
 * exactly_once), at_least_once's solo producer (batches of one, for
 * records whose batch the broker refused as a whole) and bulk producer
 * (large batches for a backlog's late fires), their queues and
 * wake-up pipe, the topic handles, the count of produces awaiting their
 * report, and the producer's renewal (a new one after a fatal error) and
 * reset (a new one though healthy). Every other file asks it through the
 * functions below; check_fwd_layers.sh asserts that nobody else touches
 * its state. The loop's turn and the nested pump (kd_loop_pump.h), the
 * room's drain, wait on its wake-up pipe (kd_producer_wake_fd) and serve
 * the producers' reports through kd_producer_serve. */
#ifndef KD_PRODUCER_H
#define KD_PRODUCER_H

#include "core/kd_fwd_core.h"

/* The producers' delivery report callback (the fire stage's). */
typedef void kd_producer_dr_cb_t(rd_kafka_t *rk, const rd_kafka_message_t *m,
                                 void *opaque);

/* Lifecycle (fwd.c, loop.c). kd_producer_new: f->producer, empty; -1
 * out of memory. kd_producer_open: the main producer of the mode's
 * properties (borrowed: valid until the mode's destroy), reporting to
 * dr_cb, and the handles of every ladder tier and the dead topic (their
 * metadata fetched before the first hop). kd_producer_start: its queue
 * wakes kd_producer_wake_fd (-1, errno, when the pipe cannot be made).
 * kd_producer_close: every producer flushed, purged and destroyed (the
 * reports of produces still in flight free their orphan tasks);
 * kd_producer_free, last: the room itself. */
int kd_producer_new(kd_fwd_t *f);
kdelay_err_t kd_producer_open(kd_fwd_t *f, const char *const *defaults,
                              const char *const *forced,
                              kd_producer_dr_cb_t *dr_cb, char *errstr,
                              size_t errstr_size);
int kd_producer_start(kd_fwd_t *f);
int kd_producer_wake_fd(const kd_fwd_t *f);
void kd_producer_close(kd_fwd_t *f);
void kd_producer_free(kd_fwd_t *f);

/* The main producer (NULL before kd_producer_open and after
 * kd_producer_close): for the transactional calls, metadata, and to tell
 * it from the solo one. */
rd_kafka_t *kd_producer_main(const kd_fwd_t *f);

/* at_least_once: the solo producer, made now if missing (it shares the
 * main one's wake-up pipe); NULL when it cannot be made (logged).
 * kd_producer_solo_close ends it (if any): its produces purged and
 * reported (the fire stage retries them); a later need makes a new one. */
rd_kafka_t *kd_producer_solo(kd_fwd_t *f);
void kd_producer_solo_close(kd_fwd_t *f);

/* at_least_once: the bulk producer, for fires already late by more than
 * KD_BULK_LATE_MS (kd_mode_ctx.h: a backlog): linger.ms 5 and librdkafka's
 * largest batches, where the main one lingers 1 ms for an on-time fire's
 * precision (docs/forwarder.md, "Batches that grow with a backlog").
 * Made now if missing (it shares the main one's wake-up pipe and delivery
 * report callback; its produces count in flight alike, so a drain or a
 * stop waits for them before offsets are committed); NULL when it cannot
 * be made (logged; not asked again for 10 s: the fire goes through the
 * main one). It ends with the room (flushed first), or, failed for good
 * or with a renewed main producer, purged (its produces reported and
 * retried). */
rd_kafka_t *kd_producer_bulk(kd_fwd_t *f);
/* 1 when rk is the bulk producer. */
int kd_producer_is_bulk(const kd_fwd_t *f, const rd_kafka_t *rk);

/* The main producer's topic handles by name: one per topic it fires to,
 * made when the fire is claimed (or, when the claim came late, at the
 * produce), so that the topic's metadata is asked for at once. A produce
 * by name to a topic the producer has not written before waits for
 * librdkafka's once-a-second scan of unknown topics, and in exactly_once
 * the transaction's commit, which blocks the loop, waits with it: every
 * other fire was held up to a second by the first fire to each new target
 * (test_clients saw an on-time task 2.4-3.1 s late behind five new
 * targets). A direct-mapped cache: a slot's handle gives way to another
 * name's, so a flood of distinct targets costs a bounded table.
 *
 * The handle of topic (borrowed: valid until the next call or the
 * producer's replacement), made now if missing; NULL when librdkafka made
 * none (an invalid name, out of memory) or there is no producer: the
 * produce then goes by name, and only its first fire waits for the
 * metadata. */
rd_kafka_topic_t *kd_producer_topic(kd_fwd_t *f, const char *topic);

/* Produces the record vu (cnt fields, its topic by name in vu[0]) on rk,
 * the main, solo or bulk producer. KD_PRODUCE_BY_HANDLE: through the main
 * (or the bulk) producer's handle of the topic when rk is that one (vu[0]
 * becomes it). KD_PRODUCE_COUNTED: accepted, it counts in flight until its
 * report (kd_producer_reported); else the caller counts it (a journal record in
 * a fire's transaction, kd_journal.h). */
#define KD_PRODUCE_COUNTED   1u
#define KD_PRODUCE_BY_HANDLE 2u
rd_kafka_resp_err_t kd_producer_produce(kd_fwd_t *f, rd_kafka_t *rk,
                                        rd_kafka_vu_t *vu, size_t cnt,
                                        unsigned flags);

/* The in-flight count: a produce made elsewhere (a journal record, a
 * clock probe) was accepted; a report came (stamp: it counts as progress
 * for kd_producer_quiet, as a fire's report does; a probe's does not). */
void kd_producer_sent(kd_fwd_t *f);
void kd_producer_reported(kd_fwd_t *f, int stamp);
size_t kd_producer_inflight(const kd_fwd_t *f);

/* The drain (kd_loop_pump with kd_pump_produces_done): kd_producer_quiet
 * is 1 when no produce awaits its report, or none was reported for
 * KD_PUMP_STALL_MS since the drain began (kd_producer_drain_begin, which
 * counts as a report); kd_producer_drain pumps until quiet or the
 * monotonic deadline (-1). */
void kd_producer_drain_begin(kd_fwd_t *f);
int kd_producer_quiet(const kd_fwd_t *f);
int kd_producer_drain(kd_fwd_t *f, int64_t deadline);

/* Serving reports. kd_producer_wait: the main producer's reports for up
 * to wait_ms (a revoke waiting for the next fire time of the tasks
 * claimed here; 10 ms while the bulk one runs), then the bulk one's.
 * kd_producer_serve_main: the main producer's reports waiting now.
 * kd_producer_serve: the turn's (kd_loop_turn), the loop's and the
 * pump's: every producer's reports waiting now; a solo or bulk producer
 * that failed for good goes (its produces are retried, through a new
 * one), though not inside the nested pump (f->pumping): at the loop's
 * next turn. */
void kd_producer_wait(kd_fwd_t *f, int wait_ms);
void kd_producer_serve_main(kd_fwd_t *f);
void kd_producer_serve(kd_fwd_t *f);

/* Renewal and reset (exactly_once asks; the loop's next turn does it).
 * kd_producer_renew_soon: the producer failed for good and a new one may
 * recover (for_record: one record alone in its transaction broke it, and
 * it goes to the dead letters: exempt from the renewal interval).
 * kd_producer_reset_soon: a new producer though the old one is healthy
 * (after an abort for a refused record: librdkafka 2.0.2 keeps the
 * refused batch's sequence numbers, and the next transaction to write
 * that partition fails on the gap; a new producer starts a new epoch). */
void kd_producer_renew_soon(kd_fwd_t *f, int for_record);
int kd_producer_renew_due(const kd_fwd_t *f);
void kd_producer_reset_soon(kd_fwd_t *f);
int kd_producer_reset_due(const kd_fwd_t *f);

/* The loop's turn: when the main producer failed for good (its fatal
 * error), or a renewal or a reset is due, replaces it with a new one of
 * the same properties, whose queue wakes kd_producer_wake_fd (a new
 * pipe), and lets the mode recover (its renewed op): 1. -1 when it
 * cannot: an authorization failure, a renewal within
 * KD_RENEW_MIN_INTERVAL_MS of the last (unless for a record; a fence
 * keeps to it always), or the new producer failing; the forwarder stops
 * (kd_fwd_fatal) and exits non-zero. 0 when nothing was due. */
#define KD_RENEW_MIN_INTERVAL_MS 30000
int kd_producer_recover(kd_fwd_t *f);

#endif
