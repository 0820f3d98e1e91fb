/* SPDX-License-Identifier: Apache-2.0 */
/* kd_fwd_new refuses what cannot run, with errstr filled and conf and
 * store left to the caller; no broker is contacted. */
#include <string.h>

#include <kdelay/conf.h>

#include "kd_fate_mem.h"
#include "kd_test.h"
#include "modes/kd_mode.h"
#include "top/kd_fwd.h"

static kdelay_conf_t *conf_new(const char *const *kv)
{
        kdelay_conf_t *c = kdelay_conf_new();
        char errstr[256];
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        for (; kv && kv[0]; kv += 2)
                CU_ASSERT_EQUAL(
                    kdelay_conf_set(c, kv[0], kv[1], errstr, sizeof(errstr)),
                    KDELAY_OK);
        return c;
}

static void test_without_mysql_url_says_so(void)
{
        kdelay_conf_t *c = conf_new(NULL);
        kd_fwd_t *f = NULL;
        char errstr[256] = "unset";
        CU_ASSERT_EQUAL(kd_fwd_new(&f, c, NULL, NULL, errstr, sizeof(errstr)),
                        KDELAY_ERR_NOT_CONFIGURED);
        CU_ASSERT_PTR_NULL(f);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "mysql.url"));
        kdelay_conf_destroy(c); /* still the caller's */
}

static void test_exactly_once_needs_an_instance(void)
{
        static const char *const kv[] = {"forwarder.delivery", "exactly_once",
                                         NULL};
        kdelay_conf_t *c = conf_new(kv);
        kd_fate_store_t *store = NULL;
        CU_ASSERT_EQUAL_FATAL(kd_fate_mem_new(&store), KDELAY_OK);
        kd_fwd_t *f = NULL;
        char errstr[256] = "unset";
        CU_ASSERT_EQUAL(kd_fwd_new(&f, c, store, NULL, errstr, sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NULL(f);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "forwarder.instance"));
        kd_fate_store_destroy(store); /* both stay the caller's */
        kdelay_conf_destroy(c);
}

/* Properties that would break a guarantee, or that kdelay sets itself,
 * are refused with the reason; harmless values pass. */
static void test_guardrails_refuse_breaking_properties(void)
{
        static const struct {
                const char *name, *value, *says;
        } bad[] = {{"auto.offset.reset", "latest", "never delivered"},
                   {"enable.auto.commit", "true", "handled"},
                   {"isolation.level", "read_uncommitted", "aborted"},
                   {"acks", "1", "in-sync replicas"},
                   {"enable.idempotence", "false", "twice"},
                   {"group.id", "g", "forwarder.group_id"},
                   {"transactional.id", "t", "forwarder.instance"}};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                kdelay_conf_t *c = conf_new(NULL);
                char errstr[512] = "unset";
                CU_ASSERT_EQUAL(kdelay_conf_set_kafka(c, bad[i].name,
                                                      bad[i].value, errstr,
                                                      sizeof(errstr)),
                                KDELAY_OK);
                kd_fwd_t *f = NULL;
                CU_ASSERT_EQUAL(
                    kd_fwd_new(&f, c, NULL, NULL, errstr, sizeof(errstr)),
                    KDELAY_ERR_CONFIG);
                CU_ASSERT_PTR_NULL(f);
                CU_ASSERT_PTR_NOT_NULL(strstr(errstr, bad[i].name));
                CU_ASSERT_PTR_NOT_NULL(strstr(errstr, bad[i].says));
                kdelay_conf_destroy(c);
        }
        /* The values kdelay needs anyway pass the guard (and stop at the
         * missing mysql.url). */
        kdelay_conf_t *c = conf_new(NULL);
        char errstr[512];
        CU_ASSERT_EQUAL(kdelay_conf_set_kafka(c, "auto.offset.reset",
                                              "earliest", errstr,
                                              sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(
            kdelay_conf_set_kafka(c, "acks", "-1", errstr, sizeof(errstr)),
            KDELAY_OK);
        kd_fwd_t *f = NULL;
        CU_ASSERT_EQUAL(kd_fwd_new(&f, c, NULL, NULL, errstr, sizeof(errstr)),
                        KDELAY_ERR_NOT_CONFIGURED);
        kdelay_conf_destroy(c);
}

static void test_a_store_and_conf_are_taken(void)
{
        static const char *const kv[] = {"brokers", "127.0.0.1:1",
                                         "forwarder.instance", "t1", NULL};
        kdelay_conf_t *c = conf_new(kv);
        kd_fate_store_t *store = NULL;
        CU_ASSERT_EQUAL_FATAL(kd_fate_mem_new(&store), KDELAY_OK);
        kd_fwd_t *f = NULL;
        char errstr[256] = "";
        CU_ASSERT_EQUAL_FATAL(
            kd_fwd_new(&f, c, store, NULL, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_STRING_EQUAL(f->mode->name, "at_least_once");
        CU_ASSERT_STRING_EQUAL(f->instance, "t1");
        kd_fwd_destroy(f); /* frees conf and store (LeakSanitizer checks) */
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_without_mysql_url_says_so),
            KD_TEST(test_exactly_once_needs_an_instance),
            KD_TEST(test_guardrails_refuse_breaking_properties),
            KD_TEST(test_a_store_and_conf_are_taken), KD_TEST_END};
        return kd_test_run("fwd_new", cases, NULL, NULL);
}
