/* SPDX-License-Identifier: Apache-2.0 */
/* The behaviour every fate store owes (kd_fate.h, docs/fate-protocol.md),
 * written once and run against each implementation, so the two are held
 * to the same: the in-memory store in tests/unit/lib/test_fate_mem.c, MySQL
 * in tests/integration/test_fate.c. */
#ifndef KD_FATE_CONTRACT_H
#define KD_FATE_CONTRACT_H

#include <stdint.h>

#include "kd_fate.h"
#include "kd_test.h"

/* How the contract reaches one implementation. */
typedef struct kd_fate_contract {
        int (*init)(void);    /* once before the cases; may be NULL */
        int (*cleanup)(void); /* once after; may be NULL */
        /* A new store over an empty table for one case; 0 on success.
         * The contract destroys it after the case. */
        int (*open)(kd_fate_store_t **storep);
        /* Writes a row as another process would have (no owner, updated
         * when decided; fire_at_ms -1 = none); 0 on success. */
        int (*put)(kd_fate_store_t *store, const char *id, kdelay_fate_t fate,
                   int64_t fire_at_ms, int64_t decided_at_ms);
} kd_fate_contract_t;

/* The contract as suite `name` (borrowed, like impl, which must outlive
 * the run). One contract suite per program. */
kd_test_suite_t kd_fate_contract_suite(const char *name,
                                       const kd_fate_contract_t *impl);

#endif
