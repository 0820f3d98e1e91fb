/* SPDX-License-Identifier: Apache-2.0 */
/* The journal (forwarder.fate_outage_policy=fire): every fire made without
 * a claim through a fate-store outage is also written to the topic
 * "<topic_prefix>.journal" (kd_journal_rec.h has the record), so that
 * when MySQL answers again each such fire becomes a FIRED row
 * (reconcile.c). exactly_once writes the record in the fire's
 * transaction. at_least_once writes two: a record of intent, and only
 * once it is acknowledged the fire (so that no fire is delivered with
 * nothing in the journal, whatever the crash point), then the record of
 * its delivery, and settles the task on that one's report
 * (fire_journal.c, fire_report.c). Owns f->journal. */
#ifndef KD_JOURNAL_H
#define KD_JOURNAL_H

#include "core/kd_fwd_core.h"

/* Sets the journal's topic name. */
void kd_journal_init(kd_fwd_t *f);
/* Produces t's journal record through rk with the message opaque given:
 * its fire, or its dead letter when its fire failed for good
 * (t->fire_failed), or with intent 1 the record of intent of the fire to
 * come; 0, or why librdkafka did not take it. */
rd_kafka_resp_err_t kd_journal_write(kd_fwd_t *f, const kd_task_t *t,
                                     rd_kafka_t *rk, void *opaque, int intent);
/* Asks the main producer for the journal topic's metadata now (policy
 * fire: at the start, and when an outage's fires begin), so that the
 * first record of an outage does not wait for it. */
void kd_journal_warm(kd_fwd_t *f);
/* The opaque of a record written with its fire (&f->journal->marker). */
void *kd_journal_marker(kd_fwd_t *f);
/* 1 when a delivery report's opaque is kd_journal_marker's. */
int kd_journal_is(const kd_fwd_t *f, const void *opaque);
/* The delivery report of such a record. */
void kd_journal_reported(kd_fwd_t *f, const rd_kafka_message_t *m);
/* A journal record failed with err: logged and counted; no fire without
 * a claim until writes are tried again (KD_JOURNAL_BROKEN_MS later). */
void kd_journal_broken(kd_fwd_t *f, rd_kafka_resp_err_t err);
/* 1 unless a journal record failed lately. */
int kd_journal_usable(const kd_fwd_t *f);
/* 1 when err says the journal refuses a record for good: its topic or
 * partition gone (librdkafka says "Unknown partition" for a record it
 * partitioned before the delete), an ACL, the record refused
 * (kd_perr_permanent). */
int kd_journal_refuses(rd_kafka_resp_err_t err);
/* librdkafka's topic.metadata.propagation.max.ms (its default): a broker
 * whose metadata lags (a topic just made or made again, a rolling
 * restart, a reassignment) may answer "unknown topic or partition" that
 * long for a topic that exists. */
#define KD_JOURNAL_GONE_CONFIRM_MS 30000
/* 1 when a record of delivery answered err is refused for good: err
 * refuses (kd_journal_refuses) and, when it says the topic or partition
 * is unknown, such answers have kept coming for at least
 * KD_JOURNAL_GONE_CONFIRM_MS (none delivered since the first): until
 * then the record is written again as for any error. */
int kd_journal_refused_for_good(kd_fwd_t *f, rd_kafka_resp_err_t err);

#endif
