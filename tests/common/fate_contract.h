/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the fate store contract (kd_fate_contract.h): what its two files
 * share. Every case runs on a new store over an empty table. */
#ifndef FATE_CONTRACT_H
#define FATE_CONTRACT_H

#include <stddef.h>
#include <stdint.h>

#include "kd_fate_contract.h"

extern kd_fate_store_t *kd_fc_store; /* this case's; NULL: open failed */
extern char kd_fc_errstr[256];       /* the last call's */

#define KD_FC_NEED_STORE() CU_ASSERT_PTR_NOT_NULL_FATAL(kd_fc_store)

/* The implementation's put (kd_fate_contract_t). */
int kd_fc_put(const char *id, kdelay_fate_t fate, int64_t fire_at_ms,
              int64_t decided_at_ms);
uint64_t kd_fc_stmts(void);
/* A claim item of id (borrowed, like token). */
kd_fate_claim_t kd_fc_item(const char *id, int64_t fire_at, const char *token);
/* Calls that must succeed (asserted). */
kd_fate_claim_t kd_fc_claim1(const char *id, int64_t fire_at,
                             const char *owner);
void kd_fc_fire1(const char *id);
kdelay_status_t kd_fc_status1(const char *id);
kdelay_status_t kd_fc_status_n(const char *id, size_t len);
kdelay_err_t kd_fc_cancel1(const char *id);

/* The cases of fate_contract_update.c. */
void test_takeover_is_compare_and_set(void);
void test_lease_holds_off_takeover_until_it_passes(void);
void test_own_previous_takeover_ignores_the_lease(void);
void test_takeover_of_a_row_without_owner(void);
void test_mark_fired_moves_only_firing(void);
void test_mark_dead_moves_only_firing(void);
void test_note_cancelled_sets_due_time_once(void);
void test_gc_deletes_only_expired_rows(void);

/* The cases of fate_contract_audit.c. */
void test_firing_rows_carry_their_source(void);
void test_lookup_reads_a_batch_of_fates(void);

/* The cases of fate_contract_unclaimed.c. */
void test_apply_unclaimed_fires_and_records(void);
void test_apply_unclaimed_again_changes_nothing(void);
void test_apply_unclaimed_dead_letters(void);
void test_apply_unclaimed_intents(void);
void test_cancel_waits_for_a_pending_journal(void);
void test_pending_clear_needs_the_epoch_read(void);
void test_pending_clear_leaves_a_live_owners_mark(void);

/* The cases of fate_contract_runs.c. */
void test_runs_cover_firing_rows(void);
void test_runs_cover_rows_of_other_owners(void);
void test_counts_split_covered_firing_rows(void);
void test_runs_of_another_prefix_do_not_cover(void);
void test_run_owner_edge_cases(void);
void test_takeover_of_a_covered_row_fails(void);
void test_firing_scan_skips_covered_rows(void);
void test_firing_scan_keeps_the_oldest_uncovered(void);
void test_gc_removes_rows_then_runs(void);
void test_mark_runs_arguments(void);

#define KD_FC_UPDATE_CASES                                                     \
        KD_TEST(test_takeover_is_compare_and_set),                             \
            KD_TEST(test_lease_holds_off_takeover_until_it_passes),            \
            KD_TEST(test_own_previous_takeover_ignores_the_lease),             \
            KD_TEST(test_takeover_of_a_row_without_owner),                     \
            KD_TEST(test_mark_fired_moves_only_firing),                        \
            KD_TEST(test_mark_dead_moves_only_firing),                         \
            KD_TEST(test_note_cancelled_sets_due_time_once),                   \
            KD_TEST(test_gc_deletes_only_expired_rows),                        \
            KD_TEST(test_firing_rows_carry_their_source),                      \
            KD_TEST(test_lookup_reads_a_batch_of_fates),                       \
            KD_TEST(test_apply_unclaimed_fires_and_records),                   \
            KD_TEST(test_apply_unclaimed_again_changes_nothing),               \
            KD_TEST(test_apply_unclaimed_dead_letters),                        \
            KD_TEST(test_apply_unclaimed_intents),                             \
            KD_TEST(test_cancel_waits_for_a_pending_journal),                  \
            KD_TEST(test_pending_clear_needs_the_epoch_read),                  \
            KD_TEST(test_pending_clear_leaves_a_live_owners_mark),             \
            KD_TEST(test_runs_cover_firing_rows),                              \
            KD_TEST(test_runs_cover_rows_of_other_owners),                     \
            KD_TEST(test_counts_split_covered_firing_rows),                    \
            KD_TEST(test_runs_of_another_prefix_do_not_cover),                 \
            KD_TEST(test_run_owner_edge_cases),                                \
            KD_TEST(test_takeover_of_a_covered_row_fails),                     \
            KD_TEST(test_firing_scan_skips_covered_rows),                      \
            KD_TEST(test_firing_scan_keeps_the_oldest_uncovered),              \
            KD_TEST(test_gc_removes_rows_then_runs),                           \
            KD_TEST(test_mark_runs_arguments)

#endif
