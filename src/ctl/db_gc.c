/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db gc (db_gc.h). */
#include "db_gc.h"

#include <stdio.h>

#include <cjson/cJSON.h>

#include <kdelay/kdelay.h>

#include "ctl_json.h"
#include "kd_conf.h"
#include "kd_fate.h"
#include "kd_util.h"

#define GC_PROGRESS_MS 5000
/* Runs are kept this much longer than the rows they cover (clocks). */
#define KD_GC_RUN_SLACK_MS (3600LL * 1000)

/* One progress line: rows deleted from table so far (the rate counts
 * from t0_ms). */
static void gc_progress(kd_cli_t *cli, const char *table, uint64_t deleted,
                        int batches, int64_t t0_ms)
{
        int64_t ms = kd_mono_ms() - t0_ms;
        kd_cli_log(cli, KDELAY_LOG_INFO,
                   "event=gc_progress table=%s deleted=%llu batches=%d "
                   "seconds=%.1f rows_per_s=%.0f",
                   table, (unsigned long long)deleted, batches, ms / 1000.0,
                   ms > 0 ? (double)deleted * 1000.0 / (double)ms : 0.0);
}

/* Before a batch: pauses --pause times as long as the previous batch
 * took (*batch_t0 its start, -1 before the first), then marks this one's
 * start. */
static void gc_pause(const kd_db_gc_opts_t *a, int64_t *batch_t0)
{
        if (*batch_t0 >= 0 && a->pause > 0) {
                kd_sleep_ms(
                    (int64_t)((double)(kd_mono_ms() - *batch_t0) * a->pause));
        }
        *batch_t0 = kd_mono_ms();
}

int kd_db_gc(kd_cli_t *cli, const kd_db_gc_opts_t *a, int json)
{
        char errstr[512];
        int64_t keep = cli->conf->fate_retention_ms;
        if (a->older && kdelay_duration_parse(a->older, &keep))
                return kd_cli_usage_error(cli,
                                          "--older-than \"%s\" is not a "
                                          "duration (e.g. 30d)",
                                          a->older);
        int64_t longest = 0;
        for (size_t i = 0; i < cli->conf->tiers.cnt; i++)
                if (kd_conf_tier_retention_ms(cli->conf, i) > longest)
                        longest = kd_conf_tier_retention_ms(cli->conf, i);
        if (keep < longest) {
                char k[32], l[32];
                return kd_cli_usage_error(
                    cli,
                    "a retention of %s is shorter than the longest tier "
                    "topic's (%s): a record still in Kafka, re-read after "
                    "its row is gone, would fire again",
                    kdelay_duration_format(keep, k, sizeof(k)),
                    kdelay_duration_format(longest, l, sizeof(l)));
        }
        kd_fate_store_t *st = NULL;
        if (kd_fate_store_new(&st, cli->conf))
                return KD_EXIT_ERROR;
        int64_t now = kd_now_ms(), t0 = kd_mono_ms(), shown = t0, batch_t0 = -1;
        uint64_t total = 0, n = 0;
        int batches = 0;
        kdelay_err_t err;
        do {
                gc_pause(a, &batch_t0);
                err =
                    kd_fate_gc(st, now - keep, now - KDELAY_MAX_DELAY_MS - keep,
                               a->batch, &n, errstr, sizeof(errstr));
                if (err)
                        break;
                total += n;
                batches++;
                /* Progress every few seconds: a gc of millions of rows
                 * runs for minutes, in thousands of batches. */
                if (kd_mono_ms() - shown >= GC_PROGRESS_MS) {
                        shown = kd_mono_ms();
                        gc_progress(cli, "kdelay_fate", total, batches, t0);
                }
        } while (n == (uint64_t)a->batch);
        /* The records of fires without a claim (kdelay_unclaimed) go with
         * the same retention, counted from when they were applied. */
        uint64_t unclaimed = 0;
        int ubatches = 0;
        int64_t ut0 = kd_mono_ms(); /* its rate counts from here */
        while (!err) {
                gc_pause(a, &batch_t0);
                err = kd_fate_gc_unclaimed(st, now - keep, a->batch, &n, errstr,
                                           sizeof(errstr));
                if (err || n == 0)
                        break;
                unclaimed += n;
                ubatches++;
                if (kd_mono_ms() - shown >= GC_PROGRESS_MS) {
                        shown = kd_mono_ms();
                        gc_progress(cli, "kdelay_unclaimed", unclaimed,
                                    ubatches, ut0);
                }
                if (n < (uint64_t)a->batch)
                        break;
        }
        /* Then the runs of delivered claims (kdelay_fired_run) recorded
         * an hour before the rows' horizon: a row a run covers was claimed
         * and due before the run was recorded, so it went above. The hour
         * is for clocks: a run is stamped by its forwarder's own clock,
         * a row's fire-at by the broker's (review: a forwarder running
         * behind would leave a row whose run went first, FIRING again). */
        uint64_t runs = 0;
        int rbatches = 0;
        int64_t rt0 = kd_mono_ms();
        while (!err) {
                gc_pause(a, &batch_t0);
                err = kd_fate_gc_runs(st, now - keep - KD_GC_RUN_SLACK_MS,
                                      a->batch, &n, errstr, sizeof(errstr));
                if (err || n == 0)
                        break;
                runs += n;
                rbatches++;
                if (kd_mono_ms() - shown >= GC_PROGRESS_MS) {
                        shown = kd_mono_ms();
                        gc_progress(cli, "kdelay_fired_run", runs, rbatches,
                                    rt0);
                }
                if (n < (uint64_t)a->batch)
                        break;
        }
        kd_fate_store_destroy(st);
        if (!err)
                kd_cli_log(cli, KDELAY_LOG_INFO,
                           "event=gc_done deleted=%llu unclaimed_deleted=%llu "
                           "runs_deleted=%llu batches=%d seconds=%.1f",
                           (unsigned long long)total,
                           (unsigned long long)unclaimed,
                           (unsigned long long)runs, batches,
                           (kd_mono_ms() - t0) / 1000.0);
        if (err) {
                fprintf(stderr, "%s: %s (deleted %llu rows before)\n",
                        cli->prog, errstr, (unsigned long long)total);
                return kd_cli_exit_code(err);
        }
        if (json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddNumberToObject(o, "deleted", (double)total);
                cJSON_AddNumberToObject(o, "batches", batches);
                cJSON_AddNumberToObject(o, "unclaimed_deleted",
                                        (double)unclaimed);
                cJSON_AddNumberToObject(o, "runs_deleted", (double)runs);
                kd_ctl_json_print(o);
        } else {
                printf("deleted %llu rows in %d batches\n",
                       (unsigned long long)total, batches);
                if (unclaimed)
                        printf("deleted %llu records of fires without a "
                               "claim\n",
                               (unsigned long long)unclaimed);
                if (runs)
                        printf("deleted %llu runs of delivered claims\n",
                               (unsigned long long)runs);
        }
        return KD_EXIT_OK;
}
