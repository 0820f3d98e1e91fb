/* SPDX-License-Identifier: Apache-2.0 */
/* Readiness (kd_ready_why): not ready before the first assignment; a
 * rebalance of a settled forwarder is not unreadiness until it lasts over
 * KD_READY_REBALANCE_MS; the other reasons in their order; the gauge. */
#include <stdlib.h>
#include <string.h>

#include "core/kd_metrics.h"
#include "kd_test.h"
#include "ops/kd_ops_state.h"
#include "ops/kd_ready.h"
#include "pipeline/kd_pipeline_state.h"
#include "store/kd_store_state.h"

/* A forwarder's state as readiness reads it: zeroed, not stopping. */
static const kd_build_labels_t test_build = {"9.9.9", "unknown", 1};

/* The forwarder and the rooms' state readiness reads, in one block (the
 * forwarder first: free(f) frees it). */
typedef struct fwd_rooms {
        kd_fwd_t f;
        kd_fwd_intake_t intake;
        kd_fwd_store_t store;
        kd_fwd_ops_t ops;
} fwd_rooms_t;

static kd_fwd_t *fwd_new(void)
{
        fwd_rooms_t *r = calloc(1, sizeof(*r));
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        kd_fwd_t *f = &r->f;
        f->intake = &r->intake;
        f->store = &r->store;
        f->ops = &r->ops;
        f->stop = &f->no_stop;
        return f;
}

static void test_a_rebalance_is_not_unreadiness(void)
{
        kd_fwd_t *f = fwd_new();
        const int64_t t0 = 1000000;
        /* Joining: never assigned. */
        CU_ASSERT_STRING_EQUAL(kd_ready_why(f, t0), "not in a settled group");
        f->intake->settled = 1;
        CU_ASSERT_PTR_NULL(kd_ready_why(f, t0));
        /* Revoked (as rebalance.c does): ready through the bound. */
        f->intake->revoked_at = t0;
        f->intake->settled = 0;
        CU_ASSERT_PTR_NULL(kd_ready_why(f, t0 + 1));
        CU_ASSERT_PTR_NULL(kd_ready_why(f, t0 + KD_READY_REBALANCE_MS));
        CU_ASSERT_STRING_EQUAL(kd_ready_why(f, t0 + KD_READY_REBALANCE_MS + 1),
                               "rebalance running for over 60 s");
        /* Assigned again: ready. */
        f->intake->settled = 1;
        CU_ASSERT_PTR_NULL(kd_ready_why(f, t0 + 2 * KD_READY_REBALANCE_MS));
        free(f);
}

static void test_other_reasons_in_order(void)
{
        kd_fwd_t *f = fwd_new();
        f->intake->settled = 1;
        f->no_stop = 1;
        CU_ASSERT_STRING_EQUAL(kd_ready_why(f, 1), "stopping");
        f->metrics.v[KD_M_TXN_ABORT_STREAK] = KD_READY_ABORT_STREAK - 1;
        CU_ASSERT_STRING_EQUAL(kd_ready_why(f, 1), "stopping");
        f->metrics.v[KD_M_TXN_ABORT_STREAK] = KD_READY_ABORT_STREAK;
        CU_ASSERT_STRING_EQUAL(kd_ready_why(f, 1),
                               "transactions keep aborting");
        f->store->down = 1;
        CU_ASSERT_STRING_EQUAL(kd_ready_why(f, 1), "MySQL does not answer");
        /* During a short rebalance the store's state still counts. */
        f->intake->revoked_at = 1;
        f->intake->settled = 0;
        CU_ASSERT_STRING_EQUAL(kd_ready_why(f, 2), "MySQL does not answer");
        strcpy(f->ops->tiers_why, "tier topics missing: p.tier.1s");
        CU_ASSERT_PTR_EQUAL(kd_ready_why(f, 2), f->ops->tiers_why);
        free(f);
}

/* The gauge is a row of the metric table: exported as
 * kdelay_forwarder_ready and logged as ready=. */
static void test_gauge(void)
{
        static kd_metrics_t m;
        static char buf[65536];
        const char *tiers[] = {"1s"};
        kd_metric_set(&m, KD_M_READY, 1);
        int n = kd_metrics_format_prometheus(&m, tiers, 1, &test_build, buf,
                                             sizeof(buf));
        CU_ASSERT_FATAL(n > 0 && (size_t)n < sizeof(buf));
        CU_ASSERT_PTR_NOT_NULL(strstr(buf,
                                      "# TYPE kdelay_forwarder_ready gauge\n"
                                      "kdelay_forwarder_ready 1\n"));
        kd_metric_set(&m, KD_M_READY, 0);
        CU_ASSERT(kd_metrics_format(&m, buf, sizeof(buf)) > 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, " ready=0 "));
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_a_rebalance_is_not_unreadiness),
            KD_TEST(test_other_reasons_in_order), KD_TEST(test_gauge),
            KD_TEST_END};
        return kd_test_run("ready", cases, NULL, NULL);
}
