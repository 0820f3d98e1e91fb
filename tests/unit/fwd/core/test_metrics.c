/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the forwarder's metric table: every row well-formed,
 * counters, gauges, the histogram, the log-line form, dead letters by
 * reason and the Prometheus form. */
#include <stdio.h>
#include <string.h>

#include "core/kd_metrics.h"
#include "kd_test.h"

static const kd_build_labels_t test_build = {
    "9.9.9-dev+0123456789ab", "0123456789abcdef0123456789abcdef01234567", 42};

static void test_rows_are_well_formed(void)
{
        for (size_t i = 0; i < KD_M__COUNT; i++) {
                const kd_metric_info_t *r = &kd_metric_info[i];
                CU_ASSERT_PTR_NOT_NULL_FATAL(r->name);
                CU_ASSERT_PTR_NOT_NULL_FATAL(r->help);
                CU_ASSERT(strlen(r->help) > 5);
                /* Log keys and exported names: [a-z_] only. */
                CU_ASSERT_EQUAL(strspn(r->name, "abcdefghijklmnopqrstuvwxyz_"),
                                strlen(r->name));
                for (size_t j = 0; j < i; j++)
                        CU_ASSERT(strcmp(r->name, kd_metric_info[j].name));
        }
        for (size_t b = 1; b < KD_HIST_BUCKETS; b++)
                CU_ASSERT(kd_metric_bounds[b] > kd_metric_bounds[b - 1]);
        CU_ASSERT_EQUAL(kd_metric_bounds[0], 1);
        CU_ASSERT_EQUAL(kd_metric_bounds[KD_HIST_BUCKETS - 1], 60000);
}

static void test_counters_gauges_histogram(void)
{
        kd_metrics_t m;
        memset(&m, 0, sizeof(m));
        kd_metric_inc(&m, KD_M_FIRED);
        kd_metric_add(&m, KD_M_FIRED, 4);
        CU_ASSERT_EQUAL(kd_metric_get(&m, KD_M_FIRED), 5);
        kd_metric_set(&m, KD_M_HELD_NOW, 9);
        kd_metric_set(&m, KD_M_HELD_NOW, 3);
        CU_ASSERT_EQUAL(kd_metric_get(&m, KD_M_HELD_NOW), 3);
        kd_metric_max(&m, KD_M_HELD_MAX, 7);
        kd_metric_max(&m, KD_M_HELD_MAX, 2);
        CU_ASSERT_EQUAL(kd_metric_get(&m, KD_M_HELD_MAX), 7);
        CU_ASSERT_EQUAL(kd_metric_quantile(&m, KD_M_LATE, 0.5), -1);
        /* 0 ms and 1 ms land in le=1, 3 in le=5, 70000 in +Inf. */
        int64_t obs[] = {0, 1, 1, 3, 3, 3, 3, 3, 40, 70000};
        for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++)
                kd_metric_observe(&m, KD_M_LATE, obs[i]);
        CU_ASSERT_EQUAL(kd_metric_get(&m, KD_M_LATE), 10);
        CU_ASSERT_EQUAL(m.hist[KD_M_LATE].bucket[0], 3);
        CU_ASSERT_EQUAL(m.hist[KD_M_LATE].bucket[2], 5);
        CU_ASSERT_EQUAL(m.hist[KD_M_LATE].bucket[KD_HIST_BUCKETS], 1);
        CU_ASSERT_EQUAL(m.hist[KD_M_LATE].sum, 70057);
        CU_ASSERT_EQUAL(kd_metric_quantile(&m, KD_M_LATE, 0.5), 5);
        CU_ASSERT_EQUAL(kd_metric_quantile(&m, KD_M_LATE, 0.8), 5);
        CU_ASSERT_EQUAL(kd_metric_quantile(&m, KD_M_LATE, 0.9), 50);
        CU_ASSERT_EQUAL(kd_metric_quantile(&m, KD_M_LATE, 0.99), INT64_MAX);
        char buf[4096];
        CU_ASSERT(kd_metrics_format(&m, buf, sizeof(buf)) > 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, " late_ms_p50=5 late_ms_p99=inf"));
}

static void test_log_form_in_table_order(void)
{
        kd_metrics_t m;
        char buf[4096];
        memset(&m, 0, sizeof(m));
        kd_metric_add(&m, KD_M_READ, 12);
        kd_metric_max(&m, KD_M_HELD_MAX, 5);
        int n = kd_metrics_format(&m, buf, sizeof(buf));
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, " late_ms_p50=-1 late_ms_p99=-1"));
        kd_metric_observe(&m, KD_M_LATE, 2);
        n = kd_metrics_format(&m, buf, sizeof(buf));
        CU_ASSERT_EQUAL_FATAL(n, (int)strlen(buf));
        CU_ASSERT(strncmp(buf, " read=12 held=0 ", 16) == 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, " held_max=5 "));
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, " late_ms_count=1 late_ms_sum=2 "
                                           "late_ms_p50=2 late_ms_p99=2"));
        /* Every row appears once, in order. */
        const char *at = buf;
        for (size_t i = 0; i < KD_M__COUNT; i++) {
                char key[64];
                snprintf(key, sizeof(key), " %s", kd_metric_info[i].name);
                const char *hit = strstr(at, key);
                CU_ASSERT_PTR_NOT_NULL_FATAL(hit);
                at = hit + 1;
        }
        /* Too small a buffer: the length it needs, like snprintf. */
        char small[8];
        CU_ASSERT_EQUAL(kd_metrics_format(&m, small, sizeof(small)), n);
        CU_ASSERT_EQUAL(strlen(small), sizeof(small) - 1);
}

static void test_dead_letters_by_reason(void)
{
        static kd_metrics_t m; /* large: not on the stack */
        memset(&m, 0, sizeof(m));
        kd_metric_dead(&m, "missing-target");
        kd_metric_dead(&m, "bad-fire-at");
        kd_metric_dead(&m, "missing-target");
        CU_ASSERT_EQUAL(kd_metric_get(&m, KD_M_DEAD), 3);
        CU_ASSERT_EQUAL(m.dead_reasons, 2);
        CU_ASSERT_STRING_EQUAL(m.dead_reason[0], "missing-target");
        CU_ASSERT_EQUAL(m.dead_by_reason[0], 2);
        CU_ASSERT_EQUAL(m.dead_by_reason[1], 1);
        /* Past the table's room every new reason counts as "other". */
        static char names[40][16];
        for (int i = 0; i < 40; i++) {
                snprintf(names[i], sizeof(names[i]), "r%d", i);
                kd_metric_dead(&m, names[i]);
        }
        CU_ASSERT_EQUAL(m.dead_reasons, KD_METRIC_REASONS);
        CU_ASSERT_STRING_EQUAL(m.dead_reason[KD_METRIC_REASONS - 1], "other");
        int64_t sum = 0;
        for (size_t i = 0; i < m.dead_reasons; i++)
                sum += m.dead_by_reason[i];
        CU_ASSERT_EQUAL(sum, kd_metric_get(&m, KD_M_DEAD));
}

static void test_prometheus_form(void)
{
        static kd_metrics_t m;
        static char buf[32768];
        memset(&m, 0, sizeof(m));
        kd_metric_add(&m, KD_M_FIRED, 7);
        kd_metric_set(&m, KD_M_HELD_NOW, 3);
        kd_metric_observe(&m, KD_M_LATE, 2);    /* ms */
        kd_metric_observe(&m, KD_M_LATE, 1500); /* ms */
        kd_metric_hop(&m, 1);
        kd_metric_dead(&m, "bad-id");
        const char *tiers[] = {"1s", "5s"};
        int n = kd_metrics_format_prometheus(&m, tiers, 2, &test_build, buf,
                                             sizeof(buf));
        CU_ASSERT_FATAL(n > 0 && n == (int)strlen(buf));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(buf, "kdelay_build_info{version=\"9.9.9-dev+0123456789ab\","
                        "revision=\"0123456789abcdef0123456789abcdef01234567\","
                        "schema=\"42\"} 1\n"));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(buf, "# TYPE kdelay_forwarder_fired_total counter\n"
                        "kdelay_forwarder_fired_total 7\n"));
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\nkdelay_forwarder_held_now 3\n"));
        /* ms become seconds, buckets cumulative. */
        CU_ASSERT_PTR_NOT_NULL(
            strstr(buf, "# TYPE kdelay_forwarder_late_seconds histogram\n"));
        CU_ASSERT_PTR_NOT_NULL(strstr(
            buf, "kdelay_forwarder_late_seconds_bucket{le=\"0.002\"} 1\n"));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(buf, "kdelay_forwarder_late_seconds_bucket{le=\"2\"} 2\n"));
        CU_ASSERT_PTR_NOT_NULL(strstr(
            buf, "kdelay_forwarder_late_seconds_bucket{le=\"+Inf\"} 2\n"));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(buf, "kdelay_forwarder_late_seconds_sum 1.502\n"));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(buf, "kdelay_forwarder_late_seconds_count 2\n"));
        CU_ASSERT_PTR_NOT_NULL(
            strstr(buf, "kdelay_forwarder_hopped_to_total{tier=\"5s\"} 1\n"));
        CU_ASSERT_PTR_NOT_NULL(strstr(
            buf,
            "kdelay_forwarder_dead_by_reason_total{reason=\"bad-id\"} 1\n"));
        /* Too small a buffer: the length it needs. */
        char small[16];
        CU_ASSERT_EQUAL(kd_metrics_format_prometheus(&m, tiers, 2, &test_build,
                                                     small, sizeof(small)),
                        n);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_rows_are_well_formed),
            KD_TEST(test_counters_gauges_histogram),
            KD_TEST(test_log_form_in_table_order),
            KD_TEST(test_dead_letters_by_reason),
            KD_TEST(test_prometheus_form),
            KD_TEST_END};
        return kd_test_run("metrics", cases, NULL, NULL);
}
