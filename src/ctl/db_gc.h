/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db gc: the rows past the retention deleted batch by batch:
 * decided fate rows, the records of fires without a claim, the runs of
 * delivered claims. */
#ifndef DB_GC_H
#define DB_GC_H

#include "cli.h"

/* db gc's own options. */
typedef struct kd_db_gc_opts {
        const char *older; /* --older-than; NULL = mysql.fate_retention */
        int batch;         /* --batch: rows per statement */
        double pause;      /* --pause: per batch, times the batch's time */
} kd_db_gc_opts_t;

/* Deletes what is older than the retention (one shorter than the longest
 * tier topic's is refused: a usage error), progress on stderr, then the
 * totals on stdout: lines, or one JSON object (json). The exit code. */
int kd_db_gc(kd_cli_t *cli, const kd_db_gc_opts_t *o, int json);

#endif
