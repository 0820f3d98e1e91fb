/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration object, config files and MySQL URLs (log quoting:
 * test_log.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <kdelay/conf.h>
#include <kdelay/kdelay.h>

#include "kd_conf.h"
#include "kd_kprops.h"
#include "kd_log.h"
#include "kd_mysql.h"
#include "kd_ratelimits.h"
#include "kd_secret.h"
#include "kd_targets.h"
#include "kd_test.h"
#include "kd_util.h"

#ifndef KDELAY_SOURCE_DIR
#error "KDELAY_SOURCE_DIR must name the source tree (see CMakeLists.txt)"
#endif

/* --- helpers
 * ------------------------------------------------------------------ */

/* Asserts that property name reads back as want. */
#define GET_IS(conf, name, want)                                               \
        do {                                                                   \
                char get_buf_[1024];                                           \
                CU_ASSERT_EQUAL_FATAL(kdelay_conf_get((conf), (name),          \
                                                      get_buf_,                \
                                                      sizeof(get_buf_)),       \
                                      KDELAY_OK);                              \
                CU_ASSERT_STRING_EQUAL(get_buf_, (want));                      \
        } while (0)

/* The value of pass-through property name as recorded, or NULL. */
static const char *kafka_kv(const kdelay_conf_t *conf, const char *name)
{
        for (size_t i = 0; i + 1 < conf->kafka_kv_cnt; i += 2)
                if (strcmp(conf->kafka_kv[i], name) == 0)
                        return conf->kafka_kv[i + 1];
        return NULL;
}

/* The value of name in conf's librdkafka conf ("" when unreadable). */
static const char *rk_get(const kdelay_conf_t *conf, const char *name,
                          char *buf, size_t size)
{
        if (rd_kafka_conf_get(conf->rk_conf, name, buf, &size) !=
            RD_KAFKA_CONF_OK)
                buf[0] = '\0';
        return buf;
}

/* Writes text to a new temporary file; path receives its name. */
static int write_temp(const char *text, char *path, size_t path_size)
{
        snprintf(path, path_size, "/tmp/kdelay-test-conf-XXXXXX");
        int fd = mkstemp(path);
        if (fd < 0)
                return -1;
        size_t len = strlen(text);
        ssize_t w = write(fd, text, len);
        close(fd);
        if (w != (ssize_t)len) {
                unlink(path);
                return -1;
        }
        return 0;
}

/* Loads text as a config file into conf; returns the result. */
static kdelay_err_t load_text(kdelay_conf_t *conf, const char *text, char *path,
                              size_t path_size, char *errstr,
                              size_t errstr_size)
{
        if (write_temp(text, path, path_size) != 0) {
                CU_FAIL("cannot write a temporary file");
                return KDELAY_ERR_SYSTEM;
        }
        errstr[0] = '\0';
        kdelay_err_t err =
            kdelay_conf_load_file(conf, path, errstr, errstr_size);
        unlink(path);
        return err;
}

/* Every kdelay property with its default text form. */
static const char *const defaults[][2] = {
    {"brokers", "127.0.0.1:9092"},
    {"topic_prefix", "kdelay"},
    {"tiers", "1s,30s,1m,1m30s,2m,3m,5m,8m,12m,20m,30m,45m,1h,1h30m,4h,6h,16h,"
              "1d,2d12h,7d"},
    {"mysql.url", ""},
    {"mysql.password", ""},
    {"mysql.password_env", "KDELAY_MYSQL_PASSWORD"},
    {"mysql.connect_timeout", "5"},
    {"topics.partitions", "6"},
    {"topics.replication_factor", "-1"},
    {"topics.retention_margin", "7d"},
    {"topics.dead_retention", "14d"},
    {"forwarder.delivery", "at_least_once"},
    {"forwarder.fate_outage_policy", "hold"},
    {"forwarder.fate_outage_after", "30s"},
    {"forwarder.transactional_id", ""},
    {"forwarder.transaction_interval", "100ms"},
    {"forwarder.max_fire_rate", "0"},
};

static void assert_defaults(const kdelay_conf_t *conf)
{
        for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
                GET_IS(conf, defaults[i][0], defaults[i][1]);
}

/* --- properties
 * ---------------------------------------------------------------- */

static void test_defaults(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        assert_defaults(conf);
        CU_ASSERT_EQUAL(conf->tiers.cnt, 20);
        CU_ASSERT_PTR_NULL(conf->mysql_url);
        CU_ASSERT_PTR_NULL(conf->mysql_password);
        CU_ASSERT_EQUAL(conf->topics_retention_margin_ms, 7 * 86400000LL);
        CU_ASSERT_EQUAL(conf->kafka_kv_cnt, 0);

        char buf[96];
        CU_ASSERT_EQUAL(kdelay_conf_get(conf, "no.such", buf, sizeof(buf)),
                        KDELAY_ERR_UNKNOWN_PROPERTY);
        CU_ASSERT_EQUAL(kdelay_conf_get(conf, NULL, buf, sizeof(buf)),
                        KDELAY_ERR_UNKNOWN_PROPERTY);
        /* Too small a buffer: the default ladder's text needs 75 bytes. */
        CU_ASSERT_EQUAL(kdelay_conf_get(conf, "tiers", buf, 74),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(kdelay_conf_get(conf, "tiers", buf, 75), KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(
            buf, "1s,30s,1m,1m30s,2m,3m,5m,8m,12m,20m,30m,45m,1h,1h30m,4h,6h,"
                 "16h,1d,2d12h,7d");

        char name[64];
        kd_conf_dead_topic(conf, name, sizeof(name));
        CU_ASSERT_STRING_EQUAL(name, "kdelay.dead");
        CU_ASSERT_TRUE(kd_conf_is_own_topic(conf, "kdelay.tier.30m"));
        CU_ASSERT_TRUE(kd_conf_is_own_topic(conf, "kdelay.dead"));
        /* Any tier topic, in the ladder or not: forwarders read them all. */
        CU_ASSERT_TRUE(kd_conf_is_own_topic(conf, "kdelay.tier.45s"));
        CU_ASSERT_TRUE(kd_conf_is_own_topic(conf, "kdelay.tier.1m30s"));
        CU_ASSERT_FALSE(kd_conf_is_own_topic(conf, "kdelay.tier.x"));
        CU_ASSERT_FALSE(kd_conf_is_own_topic(conf, "kdelay.tier."));
        CU_ASSERT_FALSE(kd_conf_is_own_topic(conf, "kdelay.tiers.5m"));
        CU_ASSERT_FALSE(kd_conf_is_own_topic(conf, "orders"));
        CU_ASSERT_TRUE(kd_conf_is_own_topic(conf, "kdelay.journal"));
        CU_ASSERT_FALSE(kd_conf_is_own_topic(conf, "kdelay"));
        CU_ASSERT_FALSE(kd_conf_is_own_topic(conf, "kdelaydead"));
        CU_ASSERT_FALSE(kd_conf_is_own_topic(conf, "kdelay-x.dead"));
        CU_ASSERT_FALSE(kd_conf_is_own_topic(conf, "kdela.dead"));
        /* 2 x 30m + 7d (tier 10 of the default ladder) */
        CU_ASSERT_STRING_EQUAL(conf->tiers.v[10].name, "30m");
        CU_ASSERT_EQUAL(kd_conf_tier_retention_ms(conf, 10),
                        2 * 1800000LL + 7 * 86400000LL);
        kdelay_conf_destroy(conf);
        kdelay_conf_destroy(NULL);
}

static void test_set_good(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char errstr[512];
        static const char *const kv[][3] = {
            /* name, value, read back */
            {"brokers", "k1:9092,k2:9092", "k1:9092,k2:9092"},
            {"topic_prefix", "acme.prod_delay-1", "acme.prod_delay-1"},
            {"tiers", "7d 5s,90s", "5s,1m30s,7d"},
            /* A password reads back as ***. */
            {"mysql.url", "mysql://u:p@db:3307/kd", "mysql://u:***@db:3307/kd"},
            {"mysql.password_env", "MY_PW", "MY_PW"},
            {"mysql.connect_timeout", "9", "9"},
            {"topics.partitions", "12", "12"},
            {"topics.replication_factor", "3", "3"},
            {"topics.retention_margin", "36h", "1d12h"},
            {"topics.dead_retention", "720h", "30d"},
            {"forwarder.delivery", "exactly_once", "exactly_once"},
            {"forwarder.fate_outage_policy", "fire", "fire"},
            {"forwarder.fate_outage_after", "90s", "1m30s"},
            {"forwarder.transactional_id", "fw-7", "fw-7"},
            {"forwarder.transaction_interval", "50ms", "50ms"},
            {"forwarder.max_fire_rate", "500", "500"},
        };
        for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
                CU_ASSERT_EQUAL(kdelay_conf_set(conf, kv[i][0], kv[i][1],
                                                errstr, sizeof(errstr)),
                                KDELAY_OK);
                GET_IS(conf, kv[i][0], kv[i][2]);
        }
        CU_ASSERT_EQUAL(conf->topics_partitions, 12);
        CU_ASSERT_EQUAL(conf->tiers.cnt, 3);
        CU_ASSERT_EQUAL(conf->topics_retention_margin_ms, 36 * 3600000LL);
        CU_ASSERT_EQUAL(conf->fwd_delivery, KD_DELIVERY_EXACTLY_ONCE);
        CU_ASSERT_EQUAL(conf->fwd_max_fire_rate, 500);

        /* The prefix is used for topic names. */
        char name[64];
        kd_conf_dead_topic(conf, name, sizeof(name));
        CU_ASSERT_STRING_EQUAL(name, "acme.prod_delay-1.dead");
        CU_ASSERT_TRUE(kd_conf_is_own_topic(conf, "acme.prod_delay-1.tier.5s"));
        CU_ASSERT_FALSE(kd_conf_is_own_topic(conf, "kdelay.tier.1s"));

        /* An empty mysql.url unsets it. */
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "mysql.url", "", errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_PTR_NULL(conf->mysql_url);
        GET_IS(conf, "mysql.url", "");
        kdelay_conf_destroy(conf);
}

static void test_set_unknown(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char errstr[512] = "";
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "no.such", "1", errstr, sizeof(errstr)),
            KDELAY_ERR_UNKNOWN_PROPERTY);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "no.such"));
        /* librdkafka names are not kdelay properties. */
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "linger.ms", "5", errstr, sizeof(errstr)),
            KDELAY_ERR_UNKNOWN_PROPERTY);
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "mysql", "x", errstr, sizeof(errstr)),
            KDELAY_ERR_UNKNOWN_PROPERTY);
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "tiers", NULL, errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(
            kdelay_conf_set(NULL, "tiers", "1s", errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_ARG);
        assert_defaults(conf);
        kdelay_conf_destroy(conf);
}

static void test_set_bad_values(void)
{
        static const struct {
                const char *name, *value;
                kdelay_err_t err;
        } bad[] = {
            {"tiers", "x", KDELAY_ERR_INVALID_TIERS},
            {"tiers", "", KDELAY_ERR_INVALID_TIERS},
            {"tiers", "1m,60s", KDELAY_ERR_INVALID_TIERS},
            {"tiers", "0s", KDELAY_ERR_INVALID_TIERS},
            {"topics.partitions", "0", KDELAY_ERR_CONFIG},
            {"topics.partitions", "abc", KDELAY_ERR_CONFIG},
            {"topics.partitions", "", KDELAY_ERR_CONFIG},
            {"topics.partitions", "5x", KDELAY_ERR_CONFIG},
            {"topics.partitions", "-1", KDELAY_ERR_CONFIG},
            {"topics.partitions", "99999999999", KDELAY_ERR_CONFIG},
            {"topics.replication_factor", "-2", KDELAY_ERR_CONFIG},
            {"mysql.connect_timeout", "0", KDELAY_ERR_CONFIG},
            {"topic_prefix", "a b", KDELAY_ERR_INVALID_TOPIC},
            {"topic_prefix", "", KDELAY_ERR_INVALID_TOPIC},
            {"topic_prefix", "a/b", KDELAY_ERR_INVALID_TOPIC},
            {"topic_prefix", "..", KDELAY_ERR_INVALID_TOPIC},
            {"mysql.url", "http://x", KDELAY_ERR_CONFIG},
            {"mysql.url", "mysql://u@h", KDELAY_ERR_CONFIG},
            {"mysql.url", "mysql://u@h/", KDELAY_ERR_CONFIG},
            {"mysql.url", "mysql://h/db", KDELAY_ERR_CONFIG},
            {"topics.retention_margin", "7", KDELAY_ERR_INVALID_DURATION},
            {"topics.dead_retention", "-1d", KDELAY_ERR_INVALID_DURATION},
            {"forwarder.delivery", "exactly-once", KDELAY_ERR_CONFIG},
            {"forwarder.delivery", "", KDELAY_ERR_CONFIG},
            {"forwarder.fate_outage_policy", "Fire", KDELAY_ERR_CONFIG},
            {"forwarder.fate_outage_after", "5", KDELAY_ERR_INVALID_DURATION},
            {"forwarder.max_fire_rate", "-1", KDELAY_ERR_CONFIG},
        };
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char errstr[512] = "";
                kdelay_err_t err = kdelay_conf_set(
                    conf, bad[i].name, bad[i].value, errstr, sizeof(errstr));
                if (err != bad[i].err)
                        fprintf(stderr, "\n%s=\"%s\": got %s, want %s\n",
                                bad[i].name, bad[i].value, kdelay_err_name(err),
                                kdelay_err_name(bad[i].err));
                CU_ASSERT_EQUAL(err, bad[i].err);
                CU_ASSERT_NOT_EQUAL(errstr[0], '\0');
                /* Nothing changed. */
                assert_defaults(conf);
        }
        /* The prefix limit: 200 characters. */
        char pfx[202];
        memset(pfx, 'p', sizeof(pfx));
        pfx[200] = '\0';
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "topic_prefix", pfx, NULL, 0),
                        KDELAY_OK);
        pfx[200] = 'p';
        pfx[201] = '\0';
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "topic_prefix", pfx, NULL, 0),
                        KDELAY_ERR_INVALID_TOPIC);
        CU_ASSERT_EQUAL(strlen(conf->topic_prefix), 200);
        kdelay_conf_destroy(conf);
}

static void test_password_hidden(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char errstr[512];
        GET_IS(conf, "mysql.password", "");
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.password", "s3cret!",
                                        errstr, sizeof(errstr)),
                        KDELAY_OK);
        GET_IS(conf, "mysql.password", "***");
        CU_ASSERT_STRING_EQUAL(conf->mysql_password, "s3cret!");
        kdelay_conf_destroy(conf);
}

/* A value longer than kdelay_conf_get's own 1 KB scratch buffer reads back
 * whole, and into a buffer too small, not at all (it was cut short at
 * 1023 bytes and returned as success; found by fuzz/fuzz_conf.c). */
static void test_get_long_value_whole_or_error(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        static char url[2048], back[4096];
        snprintf(url, sizeof(url), "mysql://u@h%01900d/db", 0);
        CU_ASSERT_EQUAL_FATAL(kdelay_conf_set(conf, "mysql.url", url, NULL, 0),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_conf_get(conf, "mysql.url", back, sizeof(back)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(back, url);
        CU_ASSERT_EQUAL(kdelay_conf_get(conf, "mysql.url", back, 1024),
                        KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(
            kdelay_conf_get(conf, "mysql.url", back, strlen(url) + 1),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_conf_get(conf, "mysql.url", back, strlen(url)),
                        KDELAY_ERR_INVALID_ARG);
        kdelay_conf_destroy(conf);
}

static void test_set_kafka(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char errstr[512] = "", buf[256];

        CU_ASSERT_EQUAL(kdelay_conf_set_kafka(conf, "linger.ms", "5", errstr,
                                              sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(kafka_kv(conf, "linger.ms"), "5");
        CU_ASSERT_STRING_EQUAL(rk_get(conf, "linger.ms", buf, sizeof(buf)),
                               "5");

        CU_ASSERT_EQUAL(kdelay_conf_set_kafka(conf, "no.such.prop", "1", errstr,
                                              sizeof(errstr)),
                        KDELAY_ERR_UNKNOWN_PROPERTY);
        CU_ASSERT_NOT_EQUAL(errstr[0], '\0');
        CU_ASSERT_PTR_NULL(kafka_kv(conf, "no.such.prop"));

        errstr[0] = '\0';
        CU_ASSERT_EQUAL(kdelay_conf_set_kafka(conf, "linger.ms", "abc", errstr,
                                              sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_NOT_EQUAL(errstr[0], '\0');
        /* The earlier value stays. */
        CU_ASSERT_STRING_EQUAL(kafka_kv(conf, "linger.ms"), "5");
        CU_ASSERT_EQUAL(conf->kafka_kv_cnt, 2);

        /* A later value replaces the earlier one, in place. */
        CU_ASSERT_EQUAL(kdelay_conf_set_kafka(conf, "client.id", "x", errstr,
                                              sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_conf_set_kafka(conf, "linger.ms", "20", errstr,
                                              sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(conf->kafka_kv_cnt, 4);
        CU_ASSERT_STRING_EQUAL(conf->kafka_kv[0], "linger.ms");
        CU_ASSERT_STRING_EQUAL(conf->kafka_kv[1], "20");
        CU_ASSERT_STRING_EQUAL(conf->kafka_kv[2], "client.id");
        CU_ASSERT_STRING_EQUAL(conf->kafka_kv[3], "x");
        CU_ASSERT_STRING_EQUAL(rk_get(conf, "linger.ms", buf, sizeof(buf)),
                               "20");
        /* kdelay's properties are untouched. */
        assert_defaults(conf);
        kdelay_conf_destroy(conf);
}

/* The value of name in a built librdkafka conf ("" when unreadable). */
static const char *rkc_get(const rd_kafka_conf_t *rkc, const char *name,
                           char *buf, size_t size)
{
        if (rd_kafka_conf_get(rkc, name, buf, &size) != RD_KAFKA_CONF_OK)
                buf[0] = '\0';
        return buf;
}

/* kd_producer_forced is what every producer's no-loss promise needs, and
 * it wins over the user's pass-through properties and over defaults. */
static void test_producer_forced(void)
{
        static const char *const want[] = {"enable.idempotence", "true", "acks",
                                           "all"};
        size_t n = 0;
        for (; kd_producer_forced[n]; n++) {
                CU_ASSERT_FATAL(n < 4);
                CU_ASSERT_STRING_EQUAL(kd_producer_forced[n], want[n]);
        }
        CU_ASSERT_EQUAL(n, 4);

        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char errstr[512] = "", buf[256];
        CU_ASSERT_EQUAL(
            kdelay_conf_set_kafka(conf, "acks", "1", errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_conf_set_kafka(conf, "enable.idempotence",
                                              "false", errstr, sizeof(errstr)),
                        KDELAY_OK);
        const char *ours[] = {"acks", "0", NULL};
        rd_kafka_conf_t *rkc = kd_conf_rk_conf(
            conf, NULL, ours, kd_producer_forced, errstr, sizeof(errstr));
        CU_ASSERT_PTR_NOT_NULL_FATAL(rkc);
        CU_ASSERT_STRING_EQUAL(
            rkc_get(rkc, "enable.idempotence", buf, sizeof(buf)), "true");
        /* librdkafka reads acks=all back as -1. */
        CU_ASSERT_STRING_EQUAL(rkc_get(rkc, "acks", buf, sizeof(buf)), "-1");
        rd_kafka_conf_destroy(rkc);

        /* Without the forced pairs the user's value stands: the check above
         * can fail. */
        rkc = kd_conf_rk_conf(conf, NULL, ours, NULL, errstr, sizeof(errstr));
        CU_ASSERT_PTR_NOT_NULL_FATAL(rkc);
        CU_ASSERT_STRING_EQUAL(rkc_get(rkc, "acks", buf, sizeof(buf)), "1");
        rd_kafka_conf_destroy(rkc);
        kdelay_conf_destroy(conf);
}

/* Checks one row of the reference against what the conf does: the name is
 * a property, the default is what a new conf reads back, and the values
 * cell's range and "empty = unset" hold. */
static void reference_row_check(char *row)
{
        char *cell[4];
        char *save = NULL, *tok = strtok_r(row, "|", &save);
        size_t n = 0;
        for (; tok && n < 4; tok = strtok_r(NULL, "|", &save)) {
                while (*tok == ' ')
                        tok++;
                char *end = tok + strlen(tok);
                while (end > tok && end[-1] == ' ')
                        *--end = '\0';
                cell[n++] = tok;
        }
        CU_ASSERT_EQUAL_FATAL(n, 4);
        CU_ASSERT_PTR_NULL(tok); /* no fifth cell */
        /* `name` */
        size_t len = strlen(cell[0]);
        CU_ASSERT_FATAL(len > 2 && cell[0][0] == '`' &&
                        cell[0][len - 1] == '`');
        cell[0][len - 1] = '\0';
        const char *name = cell[0] + 1;

        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char got[1024], want[1100], errstr[512];
        CU_ASSERT_EQUAL_FATAL(kdelay_conf_get(conf, name, got, sizeof(got)),
                              KDELAY_OK);
        if (*got && strcmp(name, "mysql.password")) {
                snprintf(want, sizeof(want), "`%s`", got);
                CU_ASSERT_STRING_EQUAL(cell[1], want);
        }
        CU_ASSERT_STRING_NOT_EQUAL(cell[3], "");

        /* "integer, LO .. HI" and "bytes, LO .. 2^40": both ends are
         * accepted, one past either is refused. */
        long lo, hi = 1L << 40;
        if (sscanf(cell[2], "integer, %ld .. %ld", &lo, &hi) == 2 ||
            sscanf(cell[2], "bytes, %ld .. 2^40", &lo) == 1) {
                const struct {
                        long v;
                        kdelay_err_t want;
                } edge[] = {{lo, KDELAY_OK},
                            {hi, KDELAY_OK},
                            {lo - 1, KDELAY_ERR_CONFIG},
                            {hi + 1, KDELAY_ERR_CONFIG}};
                for (size_t i = 0; i < 4; i++) {
                        char num[32];
                        snprintf(num, sizeof(num), "%ld", edge[i].v);
                        CU_ASSERT_EQUAL(kdelay_conf_set(conf, name, num, errstr,
                                                        sizeof(errstr)),
                                        edge[i].want);
                }
        }
        if (strstr(cell[2], "empty = unset")) {
                CU_ASSERT_EQUAL(
                    kdelay_conf_set(conf, name, "", errstr, sizeof(errstr)),
                    KDELAY_OK);
                CU_ASSERT_EQUAL(kdelay_conf_get(conf, name, got, sizeof(got)),
                                KDELAY_OK);
                CU_ASSERT_STRING_EQUAL(got, "");
        } else {
                CU_ASSERT_NOT_EQUAL(
                    kdelay_conf_set(conf, name, "", errstr, sizeof(errstr)),
                    KDELAY_OK);
        }
        kdelay_conf_destroy(conf);
}

/* The reference table (docs/configuration.md) says what the conf does. */
static void test_reference(void)
{
        char *text = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&text, &size);
        CU_ASSERT_PTR_NOT_NULL_FATAL(out);
        CU_ASSERT_EQUAL(kd_conf_write_reference(out), 0);
        CU_ASSERT_EQUAL_FATAL(fclose(out), 0);

        const char *head = "| property | default | values | meaning |\n"
                           "|---|---|---|---|\n";
        CU_ASSERT_EQUAL_FATAL(strncmp(text, head, strlen(head)), 0);
        size_t rows = 0;
        char *save = NULL;
        for (char *row = strtok_r(text + strlen(head), "\n", &save); row;
             row = strtok_r(NULL, "\n", &save)) {
                rows++;
                CU_ASSERT_EQUAL(row[0], '|');
                CU_ASSERT_EQUAL(row[strlen(row) - 1], '|');
                reference_row_check(row);
        }
        CU_ASSERT(rows >= 29);
        free(text);
}

static void test_set_pair(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char errstr[512];

        CU_ASSERT_EQUAL(
            kdelay_conf_set_pair(conf, "tiers=1s,5s", errstr, sizeof(errstr)),
            KDELAY_OK);
        GET_IS(conf, "tiers", "1s,5s");
        CU_ASSERT_EQUAL(conf->kafka_kv_cnt, 0);

        CU_ASSERT_EQUAL(
            kdelay_conf_set_pair(conf, "linger.ms=7", errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(kafka_kv(conf, "linger.ms"), "7");
        GET_IS(conf, "tiers", "1s,5s");

        /* The value is everything after the first '='. */
        CU_ASSERT_EQUAL(kdelay_conf_set_pair(conf, "mysql.password=a=b", errstr,
                                             sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(conf->mysql_password, "a=b");

        /* Errors keep their codes. */
        CU_ASSERT_EQUAL(
            kdelay_conf_set_pair(conf, "tiers=bogus", errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_TIERS);
        CU_ASSERT_EQUAL(kdelay_conf_set_pair(conf, "no.such.prop=1", errstr,
                                             sizeof(errstr)),
                        KDELAY_ERR_UNKNOWN_PROPERTY);
        CU_ASSERT_EQUAL(
            kdelay_conf_set_pair(conf, "linger.ms=abc", errstr, sizeof(errstr)),
            KDELAY_ERR_CONFIG);
        CU_ASSERT_EQUAL(
            kdelay_conf_set_pair(conf, "tiers", errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(
            kdelay_conf_set_pair(conf, "=5", errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_ARG);
        CU_ASSERT_EQUAL(
            kdelay_conf_set_pair(conf, NULL, errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_ARG);
        GET_IS(conf, "tiers", "1s,5s");
        CU_ASSERT_STRING_EQUAL(kafka_kv(conf, "linger.ms"), "7");
        kdelay_conf_destroy(conf);
}

static int log_calls;

static void log_cb(kdelay_log_level_t level, const char *line, void *opaque)
{
        (void)level;
        (void)line;
        (void)opaque;
        log_calls++;
}

static void test_dup(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char errstr[512], buf[256];
        static const char *const pairs[] = {
            "brokers=b1:9092",
            "topic_prefix=dup",
            "tiers=2s,2m",
            "mysql.url=mysql://u@h/db",
            "mysql.password=pw",
            "mysql.password_env=PW_ENV",
            "mysql.connect_timeout=3",
            "topics.partitions=3",
            "topics.replication_factor=2",
            "topics.retention_margin=1d",
            "topics.dead_retention=2d",
            "linger.ms=11",
            "client.id=dup-client",
        };
        for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
                CU_ASSERT_EQUAL_FATAL(kdelay_conf_set_pair(conf, pairs[i],
                                                           errstr,
                                                           sizeof(errstr)),
                                      KDELAY_OK);
        int opaque;
        kdelay_conf_set_log_cb(conf, log_cb, KDELAY_LOG_DEBUG, &opaque);

        kdelay_conf_t *dup = kdelay_conf_dup(conf);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dup);

        /* The copy is independent: changes to either do not leak. */
        CU_ASSERT_EQUAL(kdelay_conf_set_pair(conf, "brokers=changed", errstr,
                                             sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(
            kdelay_conf_set_pair(conf, "linger.ms=99", errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_conf_set_pair(dup, "topic_prefix=dup2", errstr,
                                             sizeof(errstr)),
                        KDELAY_OK);
        GET_IS(conf, "topic_prefix", "dup");
        GET_IS(dup, "brokers", "b1:9092");
        CU_ASSERT_STRING_EQUAL(kafka_kv(dup, "linger.ms"), "11");
        CU_ASSERT_STRING_EQUAL(rk_get(dup, "linger.ms", buf, sizeof(buf)),
                               "11");
        CU_ASSERT_EQUAL(kdelay_conf_set_pair(dup, "topic_prefix=dup", errstr,
                                             sizeof(errstr)),
                        KDELAY_OK);

        kdelay_conf_destroy(conf);

        /* Still readable after the original is gone (ASan checks). */
        GET_IS(dup, "brokers", "b1:9092");
        GET_IS(dup, "topic_prefix", "dup");
        GET_IS(dup, "tiers", "2s,2m");
        GET_IS(dup, "mysql.url", "mysql://u@h/db");
        GET_IS(dup, "mysql.password", "***");
        CU_ASSERT_STRING_EQUAL(dup->mysql_password, "pw");
        GET_IS(dup, "mysql.password_env", "PW_ENV");
        GET_IS(dup, "mysql.connect_timeout", "3");
        GET_IS(dup, "topics.partitions", "3");
        GET_IS(dup, "topics.replication_factor", "2");
        GET_IS(dup, "topics.retention_margin", "1d");
        GET_IS(dup, "topics.dead_retention", "2d");
        CU_ASSERT_EQUAL(dup->kafka_kv_cnt, 4);
        CU_ASSERT_STRING_EQUAL(kafka_kv(dup, "linger.ms"), "11");
        CU_ASSERT_STRING_EQUAL(kafka_kv(dup, "client.id"), "dup-client");
        CU_ASSERT_STRING_EQUAL(rk_get(dup, "client.id", buf, sizeof(buf)),
                               "dup-client");
        CU_ASSERT_PTR_EQUAL(dup->log_cb, log_cb);
        CU_ASSERT_PTR_EQUAL(dup->log_opaque, &opaque);
        CU_ASSERT_EQUAL(dup->log_level, KDELAY_LOG_DEBUG);

        /* Logging goes through the copied callback. */
        log_calls = 0;
        kd_log(dup, KDELAY_LOG_INFO, "event=test n=%d", 1);
        CU_ASSERT_EQUAL(log_calls, 1);

        /* The copy can be modified and duplicated again. */
        CU_ASSERT_EQUAL(
            kdelay_conf_set_pair(dup, "mysql.url=", errstr, sizeof(errstr)),
            KDELAY_OK);
        kdelay_conf_t *dup2 = kdelay_conf_dup(dup);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dup2);
        kdelay_conf_destroy(dup);
        GET_IS(dup2, "mysql.url", "");
        GET_IS(dup2, "tiers", "2s,2m");
        kdelay_conf_destroy(dup2);
}

static void test_log_level(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        log_calls = 0;
        kd_log(conf, KDELAY_LOG_ERROR, "event=nocb");
        CU_ASSERT_EQUAL(log_calls, 0);
        kdelay_conf_set_log_cb(conf, log_cb, KDELAY_LOG_WARNING, NULL);
        kd_log(conf, KDELAY_LOG_ERROR, "event=a");
        kd_log(conf, KDELAY_LOG_WARNING, "event=b");
        kd_log(conf, KDELAY_LOG_INFO, "event=c");
        kd_log(conf, KDELAY_LOG_DEBUG, "event=d");
        CU_ASSERT_EQUAL(log_calls, 2);
        kdelay_conf_destroy(conf);
}

/* --- config files
 * ---------------------------------------------------------------- */

static void test_load_good_file(void)
{
        static const char text[] =
            "# a test configuration\n"
            "brokers = \"k1:9092,k2:9092\";\n"
            "topic_prefix = \"dly\";\n"
            "tiers = [ \"7d\", \"5s\", \"1h\" ];\n"
            "kafka = [ \"linger.ms=5\", \"client.id=test=x\" ];\n"
            "mysql = {\n"
            "  url = \"mysql://u:p@db:3307/kd\";\n"
            "  password_env = \"PW\";\n"
            "  connect_timeout = 9;\n"
            "};\n"
            "topics = {\n"
            "  partitions = 12;\n"
            "  replication_factor = 3;\n"
            "  retention_margin = \"2d\";\n"
            "  dead_retention = \"30d\";\n"
            "};\n";
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char path[64], errstr[512], buf[256];
        kdelay_err_t err =
            load_text(conf, text, path, sizeof(path), errstr, sizeof(errstr));
        if (err)
                fprintf(stderr, "\nload: %s\n", errstr);
        CU_ASSERT_EQUAL_FATAL(err, KDELAY_OK);
        GET_IS(conf, "brokers", "k1:9092,k2:9092");
        GET_IS(conf, "topic_prefix", "dly");
        GET_IS(conf, "tiers", "5s,1h,7d");
        GET_IS(conf, "mysql.url", "mysql://u:***@db:3307/kd");
        GET_IS(conf, "mysql.password_env", "PW");
        GET_IS(conf, "mysql.connect_timeout", "9");
        GET_IS(conf, "topics.partitions", "12");
        GET_IS(conf, "topics.replication_factor", "3");
        GET_IS(conf, "topics.retention_margin", "2d");
        GET_IS(conf, "topics.dead_retention", "30d");
        CU_ASSERT_EQUAL(conf->kafka_kv_cnt, 4);
        CU_ASSERT_STRING_EQUAL(kafka_kv(conf, "linger.ms"), "5");
        CU_ASSERT_STRING_EQUAL(kafka_kv(conf, "client.id"), "test=x");
        CU_ASSERT_STRING_EQUAL(rk_get(conf, "linger.ms", buf, sizeof(buf)),
                               "5");
        kdelay_conf_destroy(conf);
}

static void test_load_partial_file_keeps_rest(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char path[64], errstr[512];
        CU_ASSERT_EQUAL_FATAL(
            kdelay_conf_set(conf, "brokers", "pre:1", errstr, sizeof(errstr)),
            KDELAY_OK);
        /* A tier list as a single string works as well. */
        CU_ASSERT_EQUAL_FATAL(load_text(conf, "tiers = \"2m 1s\";\n", path,
                                        sizeof(path), errstr, sizeof(errstr)),
                              KDELAY_OK);
        GET_IS(conf, "tiers", "1s,2m");
        GET_IS(conf, "brokers", "pre:1");
        GET_IS(conf, "topic_prefix", "kdelay");
        /* An empty file changes nothing. */
        CU_ASSERT_EQUAL_FATAL(
            load_text(conf, "", path, sizeof(path), errstr, sizeof(errstr)),
            KDELAY_OK);
        GET_IS(conf, "tiers", "1s,2m");
        kdelay_conf_destroy(conf);
}

/* Expects loading text to fail with err and an errstr containing
 * "<path>:<line>" (line > 0) and, when given, also `word`. */
static void load_bad(const char *text, kdelay_err_t want, int line,
                     const char *word)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char path[64], errstr[512], where[96];
        kdelay_err_t err =
            load_text(conf, text, path, sizeof(path), errstr, sizeof(errstr));
        if (err != want)
                fprintf(stderr, "\nload: got %s (%s), want %s\n",
                        kdelay_err_name(err), errstr, kdelay_err_name(want));
        CU_ASSERT_EQUAL(err, want);
        snprintf(where, sizeof(where), "%s:%d", path, line);
        if (!strstr(errstr, where))
                fprintf(stderr, "\nerrstr \"%s\" lacks \"%s\"\n", errstr,
                        where);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, where));
        if (word && !strstr(errstr, word))
                fprintf(stderr, "\nerrstr \"%s\" lacks \"%s\"\n", errstr, word);
        if (word)
                CU_ASSERT_PTR_NOT_NULL(strstr(errstr, word));
        kdelay_conf_destroy(conf);
}

static void test_load_errors(void)
{
        /* Syntax errors, with their line. */
        load_bad("brokers = \"a\";\n\ntiers = [ \"1s\" \n", KDELAY_ERR_CONFIG,
                 4, NULL);
        load_bad("brokers = \"a\";\ntopic_prefix = ;\n", KDELAY_ERR_CONFIG, 2,
                 NULL);
        /* (Not `name "value"` without '=': libconfig 1.5 leaks the token
         * on that error, which LeakSanitizer reports.) */
        load_bad("brokers = \"a\";\n\n= 5;\n", KDELAY_ERR_CONFIG, 3, NULL);
        load_bad("tiers = [ \"1s\", 5 ];\n", KDELAY_ERR_CONFIG, 1, NULL);
        /* Unknown settings, top level and nested. */
        load_bad("brokers = \"a\";\nfrobnicate = 1;\n",
                 KDELAY_ERR_UNKNOWN_PROPERTY, 2, "frobnicate");
        load_bad("mysql = {\n  url = \"mysql://u@h/db\";\n  uri = \"x\";\n};\n",
                 KDELAY_ERR_UNKNOWN_PROPERTY, 3, "mysql.uri");
        /* Bad values. */
        load_bad("\ntiers = [ \"1s\", \"bogus\" ];\n", KDELAY_ERR_INVALID_TIERS,
                 2, "bogus");
        load_bad("tiers = ( \"1s\", 5 );\n", KDELAY_ERR_INVALID_TIERS, 1, NULL);
        load_bad("tiers = [ ];\n", KDELAY_ERR_INVALID_TIERS, 1, NULL);
        load_bad("topics = {\n partitions = 0;\n};\n", KDELAY_ERR_CONFIG, 2,
                 "topics.partitions");
        load_bad("topics = {\n partitions = \"many\";\n};\n", KDELAY_ERR_CONFIG,
                 2, NULL);
        load_bad("topic_prefix = \"a b\";\n", KDELAY_ERR_INVALID_TOPIC, 1,
                 NULL);
        load_bad("mysql = { url = \"http://x/y\"; };\n", KDELAY_ERR_CONFIG, 1,
                 "mysql.url");
        load_bad("brokers = [ \"a\", \"b\" ];\n", KDELAY_ERR_CONFIG, 1, NULL);
        /* Kafka entries must be name=value, known and valid. */
        load_bad("kafka = [ \"linger.ms=5\",\n \"linger.ms\" ];\n",
                 KDELAY_ERR_CONFIG, 1, "kafka");
        load_bad("kafka = [ \"=5\" ];\n", KDELAY_ERR_CONFIG, 1, NULL);
        load_bad("kafka = [ 5 ];\n", KDELAY_ERR_CONFIG, 1, NULL);
        load_bad("\nkafka = [ \"no.such.prop=1\" ];\n",
                 KDELAY_ERR_UNKNOWN_PROPERTY, 2, "no.such.prop");
        load_bad("kafka = [ \"message.max.bytes=abc\" ];\n", KDELAY_ERR_CONFIG,
                 1, "message.max.bytes");
}

/* 64-bit integers in a file are read as written (libconfig 1.5 wraps an
 * integer without an L suffix to 32 bits: 5368709120 became 1073741824),
 * whether written with L, without or in hex; strings and comments are left
 * alone; a value outside its property's range, however written, is
 * refused with the file's line, never wrapped into it. */
static void test_load_int64(void)
{
        static const char *const good[][2] = {
            {"forwarder = { max_held_bytes = 5368709120; };\n", "5368709120"},
            {"forwarder = { max_held_bytes = 5368709120L; };\n", "5368709120"},
            {"forwarder = { max_held_bytes = 0x140000000; };\n", "5368709120"},
            {"forwarder = { max_held_bytes = 1099511627776; };\n",
             "1099511627776"},
            {"forwarder = { max_held_bytes = 2147483648; };\n", "2147483648"},
            {"# 99999999999999999999 in a comment\n/* 99999999999999999999 "
             "*/ // 99999999999999999999\nforwarder = { max_held_bytes = "
             "4096; };\n",
             "4096"},
        };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                kdelay_conf_t *conf = kdelay_conf_new();
                CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
                char path[64], errstr[512];
                kdelay_err_t err =
                    load_text(conf, good[i][0], path, sizeof(path), errstr,
                              sizeof(errstr));
                if (err)
                        fprintf(stderr, "\n%s: %s\n", good[i][0], errstr);
                CU_ASSERT_EQUAL(err, KDELAY_OK);
                GET_IS(conf, "forwarder.max_held_bytes", good[i][1]);
                kdelay_conf_destroy(conf);
        }
        /* Strings keep their digits; the same text through
         * kd_conf_load_text. */
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char errstr[512];
        CU_ASSERT_EQUAL(
            kd_conf_load_text(conf,
                              "brokers = \"h:5368709120\"; forwarder = "
                              "{ max_held_bytes = 5368709120; };",
                              "text", errstr, sizeof(errstr)),
            KDELAY_OK);
        GET_IS(conf, "brokers", "h:5368709120");
        GET_IS(conf, "forwarder.max_held_bytes", "5368709120");
        kdelay_conf_destroy(conf);

        /* Out of range: refused, naming the property and the line. */
        load_bad("\nforwarder = { max_held_bytes = 2199023255552; };\n",
                 KDELAY_ERR_CONFIG, 2, "forwarder.max_held_bytes");
        load_bad("forwarder = {\n max_held_bytes = 2199023255552L; };\n",
                 KDELAY_ERR_CONFIG, 2, "2199023255552");
        /* Each of these wrapped into the property's range before. */
        load_bad("forwarder = { max_held = 4295000000; };\n", KDELAY_ERR_CONFIG,
                 1, "forwarder.max_held");
        load_bad("topics = { replication_factor = -4294967297; };\n",
                 KDELAY_ERR_CONFIG, 1, "-4294967297");
        load_bad("forwarder = { max_held_bytes = 0x10000000400; };\n",
                 KDELAY_ERR_CONFIG, 1, "forwarder.max_held_bytes");
        /* Beyond 64 bits: refused by the scan, with its line. */
        load_bad(
            "\n\nforwarder = { max_held_bytes = 99999999999999999999; };\n",
            KDELAY_ERR_CONFIG, 3, "does not fit 64 bits");
        load_bad("forwarder = { max_held_bytes = 99999999999999999999L; };\n",
                 KDELAY_ERR_CONFIG, 1, "99999999999999999999");
        load_bad("forwarder = { max_held_bytes = 0x1FFFFFFFFFFFFFFFF; };\n",
                 KDELAY_ERR_CONFIG, 1, "does not fit 64 bits");
        /* A float stays a float (and is no byte count). */
        load_bad("forwarder = { max_held_bytes = 5368709120.0; };\n",
                 KDELAY_ERR_CONFIG, 1, "forwarder.max_held_bytes");
}

static void test_load_missing_file(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char errstr[512] = "";
        const char *path = "/nonexistent/kdelay-test/missing.conf";
        CU_ASSERT_EQUAL(
            kdelay_conf_load_file(conf, path, errstr, sizeof(errstr)),
            KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, path));
        CU_ASSERT_EQUAL(
            kdelay_conf_load_file(conf, NULL, errstr, sizeof(errstr)),
            KDELAY_ERR_INVALID_ARG);
        assert_defaults(conf);
        kdelay_conf_destroy(conf);
}

static void test_load_repo_conf(void)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        char errstr[512] = "";
        kdelay_err_t err =
            kdelay_conf_load_file(conf, KDELAY_SOURCE_DIR "/conf/kdelay.conf",
                                  errstr, sizeof(errstr));
        if (err)
                fprintf(stderr, "\nconf/kdelay.conf: %s\n", errstr);
        CU_ASSERT_EQUAL_FATAL(err, KDELAY_OK);
        /* The shipped file restates the defaults (tiers: left to the
         * default, commented out, so a kept file follows it). */
        GET_IS(conf, "tiers",
               "1s,30s,1m,1m30s,2m,3m,5m,8m,12m,20m,30m,45m,1h,1h30m,4h,6h,16h,"
               "1d,2d12h,7d");
        GET_IS(conf, "topic_prefix", "kdelay");
        GET_IS(conf, "brokers", "127.0.0.1:9092");
        GET_IS(conf, "topics.partitions", "6");
        GET_IS(conf, "forwarder.delivery", "at_least_once");
        GET_IS(conf, "forwarder.transaction_interval", "100ms");
        GET_IS(conf, "forwarder.max_fire_rate", "0");
        /* No client.id: each forwarder names its clients after its
         * instance (two with one client.id hid each other). */
        CU_ASSERT_PTR_NULL(kafka_kv(conf, "client.id"));
        CU_ASSERT_PTR_NOT_NULL(conf->mysql_url);
        /* Its MySQL URL parses. */
        if (conf->mysql_url) {
                kd_mysql_params_t p;
                CU_ASSERT_EQUAL(kd_mysql_url_parse(conf->mysql_url, &p, errstr,
                                                   sizeof(errstr)),
                                KDELAY_OK);
                kd_mysql_params_clear(&p);
        }
        kdelay_conf_destroy(conf);
}

/* --- MySQL URLs
 * ------------------------------------------------------------------- */

static void test_mysql_url_full(void)
{
        kd_mysql_params_t p;
        char errstr[256];
        CU_ASSERT_EQUAL_FATAL(
            kd_mysql_url_parse("mysql://kd_user:secret@db.example.com:3307/"
                               "kdelay_prod",
                               &p, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(p.user, "kd_user");
        CU_ASSERT_PTR_NOT_NULL_FATAL(p.password);
        CU_ASSERT_STRING_EQUAL(p.password, "secret");
        CU_ASSERT_STRING_EQUAL(p.host, "db.example.com");
        CU_ASSERT_EQUAL(p.port, 3307);
        CU_ASSERT_STRING_EQUAL(p.db, "kdelay_prod");
        kd_mysql_params_clear(&p);
        CU_ASSERT_PTR_NULL(p.user);
        CU_ASSERT_PTR_NULL(p.db);
}

static void test_mysql_url_variants(void)
{
        kd_mysql_params_t p;
        char errstr[256];

        /* Percent-encoded password, default port. */
        CU_ASSERT_EQUAL_FATAL(kd_mysql_url_parse("mysql://u:p%40ss@h/db", &p,
                                                 errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(p.user, "u");
        CU_ASSERT_STRING_EQUAL(p.password, "p@ss");
        CU_ASSERT_STRING_EQUAL(p.host, "h");
        CU_ASSERT_EQUAL(p.port, 3306);
        CU_ASSERT_STRING_EQUAL(p.db, "db");
        kd_mysql_params_clear(&p);

        /* Encoded ':' and '/' and '%' in user and password. */
        CU_ASSERT_EQUAL_FATAL(
            kd_mysql_url_parse("mysql://a%3Ab:c%2fd%25e%3a@127.0.0.1:1/x", &p,
                               errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(p.user, "a:b");
        CU_ASSERT_STRING_EQUAL(p.password, "c/d%e:");
        CU_ASSERT_STRING_EQUAL(p.host, "127.0.0.1");
        CU_ASSERT_EQUAL(p.port, 1);
        CU_ASSERT_STRING_EQUAL(p.db, "x");
        kd_mysql_params_clear(&p);

        /* No password at all vs. an empty one. */
        CU_ASSERT_EQUAL_FATAL(kd_mysql_url_parse("mysql://u@h:65535/db", &p,
                                                 errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_PTR_NULL(p.password);
        CU_ASSERT_EQUAL(p.port, 65535);
        kd_mysql_params_clear(&p);
        CU_ASSERT_EQUAL_FATAL(
            kd_mysql_url_parse("mysql://u:@h/db", &p, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p.password);
        CU_ASSERT_STRING_EQUAL(p.password, "");
        kd_mysql_params_clear(&p);

        /* IPv6 literals in brackets, with and without a port: the host
         * without its brackets (as mysql_real_connect takes it). */
        static const struct {
                const char *url, *host;
                unsigned port;
        } v6[] = {
            {"mysql://root@[::1]:3306/db", "::1", 3306},
            {"mysql://root@[::1]/db", "::1", 3306},
            {"mysql://root:pw@[2001:db8::7]:13306/db?ssl-mode=REQUIRED",
             "2001:db8::7", 13306},
            {"mysql://root@[::ffff:192.0.2.1]:1/db", "::ffff:192.0.2.1", 1},
        };
        for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
                kdelay_err_t err =
                    kd_mysql_url_parse(v6[i].url, &p, errstr, sizeof(errstr));
                if (err)
                        fprintf(stderr, "\n%s: %s\n", v6[i].url, errstr);
                CU_ASSERT_EQUAL_FATAL(err, KDELAY_OK);
                CU_ASSERT_STRING_EQUAL(p.host, v6[i].host);
                CU_ASSERT_EQUAL(p.port, v6[i].port);
                CU_ASSERT_STRING_EQUAL(p.db, "db");
                kd_mysql_params_clear(&p);
        }
        /* Set as a property, too (parsed when set). */
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.url",
                                        "mysql://root@[::1]:1/db", errstr,
                                        sizeof(errstr)),
                        KDELAY_OK);
        /* The connector gets the address: nothing listens on port 1, so
         * the connection (not the URL) fails, and the message writes the
         * host in brackets. */
        MYSQL *conn = NULL;
        CU_ASSERT_EQUAL(kd_mysql_connect(conf, &conn, errstr, sizeof(errstr)),
                        KDELAY_ERR_MYSQL);
        CU_ASSERT_PTR_NULL(conn);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "at [::1]:1 as root"));
        kdelay_conf_destroy(conf);
}

/* The values with a parsed form are parsed once, when set, into their
 * typed fields, which the forwarder and kdelayctl read: set, a refused
 * value (the field keeps the previous one), unset with "", and copied by
 * kdelay_conf_dup. */
static void test_typed_fields(void)
{
        char errstr[512];
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL(conf->fwd_targets.cnt, 0);
        CU_ASSERT_EQUAL(conf->fwd_rate_rules.cnt, 0);
        CU_ASSERT_EQUAL(conf->mysql_ssl_mode_id, KD_MYSQL_SSL_UNSET);
        CU_ASSERT_EQUAL(conf->fwd_http_addr.host[0], '\0');

        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "forwarder.allowed_targets",
                                        "orders, events.*", errstr,
                                        sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "forwarder.target_rate_limits",
                                        "payments=500,orders.*=2000/400",
                                        errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "forwarder.http_listen",
                                        "[::1]:9464", errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.ssl_mode", "verify_ca",
                                        errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.url",
                                        "mysql://u:p%40ss@[::1]:3307/fate",
                                        errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(conf->mysql_params.host, "::1");
        CU_ASSERT_STRING_EQUAL(conf->mysql_params.password, "p@ss");
        CU_ASSERT_STRING_EQUAL(conf->mysql_params.db, "fate");
        CU_ASSERT_EQUAL(conf->mysql_params.port, 3307);
        CU_ASSERT_EQUAL(conf->fwd_targets.cnt, 2);
        CU_ASSERT(kd_targets_allow(&conf->fwd_targets, "events.a", 8));
        CU_ASSERT(!kd_targets_allow(&conf->fwd_targets, "other", 5));
        CU_ASSERT_EQUAL_FATAL(conf->fwd_rate_rules.cnt, 2);
        CU_ASSERT_EQUAL(
            kd_ratelimits_match(&conf->fwd_rate_rules, "orders.x", 8), 1);
        CU_ASSERT_EQUAL(conf->fwd_rate_rules.v[1].burst, 400.0);
        CU_ASSERT_STRING_EQUAL(conf->fwd_http_addr.host, "::1");
        CU_ASSERT_EQUAL(conf->fwd_http_addr.port, 9464);
        CU_ASSERT_EQUAL(conf->fwd_http_addr.v6, 1);
        CU_ASSERT_EQUAL(conf->mysql_ssl_mode_id, KD_MYSQL_SSL_VERIFY_CA);
        GET_IS(conf, "mysql.ssl_mode", "verify_ca"); /* read back as given */

        /* Refused: text and parsed form stay as they were. */
        CU_ASSERT_NOT_EQUAL(kdelay_conf_set(conf, "forwarder.allowed_targets",
                                            "bad topic", errstr,
                                            sizeof(errstr)),
                            KDELAY_OK);
        CU_ASSERT_NOT_EQUAL(
            kdelay_conf_set(conf, "forwarder.target_rate_limits", "payments=0",
                            errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_NOT_EQUAL(kdelay_conf_set(conf, "forwarder.http_listen",
                                            ":9464", errstr, sizeof(errstr)),
                            KDELAY_OK);
        CU_ASSERT_NOT_EQUAL(kdelay_conf_set(conf, "mysql.ssl_mode", "sometimes",
                                            errstr, sizeof(errstr)),
                            KDELAY_OK);
        CU_ASSERT_NOT_EQUAL(kdelay_conf_set(conf, "mysql.url", "mysql://x",
                                            errstr, sizeof(errstr)),
                            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(conf->mysql_params.db, "fate");
        CU_ASSERT_EQUAL(conf->fwd_targets.cnt, 2);
        CU_ASSERT_EQUAL(conf->fwd_rate_rules.cnt, 2);
        CU_ASSERT_EQUAL(conf->fwd_http_addr.port, 9464);
        CU_ASSERT_EQUAL(conf->mysql_ssl_mode_id, KD_MYSQL_SSL_VERIFY_CA);
        GET_IS(conf, "forwarder.allowed_targets", "orders, events.*");

        /* A copy has parsed forms of its own. */
        kdelay_conf_t *dup = kdelay_conf_dup(conf);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dup);
        CU_ASSERT_EQUAL(dup->fwd_targets.cnt, 2);
        CU_ASSERT_PTR_NOT_EQUAL(dup->fwd_targets.buf, conf->fwd_targets.buf);
        CU_ASSERT_EQUAL(dup->fwd_rate_rules.cnt, 2);
        CU_ASSERT_PTR_NOT_EQUAL(dup->fwd_rate_rules.buf,
                                conf->fwd_rate_rules.buf);
        CU_ASSERT_EQUAL(dup->fwd_http_addr.port, 9464);
        CU_ASSERT_EQUAL(dup->mysql_ssl_mode_id, KD_MYSQL_SSL_VERIFY_CA);
        CU_ASSERT_PTR_NOT_EQUAL(dup->mysql_params.db, conf->mysql_params.db);
        if (dup->mysql_params.db)
                CU_ASSERT_STRING_EQUAL(dup->mysql_params.db, "fate");

        /* "" unsets each. */
        const char *names[] = {
            "forwarder.allowed_targets", "forwarder.target_rate_limits",
            "forwarder.http_listen", "mysql.ssl_mode", "mysql.url"};
        for (size_t i = 0; i < KD_ARRAY_LEN(names); i++)
                CU_ASSERT_EQUAL(
                    kdelay_conf_set(conf, names[i], "", errstr, sizeof(errstr)),
                    KDELAY_OK);
        CU_ASSERT_EQUAL(conf->fwd_targets.cnt, 0);
        CU_ASSERT_EQUAL(conf->fwd_rate_rules.cnt, 0);
        CU_ASSERT_EQUAL(conf->fwd_http_addr.host[0], '\0');
        CU_ASSERT_EQUAL(conf->mysql_ssl_mode_id, KD_MYSQL_SSL_UNSET);
        CU_ASSERT_PTR_NULL(conf->mysql_params.host);
        CU_ASSERT_PTR_NULL(conf->mysql_params.db);
        CU_ASSERT_EQUAL(dup->fwd_targets.cnt, 2); /* the copy's own */
        CU_ASSERT_STRING_EQUAL(dup->mysql_params.host, "::1");
        kdelay_conf_destroy(dup);
        kdelay_conf_destroy(conf);
}

/* forwarder.allowed_targets: names and prefix* patterns, checked when set,
 * a list in the file. */
static void test_allowed_targets(void)
{
        kd_targets_t t;
        char errstr[256], path[64];
        CU_ASSERT_EQUAL_FATAL(kd_targets_parse(&t,
                                               " orders , mail.out ,events.*",
                                               errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_EQUAL(t.cnt, 3);
        static const struct {
                const char *topic;
                int allowed;
        } cases[] = {{"orders", 1},        {"orders2", 0}, {"order", 0},
                     {"mail.out", 1},      {"mail", 0},    {"events.", 1},
                     {"events.signup", 1}, {"events", 0},  {"x", 0}};
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                CU_ASSERT_EQUAL(kd_targets_allow(&t, cases[i].topic,
                                                 strlen(cases[i].topic)),
                                cases[i].allowed);
        kd_targets_clear(&t);
        /* Unset and "*": everything. */
        CU_ASSERT_EQUAL(kd_targets_parse(&t, NULL, errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT(kd_targets_allow(&t, "any", 3));
        CU_ASSERT_EQUAL(kd_targets_parse(&t, "*", errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT(kd_targets_allow(&t, "any", 3));
        kd_targets_clear(&t);
        static const char *const bad[] = {"a b", ",",     "*x", "a*b",
                                          "..",  "x,y z", "ü"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                CU_ASSERT_EQUAL(
                    kd_targets_parse(&t, bad[i], errstr, sizeof(errstr)),
                    KDELAY_ERR_CONFIG);
                CU_ASSERT_PTR_NOT_NULL(
                    strstr(errstr, "forwarder.allowed_targets"));
        }
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "forwarder.allowed_targets",
                                        "a b", errstr, sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "\"a b\""));
        CU_ASSERT_EQUAL(
            load_text(conf,
                      "forwarder = { allowed_targets = [ \"orders\", "
                      "\"events.*\" ]; };\n",
                      path, sizeof(path), errstr, sizeof(errstr)),
            KDELAY_OK);
        GET_IS(conf, "forwarder.allowed_targets", "orders,events.*");
        kdelay_conf_destroy(conf);
}

/* TLS parameters in the URL's query; a '?' in a password still works. */
static void test_mysql_url_query(void)
{
        kd_mysql_params_t p;
        char errstr[256] = "";
        CU_ASSERT_EQUAL_FATAL(
            kd_mysql_url_parse("mysql://u:pw@h:3307/db?ssl-mode=verify_ca&"
                               "ssl_ca=/etc/a%20b/ca.pem&ssl-cert=/c.pem&"
                               "ssl-key=/k@x.pem",
                               &p, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(p.user, "u");
        CU_ASSERT_STRING_EQUAL(p.password, "pw");
        CU_ASSERT_STRING_EQUAL(p.host, "h");
        CU_ASSERT_EQUAL(p.port, 3307);
        CU_ASSERT_STRING_EQUAL(p.db, "db");
        CU_ASSERT_EQUAL(p.ssl_mode, KD_MYSQL_SSL_VERIFY_CA);
        CU_ASSERT_STRING_EQUAL(p.ssl_ca, "/etc/a b/ca.pem");
        CU_ASSERT_STRING_EQUAL(p.ssl_cert, "/c.pem");
        CU_ASSERT_STRING_EQUAL(p.ssl_key, "/k@x.pem");
        kd_mysql_params_clear(&p);
        CU_ASSERT_EQUAL_FATAL(kd_mysql_url_parse("mysql://u:p?w@h/db", &p,
                                                 errstr, sizeof(errstr)),
                              KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(p.password, "p?w");
        CU_ASSERT_EQUAL(p.ssl_mode, KD_MYSQL_SSL_UNSET);
        kd_mysql_params_clear(&p);
        /* mysql.ssl_mode is checked when set. */
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.ssl_mode", "sometimes",
                                        errstr, sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "mysql.ssl_mode", "VERIFY_IDENTITY", NULL, 0),
            KDELAY_OK);
        kdelay_conf_destroy(conf);
}

/* Values by reference: env:NAME and file:PATH, for kdelay's properties and
 * librdkafka's; a file others may read is refused; no error shows the
 * secret. */
static void test_secret_refs(void)
{
        char errstr[512], path[64];
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        setenv("KD_TEST_PW", "pw-from-env", 1);
        unsetenv("KD_TEST_UNSET");
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "mysql.password", "env:KD_TEST_PW", NULL, 0),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(conf->mysql_password, "pw-from-env");
        GET_IS(conf, "mysql.password", "***");
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.password",
                                        "env:KD_TEST_UNSET", errstr,
                                        sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "KD_TEST_UNSET is not set"));
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.password", "env:1x",
                                        errstr, sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        /* librdkafka's, through -X (set_pair). */
        CU_ASSERT_EQUAL(kdelay_conf_set_pair(conf,
                                             "sasl.password=env:KD_TEST_PW",
                                             errstr, sizeof(errstr)),
                        KDELAY_OK);
        char v[64];
        size_t vlen = sizeof(v);
        CU_ASSERT_EQUAL(
            rd_kafka_conf_get(conf->rk_conf, "sasl.password", v, &vlen),
            RD_KAFKA_CONF_OK);
        CU_ASSERT_STRING_EQUAL(v, "pw-from-env");

        /* A file: its content without the trailing newline, mode 0600. */
        snprintf(path, sizeof(path), "/tmp/kd-test-secret-%d", (int)getpid());
        FILE *fp = fopen(path, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
        fputs("pw-from-file\n", fp);
        fclose(fp);
        char ref[96];
        snprintf(ref, sizeof(ref), "file:%s", path);
        CU_ASSERT_EQUAL(chmod(path, 0600), 0);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.password", ref, errstr,
                                        sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(conf->mysql_password, "pw-from-file");
        /* Readable by others: refused, and the message says how to fix. */
        CU_ASSERT_EQUAL(chmod(path, 0644), 0);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.password", ref, errstr,
                                        sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "0644"));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "chmod 600"));
        CU_ASSERT_PTR_NULL(strstr(errstr, "pw-from-file"));
        CU_ASSERT_EQUAL(kdelay_conf_set_pair(conf,
                                             "ssl.key.password=file:/no/such",
                                             errstr, sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "/no/such"));
        /* An invalid librdkafka value from a secret is not echoed. */
        CU_ASSERT_EQUAL(chmod(path, 0400), 0);
        char bad[96];
        snprintf(bad, sizeof(bad), "acks=file:%s", path);
        CU_ASSERT_EQUAL(kdelay_conf_set_pair(conf, bad, errstr, sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "not shown"));
        CU_ASSERT_PTR_NULL(strstr(errstr, "pw-from-file"));
        unlink(path);
        /* Empty file. */
        fp = fopen(path, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
        fclose(fp);
        CU_ASSERT_EQUAL(chmod(path, 0600), 0);
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.password", ref, errstr,
                                        sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "empty"));
        unlink(path);
        kdelay_conf_destroy(conf);
}

/* Resolves `value` for `name` and checks that it fails at once (a FIFO
 * without a writer used to block the open for ever: the alarm ends a
 * regression) with an error that names the path quoted. */
static void secret_refused_at_once(kdelay_conf_t *conf, const char *name,
                                   const char *value, const char *qpath)
{
        char errstr[512] = "";
        int64_t t0 = kd_mono_ms();
        alarm(10);
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, name, value, errstr, sizeof(errstr)),
            KDELAY_ERR_CONFIG);
        alarm(0);
        CU_ASSERT(kd_mono_ms() - t0 < 1000);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "not a regular file"));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, qpath));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, name));
}

/* A secret is read only from a regular file: a FIFO (no writer), a
 * directory and a device are refused without waiting, for references and
 * for mysql.password_file, and the error names the path (quoted). */
static void test_secret_not_regular(void)
{
        char dir[64] = "/tmp/kd-test-fifo-XXXXXX", fifo[96], ref[128],
             qfifo[128], errstr[512] = "";
        CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
        snprintf(fifo, sizeof(fifo), "%s/pw fifo", dir);
        CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
        snprintf(ref, sizeof(ref), "file:%s", fifo);
        snprintf(qfifo, sizeof(qfifo), "\"%s\"", fifo);
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        secret_refused_at_once(conf, "mysql.password", ref, qfifo);
        CU_ASSERT_PTR_NULL(conf->mysql_password);
        CU_ASSERT_EQUAL(kdelay_conf_set_pair(conf,
                                             "sasl.password=file:/dev/zero",
                                             errstr, sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "not a regular file"));
        snprintf(ref, sizeof(ref), "file:%s", dir);
        /* A path that needs no quotes has none (kd_log_quote). */
        secret_refused_at_once(conf, "mysql.password", ref, dir);

        /* mysql.password_file: read at connect, refused before any
         * connection is tried. */
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "mysql.url",
                                        "mysql://u@127.0.0.1:1/db", NULL, 0),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "mysql.password_file", fifo, NULL, 0),
            KDELAY_OK);
        MYSQL *conn = NULL;
        int64_t t0 = kd_mono_ms();
        alarm(10);
        CU_ASSERT_EQUAL(kd_mysql_connect(conf, &conn, errstr, sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        alarm(0);
        CU_ASSERT(kd_mono_ms() - t0 < 1000);
        CU_ASSERT_PTR_NULL(conn);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "not a regular file"));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, qfifo));
        kdelay_conf_destroy(conf);
        unlink(fifo);
        rmdir(dir);
}

static void test_mysql_url_errors(void)
{
        static const char *const bad[] = {
            NULL,
            "",
            "u:p@h/db",      /* no scheme */
            "http://u@h/db", /* wrong scheme */
            "mysql:/u@h/db",
            "mysql://h/db",     /* no user */
            "mysql://@h/db",    /* empty user */
            "mysql://:pw@h/db", /* empty user */
            "mysql://u@h",      /* no db */
            "mysql://u@h/",     /* empty db */
            "mysql://u@h/db/extra",
            "mysql://u@h/db?ssl=1", /* unknown parameter */
            "mysql://u@h/db?",
            "mysql://u@h/db?ssl-mode",
            "mysql://u@h/db?ssl-mode=bogus",
            "mysql://u@h/db?ssl-mode=",
            "mysql://u@h/db?ssl-ca=",
            "mysql://u@h/db?ssl-ca=%zz",
            "mysql://u@h/db?ssl-mode=REQUIRED&",
            "mysql://u@/db",      /* empty host */
            "mysql://u@:3306/db", /* empty host */
            "mysql://u@h:0/db",   /* port 0 */
            "mysql://u@h:65536/db",
            "mysql://u@h:70000/db",
            "mysql://u@h:abc/db",
            "mysql://u@h:/db", /* empty port */
            "mysql://u@h:-1/db",
            "mysql://u@h:+80/db",
            "mysql://u:p%zz@h/db", /* bad escape */
            "mysql://u:p%4@h/db",  /* short escape */
            "mysql://u:p%@h/db",
            "mysql://u%g1:p@h/db",
            "mysql://u:p%00@h/db", /* NUL */
            "mysql://u@::1/db",    /* IPv6 without brackets */
            "mysql://u@::1:3306/db",
            "mysql://u@[::1/db", /* unclosed */
            "mysql://u@[]/db",
            "mysql://u@[]:3306/db",
            "mysql://u@[::1]:/db",
            "mysql://u@[::1]:0/db",
            "mysql://u@[::1]:65536/db",
            "mysql://u@[::1]x/db",
            "mysql://u@[::1]3306/db",
            "mysql://u@[h]:3306/db", /* a name in brackets */
            "mysql://u@[1.2.3.4]/db",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                kd_mysql_params_t p;
                char errstr[256] = "";
                memset(&p, 0x5a, sizeof(p));
                kdelay_err_t err =
                    kd_mysql_url_parse(bad[i], &p, errstr, sizeof(errstr));
                if (err != KDELAY_ERR_CONFIG)
                        fprintf(stderr, "\n\"%s\": got %s\n",
                                bad[i] ? bad[i] : "(null)",
                                kdelay_err_name(err));
                CU_ASSERT_EQUAL(err, KDELAY_ERR_CONFIG);
                CU_ASSERT_EQUAL(strncmp(errstr, "mysql.url:", 10), 0);
                /* Nothing is left for the caller to free. */
                CU_ASSERT_PTR_NULL(p.user);
                CU_ASSERT_PTR_NULL(p.password);
                CU_ASSERT_PTR_NULL(p.host);
                CU_ASSERT_PTR_NULL(p.db);
                if (err == KDELAY_OK)
                        kd_mysql_params_clear(&p);
        }
}

/* --- Kafka client properties files (--kafka-config)
 * ------------------------------------------------------------------ */

typedef struct kprops_seen {
        char text[1024]; /* "line:name=value;" each */
} kprops_seen_t;

static kdelay_err_t kprops_note(const char *name, const char *value, int line,
                                void *opaque, char *errstr, size_t errstr_size)
{
        kprops_seen_t *seen = opaque;
        size_t n = strlen(seen->text);
        (void)errstr;
        (void)errstr_size;
        snprintf(seen->text + n, sizeof(seen->text) - n, "%d:%s=%s;", line,
                 name, value);
        return KDELAY_OK;
}

/* kd_kprops_parse of text; its result, what it saw into seen. */
static kdelay_err_t kprops(const char *text, kprops_seen_t *seen, char *errstr,
                           size_t errstr_size)
{
        seen->text[0] = '\0';
        errstr[0] = '\0';
        return kd_kprops_parse(text, strlen(text), "my file.properties",
                               kprops_note, seen, errstr, errstr_size);
}

static void test_kprops_parse(void)
{
        kprops_seen_t seen;
        char errstr[512];
        CU_ASSERT_EQUAL(kprops("# a comment\n"
                               "! another\n"
                               "\n"
                               "   \t\n"
                               "  client.id = my client  \n"
                               "sasl.jaas.config=a=b c=\"d\"\n"
                               "bootstrap.servers: h1:9092,h2:9092\r\n"
                               "empty=\n"
                               "   # indented comment\n"
                               "ssl.key.password=p#ss!word",
                               &seen, errstr, sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(seen.text, "5:client.id=my client;"
                                          "6:sasl.jaas.config=a=b c=\"d\";"
                                          "7:bootstrap.servers=h1:9092,"
                                          "h2:9092;"
                                          "8:empty=;"
                                          "10:ssl.key.password=p#ss!word;");
        CU_ASSERT_EQUAL(kprops("", &seen, errstr, sizeof(errstr)), KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(seen.text, "");

        static const struct {
                const char *text, *want;
        } bad[] = {
            {"a=1\njunk line\n", "\"my file.properties\" line 2: expected "
                                 "NAME=VALUE"},
            {"\n\n=value\n", "\"my file.properties\" line 3: a property name "
                             "is missing before '='"},
            {" : v", "line 1: a property name is missing before ':'"},
            {"a b=c", "line 1: a property name holds whitespace"},
            {"a=1\nb=2 \\\n  3\n", "line 2: ends with a backslash"},
        };
        for (size_t i = 0; i < KD_ARRAY_LEN(bad); i++) {
                CU_ASSERT_EQUAL(
                    kprops(bad[i].text, &seen, errstr, sizeof(errstr)),
                    KDELAY_ERR_CONFIG);
                if (!strstr(errstr, bad[i].want))
                        printf("\n  %zu: got \"%s\"\n", i, errstr);
                CU_ASSERT_PTR_NOT_NULL(strstr(errstr, bad[i].want));
        }
        /* The line's text is not shown: it may be a password. */
        CU_ASSERT_EQUAL(
            kprops("sasl.password hunter2\n", &seen, errstr, sizeof(errstr)),
            KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NULL(strstr(errstr, "hunter2"));
        CU_ASSERT_EQUAL(kd_kprops_parse("a=1\0b=2", 7, "f", kprops_note, &seen,
                                        errstr, sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "NUL"));
}

static void test_kafka_config(void)
{
        char path[64], errstr[512], buf[256];
        CU_ASSERT_EQUAL_FATAL(write_temp("# kdelay test\n"
                                         "client.id = from-file\n"
                                         "linger.ms=42\n"
                                         "bootstrap.servers=file-host:9092\n",
                                         path, sizeof(path)),
                              0);
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_STRING_EQUAL(kd_conf_brokers(conf), "127.0.0.1:9092");
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "kafka_config", path, errstr, sizeof(errstr)),
            KDELAY_OK);
        GET_IS(conf, "kafka_config", path);
        CU_ASSERT_STRING_EQUAL(kd_conf_kafka_value(conf, "client.id"),
                               "from-file");
        /* The file's bootstrap.servers while brokers is not set. */
        CU_ASSERT_STRING_EQUAL(kd_conf_brokers(conf), "file-host:9092");
        /* -X wins over the file, set before or after it. */
        CU_ASSERT_EQUAL(kdelay_conf_set_pair(conf, "client.id=from-x", errstr,
                                             sizeof(errstr)),
                        KDELAY_OK);
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "kafka_config", path, errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(kd_conf_kafka_value(conf, "client.id"),
                               "from-x");
        rd_kafka_conf_t *rkc =
            kd_conf_rk_conf(conf, NULL, NULL, NULL, errstr, sizeof(errstr));
        CU_ASSERT_PTR_NOT_NULL_FATAL(rkc);
        size_t size = sizeof(buf);
        CU_ASSERT_EQUAL(rd_kafka_conf_get(rkc, "client.id", buf, &size),
                        RD_KAFKA_CONF_OK);
        CU_ASSERT_STRING_EQUAL(buf, "from-x");
        size = sizeof(buf);
        CU_ASSERT_EQUAL(rd_kafka_conf_get(rkc, "linger.ms", buf, &size),
                        RD_KAFKA_CONF_OK);
        CU_ASSERT_STRING_EQUAL(buf, "42");
        size = sizeof(buf);
        CU_ASSERT_EQUAL(rd_kafka_conf_get(rkc, "bootstrap.servers", buf, &size),
                        RD_KAFKA_CONF_OK);
        CU_ASSERT_STRING_EQUAL(buf, "file-host:9092");
        rd_kafka_conf_destroy(rkc);
        /* A copy keeps the file's properties. */
        kdelay_conf_t *copy = kdelay_conf_dup(conf);
        CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
        CU_ASSERT_STRING_EQUAL(kd_conf_kafka_value(copy, "linger.ms"), "42");
        CU_ASSERT_STRING_EQUAL(kd_conf_brokers(copy), "file-host:9092");
        kdelay_conf_destroy(copy);
        /* brokers, once set, wins over the file's bootstrap.servers. */
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "brokers", "b:1", errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(kd_conf_brokers(conf), "b:1");
        /* "" drops the file's properties. */
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "kafka_config", "", errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_PTR_NULL(kd_conf_kafka_value(conf, "linger.ms"));
        unlink(path);

        /* A bad value: the file and line named; a secret's not shown. */
        CU_ASSERT_EQUAL_FATAL(
            write_temp("client.id=x\n\nlinger.ms=soon\n", path, sizeof(path)),
            0);
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "kafka_config", path, errstr, sizeof(errstr)),
            KDELAY_ERR_CONFIG);
        char want[128];
        snprintf(want, sizeof(want), "kafka_config: \"%s\" line 3: ", path);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, want));
        unlink(path);
        CU_ASSERT_EQUAL_FATAL(
            write_temp("sasl.password=ok\nsasl.mechanisms=PLAIN\n"
                       "ssl.key.pem=not-a-key\nno.such.property=1\n",
                       path, sizeof(path)),
            0);
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "kafka_config", path, errstr, sizeof(errstr)),
            KDELAY_ERR_UNKNOWN_PROPERTY);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "line 4: unknown librdkafka "
                                              "property no.such.property"));
        unlink(path);
        /* An unreadable file: its path. */
        CU_ASSERT_EQUAL(kdelay_conf_set(conf, "kafka_config",
                                        "/nonexistent/client.properties",
                                        errstr, sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_STRING_EQUAL(errstr,
                               "kafka_config: "
                               "\"/nonexistent/client.properties\": No such "
                               "file or directory");
        /* A failed load keeps the properties read before. */
        CU_ASSERT_PTR_NULL(kd_conf_kafka_value(conf, "no.such.property"));
        kdelay_conf_destroy(conf);
}

/* The config file names the properties file; file: references in it. */
static void test_kafka_config_from_file(void)
{
        char props[64], secret[64], path[64], errstr[512], text[256];
        CU_ASSERT_EQUAL_FATAL(write_temp("topsecret\n", secret, sizeof(secret)),
                              0);
        chmod(secret, 0600);
        snprintf(text, sizeof(text), "sasl.password=file:%s\n", secret);
        CU_ASSERT_EQUAL_FATAL(write_temp(text, props, sizeof(props)), 0);
        snprintf(text, sizeof(text), "kafka_config = \"%s\";\n", props);
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
        CU_ASSERT_EQUAL(
            load_text(conf, text, path, sizeof(path), errstr, sizeof(errstr)),
            KDELAY_OK);
        CU_ASSERT_STRING_EQUAL(kd_conf_kafka_value(conf, "sasl.password"),
                               "topsecret");
        kdelay_conf_destroy(conf);
        unlink(props);
        unlink(secret);
}

/* kafka_config set to a file of text with mode `mode`: its result. */
static kdelay_err_t kfile_mode(kdelay_conf_t *conf, const char *text,
                               mode_t mode, char *path, size_t path_size,
                               char *errstr, size_t errstr_size)
{
        if (write_temp(text, path, path_size) != 0 || chmod(path, mode)) {
                CU_FAIL("cannot write a temporary file");
                return KDELAY_ERR_SYSTEM;
        }
        errstr[0] = '\0';
        return kdelay_conf_set(conf, "kafka_config", path, errstr, errstr_size);
}

static void test_secret_name(void)
{
        static const char *const yes[] = {
            "sasl.password",
            "ssl.key.password",
            "ssl.keystore.password",
            "sasl.oauthbearer.client.secret",
            "ssl.key.pem",
            "sasl.oauthbearer.assertion.private.key.passphrase",
            "sasl.oauthbearer.assertion.private.key.pem",
        };
        static const char *const no[] = {
            "client.id",
            "sasl.username",
            "ssl.key.location",
            "ssl.keystore.location",
            "ssl.ca.pem",
            "ssl.certificate.pem",
            "sasl.kerberos.keytab",
            "bootstrap.servers",
            "",
        };
        for (size_t i = 0; i < KD_ARRAY_LEN(yes); i++)
                CU_ASSERT_EQUAL(kd_secret_name(yes[i]), 1);
        for (size_t i = 0; i < KD_ARRAY_LEN(no); i++)
                CU_ASSERT_EQUAL(kd_secret_name(no[i]), 0);
        CU_ASSERT_EQUAL(kd_secret_mode_shared(0100600), 0);
        CU_ASSERT_EQUAL(kd_secret_mode_shared(0100400), 0);
        CU_ASSERT_EQUAL(kd_secret_mode_shared(0100700), 0);
        CU_ASSERT_EQUAL(kd_secret_mode_shared(0100640), 1);
        CU_ASSERT_EQUAL(kd_secret_mode_shared(0100644), 1);
        CU_ASSERT_EQUAL(kd_secret_mode_shared(0100602), 1);
        CU_ASSERT_EQUAL(kd_secret_mode_shared(0100610), 1);
}

/* A properties file that holds a secret by value is refused when group or
 * others may read or write it, as a file: reference to such a file is:
 * the file, its mode and the property named, never the value. */
static void test_kafka_config_mode(void)
{
        char path[64], secret[64], errstr[512], text[256], want[256];
        kdelay_conf_t *conf = kdelay_conf_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(conf);

        /* 0600 and 0400: read. */
        static const mode_t fine[] = {0600, 0400};
        for (size_t i = 0; i < KD_ARRAY_LEN(fine); i++) {
                CU_ASSERT_EQUAL(kfile_mode(conf,
                                           "sasl.mechanisms=PLAIN\n"
                                           "sasl.password=hunter2\n",
                                           fine[i], path, sizeof(path), errstr,
                                           sizeof(errstr)),
                                KDELAY_OK);
                CU_ASSERT_STRING_EQUAL(
                    kd_conf_kafka_value(conf, "sasl.password"), "hunter2");
                unlink(path);
        }
        CU_ASSERT_EQUAL(
            kdelay_conf_set(conf, "kafka_config", "", errstr, sizeof(errstr)),
            KDELAY_OK);

        /* Each kind of secret in a file group or others may read. */
        static const struct {
                const char *text, *name;
                int line;
                mode_t mode;
        } refused[] = {
            {"sasl.password=hunter2\n", "sasl.password", 1, 0644},
            {"# x\nssl.key.password = hunter2\n", "ssl.key.password", 2, 0640},
            {"ssl.keystore.password=hunter2\n", "ssl.keystore.password", 1,
             0604},
            {"sasl.oauthbearer.client.secret=hunter2\n",
             "sasl.oauthbearer.client.secret", 1, 0644},
            {"client.id=a\nssl.key.pem=hunter2\n", "ssl.key.pem", 2, 0660},
            {"sasl.password: hunter2\n", "sasl.password", 1, 0620},
        };
        for (size_t i = 0; i < KD_ARRAY_LEN(refused); i++) {
                CU_ASSERT_EQUAL(kfile_mode(conf, refused[i].text,
                                           refused[i].mode, path, sizeof(path),
                                           errstr, sizeof(errstr)),
                                KDELAY_ERR_CONFIG);
                snprintf(want, sizeof(want),
                         "kafka_config: \"%s\" line %d: %s holds a secret but "
                         "the file's mode is %04o: group and others may not "
                         "read or write it (chmod 600 or 400, or give %s as "
                         "file:PATH or env:NAME)",
                         path, refused[i].line, refused[i].name,
                         (unsigned)refused[i].mode, refused[i].name);
                if (strcmp(errstr, want))
                        printf("\n  %zu: got \"%s\"\n", i, errstr);
                CU_ASSERT_STRING_EQUAL(errstr, want);
                CU_ASSERT_PTR_NULL(strstr(errstr, "hunter2"));
                /* Nothing of it applied. */
                CU_ASSERT_PTR_NULL(kd_conf_kafka_value(conf, refused[i].name));
                unlink(path);
        }

        /* Fine in a 0644 file: no secret, an empty one, references. */
        CU_ASSERT_EQUAL_FATAL(write_temp("hunter2\n", secret, sizeof(secret)),
                              0);
        CU_ASSERT_EQUAL_FATAL(chmod(secret, 0600), 0);
        setenv("KD_TEST_KAFKA_PASSWORD", "from-env", 1);
        snprintf(text, sizeof(text),
                 "client.id=plain\n"
                 "ssl.key.location=/etc/kdelay/forwarder.key\n"
                 "sasl.username=forwarder\n"
                 "ssl.keystore.password=\n"
                 "sasl.password=file:%s\n"
                 "ssl.key.password=env:KD_TEST_KAFKA_PASSWORD\n",
                 secret);
        CU_ASSERT_EQUAL(kfile_mode(conf, text, 0644, path, sizeof(path), errstr,
                                   sizeof(errstr)),
                        KDELAY_OK);
        if (*errstr)
                printf("\n  got \"%s\"\n", errstr);
        CU_ASSERT_STRING_EQUAL(kd_conf_kafka_value(conf, "client.id"), "plain");
        CU_ASSERT_STRING_EQUAL(kd_conf_kafka_value(conf, "sasl.password"),
                               "hunter2");
        CU_ASSERT_STRING_EQUAL(kd_conf_kafka_value(conf, "ssl.key.password"),
                               "from-env");
        unlink(path);
        unsetenv("KD_TEST_KAFKA_PASSWORD");

        /* The referenced file's own mode still counts: refused the same
         * way, in a 0600 properties file. */
        CU_ASSERT_EQUAL_FATAL(chmod(secret, 0644), 0);
        snprintf(text, sizeof(text), "sasl.password=file:%s\n", secret);
        CU_ASSERT_EQUAL(kfile_mode(conf, text, 0600, path, sizeof(path), errstr,
                                   sizeof(errstr)),
                        KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "mode is 0644"));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "sasl.password"));
        CU_ASSERT_PTR_NULL(strstr(errstr, "hunter2"));
        unlink(path);
        unlink(secret);

        /* Named by the config file: the same refusal. */
        CU_ASSERT_EQUAL_FATAL(
            write_temp("sasl.password=hunter2\n", secret, sizeof(secret)), 0);
        CU_ASSERT_EQUAL_FATAL(chmod(secret, 0644), 0);
        snprintf(text, sizeof(text), "kafka_config = \"%s\";\n", secret);
        CU_ASSERT_EQUAL(
            load_text(conf, text, path, sizeof(path), errstr, sizeof(errstr)),
            KDELAY_ERR_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "sasl.password holds a secret"));
        CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "0644"));
        CU_ASSERT_PTR_NULL(strstr(errstr, "hunter2"));
        unlink(secret);
        kdelay_conf_destroy(conf);
}

/* A fresh cluster's first idempotent PID: librdkafka warns "Coordinator
 * load in progress: retrying" and gets past it by itself; kdelay logs
 * that at info (kdelayctl shows it only with -v). Other lines keep their
 * level. On librdkafka's mock cluster, its InitProducerId answered twice
 * with that error: the record is delivered, the lines are info. */
/* Kafka's ApiKey of InitProducerId (librdkafka's RD_KAFKAP_InitProducerId
 * is not in its public headers). */
#define KD_API_INIT_PRODUCER_ID 22

typedef struct pid_log {
        int warned, info;
} pid_log_t;

static void pid_log_cb(kdelay_log_level_t level, const char *line, void *op)
{
        pid_log_t *p = op;
        if (!strstr(line, "Failed to acquire idempotence PID"))
                return;
        if (level <= KDELAY_LOG_WARNING)
                p->warned++;
        else if (level == KDELAY_LOG_INFO)
                p->info++;
}

static void pid_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op)
{
        (void)rk;
        (void)op;
        int *delivered = m->_private; /* the record's opaque */
        *delivered = m->err ? -1 : 1;
}

static void test_rk_startup_retry_is_info(void)
{
        static const char load[] =
            "[thrd:main]: Failed to acquire idempotence PID from broker "
            "127.0.0.1:9092/1: Broker: Coordinator load in progress: retrying";
        CU_ASSERT_EQUAL(kd_conf_rk_log_level(4, "GETPID", load),
                        KDELAY_LOG_INFO);
        CU_ASSERT_EQUAL(
            kd_conf_rk_log_level(4, "GETPID",
                                 "Failed to acquire idempotence PID from "
                                 "broker b: Broker: Coordinator not "
                                 "available: retrying"),
            KDELAY_LOG_INFO);
        /* Not that condition, or not a retry: the level stays. */
        CU_ASSERT_EQUAL(
            kd_conf_rk_log_level(4, "GETPID",
                                 "Failed to acquire idempotence PID from "
                                 "broker b: Broker: Cluster authorization "
                                 "failed: retrying"),
            4);
        CU_ASSERT_EQUAL(
            kd_conf_rk_log_level(4, "GETPID",
                                 "Failed to acquire idempotence PID from "
                                 "broker b: Broker: Coordinator load in "
                                 "progress"),
            4);
        CU_ASSERT_EQUAL(kd_conf_rk_log_level(4, "FAIL", load), 4);
        CU_ASSERT_EQUAL(kd_conf_rk_log_level(4, "GETPID", load + 13),
                        KDELAY_LOG_INFO); /* without the thread's name */
        CU_ASSERT_EQUAL(kd_conf_rk_log_level(3, "GETPID", load), 3);
        CU_ASSERT_EQUAL(kd_conf_rk_log_level(7, "GETPID", load), 7);

        char errstr[512];
        rd_kafka_conf_t *hc = rd_kafka_conf_new(); /* hosts the cluster */
        rd_kafka_conf_set(hc, "log_level", "0", errstr, sizeof(errstr));
        rd_kafka_t *host =
            rd_kafka_new(RD_KAFKA_PRODUCER, hc, errstr, sizeof(errstr));
        CU_ASSERT_PTR_NOT_NULL_FATAL(host);
        rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(host, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(mc);
        CU_ASSERT_EQUAL(rd_kafka_mock_topic_create(mc, "pidtopic", 1, 1), 0);
        rd_kafka_mock_push_request_errors(
            mc, KD_API_INIT_PRODUCER_ID, 2,
            RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
            RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS);
        kdelay_conf_t *conf = kdelay_conf_new();
        char brokers[300];
        snprintf(brokers, sizeof(brokers), "brokers=%s",
                 rd_kafka_mock_cluster_bootstraps(mc));
        CU_ASSERT_EQUAL(
            kdelay_conf_set_pair(conf, brokers, errstr, sizeof(errstr)), 0);
        pid_log_t p = {0};
        kdelay_conf_set_log_cb(conf, pid_log_cb, KDELAY_LOG_DEBUG, &p);
        kd_rk_owner_t owner = {conf};
        rd_kafka_conf_t *rkc = kd_conf_rk_conf(
            conf, &owner, NULL, kd_producer_forced, errstr, sizeof(errstr));
        CU_ASSERT_PTR_NOT_NULL_FATAL(rkc);
        int delivered = 0;
        rd_kafka_conf_set_opaque(rkc, &owner);
        rd_kafka_conf_set_dr_msg_cb(rkc, pid_dr_cb);
        rd_kafka_t *rk =
            rd_kafka_new(RD_KAFKA_PRODUCER, rkc, errstr, sizeof(errstr));
        CU_ASSERT_PTR_NOT_NULL_FATAL(rk);
        CU_ASSERT_EQUAL(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("pidtopic"),
                                          RD_KAFKA_V_VALUE("v", 1),
                                          RD_KAFKA_V_OPAQUE(&delivered),
                                          RD_KAFKA_V_END),
                        0);
        CU_ASSERT_EQUAL(rd_kafka_flush(rk, 30000), 0);
        printf("\n  PID retries on the mock cluster: delivered %d, "
               "warnings %d, info lines %d\n",
               delivered, p.warned, p.info);
        CU_ASSERT_EQUAL(delivered, 1);
        CU_ASSERT_EQUAL(p.warned, 0);
        CU_ASSERT(p.info >= 1);
        rd_kafka_destroy(rk);
        kdelay_conf_destroy(conf);
        rd_kafka_mock_cluster_destroy(mc);
        rd_kafka_destroy(host);
}

static const kd_test_case_t cases[] = {
    KD_TEST(test_defaults),
    KD_TEST(test_set_good),
    KD_TEST(test_set_unknown),
    KD_TEST(test_set_bad_values),
    KD_TEST(test_password_hidden),
    KD_TEST(test_get_long_value_whole_or_error),
    KD_TEST(test_set_kafka),
    KD_TEST(test_producer_forced),
    KD_TEST(test_reference),
    KD_TEST(test_set_pair),
    KD_TEST(test_dup),
    KD_TEST(test_log_level),
    KD_TEST(test_load_good_file),
    KD_TEST(test_load_partial_file_keeps_rest),
    KD_TEST(test_load_errors),
    KD_TEST(test_load_int64),
    KD_TEST(test_load_missing_file),
    KD_TEST(test_load_repo_conf),
    KD_TEST(test_mysql_url_full),
    KD_TEST(test_mysql_url_variants),
    KD_TEST(test_mysql_url_errors),
    KD_TEST(test_mysql_url_query),
    KD_TEST(test_secret_refs),
    KD_TEST(test_secret_not_regular),
    KD_TEST(test_allowed_targets),
    KD_TEST(test_typed_fields),
    KD_TEST(test_kprops_parse),
    KD_TEST(test_kafka_config),
    KD_TEST(test_kafka_config_from_file),
    KD_TEST(test_secret_name),
    KD_TEST(test_kafka_config_mode),
    KD_TEST(test_rk_startup_retry_is_info),
    KD_TEST_END,
};

int main(void)
{
        return kd_test_run("conf", cases, NULL, NULL);
}
