/* SPDX-License-Identifier: Apache-2.0 */
/* The table of figures printed at the end of a run, and its verdict. */
#ifndef TT_REPORT_H
#define TT_REPORT_H

#include <stdio.h>

#include "faults.h"
#include "fleet.h"
#include "torture.h"
#include "verify.h"

/* Everything the table shows besides the tasks; all borrowed. */
typedef struct tt_report_in {
        const tt_opts_t *opts;
        const tt_names_t *names;
        const tt_task_t *tasks;
        size_t n;
        const tt_fault_counts_t *faults;
        const tt_fleet_t *fleet;
        const tt_verifier_t *verifier; /* stopped */
        int64_t t0;
        int64_t wall_ms;
        int caught_up;    /* the verifier reached the end of every topic */
        long fate_rows;   /* -1: the fate table could not be read */
        int stop_unclean; /* forwarders not exiting 0 at the end */
        /* kdelayctl audit --fix after the forwarders stopped (before the
         * fate table is read): FIRING rows it found, those it fixed
         * (delivered), and those left; ok = 0 when it did not run. */
        int audit_ok;
        long audit_firing, audit_fixed, audit_pending, audit_unknown;
        int64_t drain_ms;      /* how long the drain waited */
        const char *drain_why; /* how it ended */
        int interrupted;       /* SIGINT/SIGTERM: the figures are partial */
} tt_report_in_t;

/* No guarantee broken, but the harness did not do all it planned (a
 * fault never injected, a check it could not make): docs/torture.md,
 * "Verdict". */
#define TT_EXIT_HARNESS 3

/* Prints the table to out and returns the exit status: 1 when the
 * product broke a guarantee (anything lost, early, delivered after an
 * acknowledged cancel, corrupted, (exactly_once) duplicated, a FIRING row
 * left after the audit, a forwarder crashed, ...); else TT_EXIT_HARNESS
 * when the harness failed at something; else 0. */
int tt_report(const tt_report_in_t *in, FILE *out);

/* Writes one CSV line per task (times relative to T0) to path, for
 * post-mortems. 0 on success. */
int tt_report_dump(const tt_report_in_t *in, const char *path);

#endif
