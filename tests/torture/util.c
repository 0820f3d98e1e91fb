/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers of the torture tool: random numbers, logging, waiting for
 * wall-clock times, the library configuration. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "kd_util.h"
#include "torture.h"

void tt_rng_seed(tt_rng_t *r, uint64_t seed, uint64_t stream)
{
        r->s =
            seed * 0x9E3779B97F4A7C15ULL + stream * 0xD1B54A32D192ED03ULL + 1;
        (void)tt_rng_next(r);
}

uint64_t tt_rng_next(tt_rng_t *r)
{
        uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
}

int64_t tt_rng_range(tt_rng_t *r, int64_t lo, int64_t hi)
{
        if (hi <= lo)
                return lo;
        return lo + (int64_t)(tt_rng_next(r) % (uint64_t)(hi - lo + 1));
}

void tt_log(const char *fmt, ...)
{
        char line[2048];
        int64_t now = kd_now_ms();
        time_t secs = (time_t)(now / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        int n = snprintf(line, sizeof(line),
                         "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03dZ "
                         "prog=kdelay-torture ",
                         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(now % 1000));
        va_list ap;
        va_start(ap, fmt);
        if (n > 0 && (size_t)n < sizeof(line))
                vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
        va_end(ap);
        /* One write per line: lines of several threads do not mix. */
        fprintf(stderr, "%s\n", line);
}

int tt_sleep_until(int64_t at_ms, const atomic_int *stop)
{
        for (;;) {
                if (stop && atomic_load(stop))
                        return -1;
                int64_t d = at_ms - kd_now_ms();
                if (d <= 0)
                        return 0;
                /* Slices of at most 200 ms so a stop request is seen. */
                if (d > 200)
                        d = 200;
                struct timespec ts = {(time_t)(d / 1000),
                                      (long)(d % 1000) * 1000000L};
                while (nanosleep(&ts, &ts) && errno == EINTR)
                        ;
        }
}

int tt_sleep_ms(int64_t ms, const atomic_int *stop)
{
        return tt_sleep_until(kd_now_ms() + ms, stop);
}

static void lib_log(kdelay_log_level_t level, const char *line, void *opaque)
{
        fprintf((FILE *)opaque, "level=%d %s\n", (int)level, line);
}

kdelay_conf_t *tt_conf_new(const tt_names_t *names, FILE *log_file)
{
        kdelay_conf_t *conf = kdelay_conf_new();
        if (!conf)
                return NULL;
        if (kdelay_conf_set(conf, "brokers", names->brokers, NULL, 0) ||
            kdelay_conf_set(conf, "mysql.url", names->mysql_url, NULL, 0) ||
            kdelay_conf_set(conf, "topic_prefix", names->prefix, NULL, 0)) {
                kdelay_conf_destroy(conf);
                return NULL;
        }
        if (log_file)
                kdelay_conf_set_log_cb(conf, lib_log, KDELAY_LOG_WARNING,
                                       log_file);
        return conf;
}

static void rk_log(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf)
{
        FILE *fp = rd_kafka_opaque(rk);
        if (fp)
                fprintf(fp, "level=%d client=%s fac=%s %s\n", level,
                        rd_kafka_name(rk), fac, buf);
}

void tt_rk_log_to(rd_kafka_conf_t *rkc, FILE *fp)
{
        rd_kafka_conf_set_opaque(rkc, fp);
        rd_kafka_conf_set_log_cb(rkc, rk_log);
}

int tt_policy_fire(const tt_opts_t *o)
{
        for (size_t i = 0; i < o->fwd_props_cnt; i++)
                if (!strcmp(o->fwd_props[i],
                            "forwarder.fate_outage_policy=fire"))
                        return 1;
        return 0;
}
