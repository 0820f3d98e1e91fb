/* SPDX-License-Identifier: Apache-2.0 */
/* A journal record (docs/wire-format.md, "The journal"): one fire made
 * without a claim through a fate-store outage
 * (forwarder.fate_outage_policy=fire). Its key is the task id; its value
 * one line of text, space-separated name=value fields:
 *
 *   v=1 fire_at=<ms> fired_at=<ms> topic=<tier topic> partition=<n>
 *   offset=<n> forwarder=<instance> [dead=<reason>]
 *   v=2 ... (the same fields) intent=1
 *
 * dead: the fire failed for good and the task was dead-lettered with that
 * kdelay-dead-reason instead of delivered (absent: delivered).
 * v=2 intent=1: a record of intent, written and acknowledged before the
 * fire it announces (at_least_once): that fire may have been delivered.
 * Version 2 so that a reader of version 1 skips it (counted malformed)
 * rather than take it for a delivery.
 * Topic names and instance tokens hold no space or '='. */
#ifndef KD_JOURNAL_REC_H
#define KD_JOURNAL_REC_H

#include <stddef.h>
#include <stdint.h>

/* Room for a formatted value. */
#define KD_JOURNAL_VALUE_MAX 512

typedef struct kd_journal_rec {
        int64_t fire_at_ms;
        int64_t fired_at_ms; /* when the fire was produced */
        char src_topic[256]; /* where the task's record was read */
        int32_t src_partition;
        int64_t src_offset;
        char forwarder[65]; /* the firing forwarder's instance token */
        char dead[32];      /* dead-lettered with this reason; "" =
                               delivered */
        int intent;         /* 1: a record of intent (v=2), written
                               before the fire; never with dead */
} kd_journal_rec_t;

/* Writes r's value into buf; its length, or -1 when it does not fit or a
 * name holds a space, '=' or a control character. */
int kd_journal_rec_format(const kd_journal_rec_t *r, char *buf, size_t size);
/* Reads a value of len bytes into *r: 0, or -1 when it is not a version 1
 * or 2 journal value with every field (later fields of a newer writer are
 * ignored; version 2 must say intent=1, version 1 must not). */
int kd_journal_rec_parse(const char *value, size_t len, kd_journal_rec_t *r);

#endif
