/* SPDX-License-Identifier: Apache-2.0 */
/* Fire stage, the journal records of a fire without a claim
 * (fire_journal.c): for the fire stage's own files only (kd_fire.h says
 * which). */
#ifndef KD_FIRE_JOURNAL_H
#define KD_FIRE_JOURNAL_H

#include "core/kd_fwd_core.h"

/* 1 when a produce of t as `as` is put on record by its journal record
 * and the mode writes that record with the produce (with 1: exactly_once)
 * or around it (with 0: at_least_once). */
int kd_fire_journal_with(const kd_fwd_t *f, const kd_task_t *t,
                         kd_task_state_t as, int with);
/* t's journal record, in the transaction its fire (or dead letter) was
 * just produced in through rk; one that cannot be written fails the
 * transaction. */
void kd_fire_journal_with_fire(kd_fwd_t *f, kd_task_t *t, rd_kafka_t *rk);
/* at_least_once: t's record of intent (intent 1: the fire follows its
 * delivery) or of delivery (0: t settles on its report). */
void kd_fire_journal_send(kd_fwd_t *f, kd_task_t *t, int intent);
/* The journal refuses t's record of delivery for good (err): the fire
 * is applied from memory instead. */
void kd_fire_journal_refused(kd_fwd_t *f, kd_task_t *t,
                             rd_kafka_resp_err_t err);

#endif
